package tablearchive

import (
	"testing"

	"go.opentelemetry.io/otel"

	"github.com/tablepatterns/tablepatterns/internal/telemetry"
	"github.com/tablepatterns/tablepatterns/internal/telemetry/telemetrytest"
	"github.com/tablepatterns/tablepatterns/internal/testenv"
)

// An archive-table job enqueued inside the caller's span: enqueue under the caller,
// process under enqueue, consistency.archive_table under process with the table, the
// container, the outcome and the number of entities.
func TestArchiveJobSpans(t *testing.T) {
	t.Parallel()
	telemetrytest.Install()
	b := setup(t, "")
	signIns(t, b, b.current, 40)
	container := testenv.ContainerName(t)
	w, c := newWorker(t, b, testenv.QueueName(t), b.a)

	ctx, root := otel.Tracer("test").Start(b.ctx, "test.operator")
	if err := EnqueueArchiveTable(ctx, c, ArchiveTableJob{Table: b.current.Name(), Container: container, Sealed: true}); err != nil {
		t.Fatal(err)
	}
	root.End()
	drain(t, w)
	jobs := telemetrytest.Find("consistency.archive_table", telemetry.KeyTable.String(b.current.Name()))
	if len(jobs) != 1 {
		t.Fatalf("%d archive_table spans, want 1", len(jobs))
	}
	job := jobs[0]
	if !telemetrytest.HasAll(job.Attributes, telemetry.KeyContainer.String(container),
		telemetry.KeyOutcome.String(string(OutcomeMoved)), telemetry.KeyCount.Int64(40)) {
		t.Errorf("archive_table attributes %v", job.Attributes)
	}
	process, ok := telemetrytest.ByID(job.Parent)
	if !ok || process.Name != "queueworker.process" {
		t.Fatalf("archive_table's parent is %q (found %v), want queueworker.process", process.Name, ok)
	}
	enqueue, ok := telemetrytest.ByID(process.Parent)
	if !ok || enqueue.Name != "queueworker.enqueue" || enqueue.Parent.SpanID() != root.SpanContext().SpanID() {
		t.Fatalf("process's parent is %q (found %v), want the enqueue span under the operator's span", enqueue.Name, ok)
	}
}
