package consistency

import (
	"testing"

	"github.com/tablepatterns/tablepatterns/internal/telemetry"
	"github.com/tablepatterns/tablepatterns/internal/telemetry/telemetrytest"
)

// A range job run by the worker records one consistency.archive_range span per delivery,
// under the worker's queueworker.process span, with the tables and the number of
// entities the delivery moved (tablepatterns.count), as telemetry.go lists it.
func TestArchiveRangeSpan(t *testing.T) {
	t.Parallel()
	telemetrytest.Install()
	b := setup(t, "")
	b.loadRange(t, []string{"Sales"}, 40)
	q, queue := rangeClient(t, b)
	a := rangeArchiver(t, b, q, nil)
	w := rangeWorker(t, b, queue, a)
	if err := EnqueueArchiveRange(b.ctx, q, ArchiveRangeJob{Source: b.current.Name(), PartitionKey: "Sales", TargetTable: b.archive.Name()}); err != nil {
		t.Fatal(err)
	}
	drain(t, w)
	spans := telemetrytest.Find("consistency.archive_range", telemetry.KeyTable.String(b.current.Name()))
	if len(spans) != 1 {
		t.Fatalf("%d archive_range spans, want 1 (one page, one delivery)", len(spans))
	}
	if !telemetrytest.HasAll(spans[0].Attributes, telemetry.KeyTargetTable.String(b.archive.Name()), telemetry.KeyCount.Int(40)) {
		t.Errorf("archive_range attributes %v", spans[0].Attributes)
	}
	if p, ok := telemetrytest.ByID(spans[0].Parent); !ok || p.Name != "queueworker.process" {
		t.Fatalf("archive_range's parent is %q (found %v), want queueworker.process", p.Name, ok)
	}
}
