package consistency

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/repo/filter"
)

// A range condition that can match nothing never passes for a range with nothing to
// move: a misspelled property (Createdd) and an Edm.Int32 condition on an Int64
// property each end with a warning that names the condition and what was seen (the
// property never occurs; it is stored as Edm.Int64), in RangeReport.Warnings and in the
// log, and every delivery reports what it selected, moved and skipped (RangeDone and an
// Info line). The correct job moves its entities without a warning.
func TestRangeWarnsOfConditionsThatCanMatchNothing(t *testing.T) {
	t.Parallel()
	b := setup(t, "")
	created := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
	var items []*codec.Entity
	for i := range 4 {
		items = append(items, &codec.Entity{PartitionKey: "Sales", RowKey: fmt.Sprintf("%03d", i),
			Properties: map[string]any{"Created": created, "TotalCents": int64(100 * i)}})
	}
	if err := b.current.BulkWrite(b.ctx, items, nil); err != nil {
		t.Fatal(err)
	}
	core, logs := observer.New(zap.InfoLevel)
	var mu sync.Mutex
	reports := map[string]RangeReport{}
	q, queue := rangeClient(t, b)
	a := rangeArchiver(t, b, q, &Options{Logger: zap.New(core), RangeDone: func(job ArchiveRangeJob, rep RangeReport, err error) {
		mu.Lock()
		defer mu.Unlock()
		reports[job.Where[0].Property+" "+job.Where[0].Type] = rep
	}})
	w, c := newWorker(t, b, queue, a)
	for _, cond := range []filter.Condition{
		{Property: "Createdd", Op: "lt", Type: "Edm.DateTime", Value: "2021-01-01T00:00:00Z"},
		{Property: "TotalCents", Op: "lt", Type: "Edm.Int32", Value: "500"},
	} {
		job := ArchiveRangeJob{Source: b.current.Name(), PartitionKey: "Sales", TargetTable: b.archive.Name(), Where: []filter.Condition{cond}}
		if err := EnqueueArchiveRange(b.ctx, c, job); err != nil {
			t.Fatal(err)
		}
	}
	drain(t, w)
	mu.Lock()
	defer mu.Unlock()
	for key, want := range map[string]string{"Createdd Edm.DateTime": "never occurs", "TotalCents Edm.Int32": "stored as [Edm.Int64 in 4]"} {
		rep, ok := reports[key]
		if !ok {
			t.Fatalf("no report of the job on %s", key)
		}
		if rep.Moved != 0 || rep.Scanned != 0 || len(rep.Warnings) != 1 || !strings.Contains(rep.Warnings[0], want) {
			t.Fatalf("%s: %+v; want nothing moved and one warning %q", key, rep, want)
		}
		if logs.FilterMessage("archive range: a condition can match nothing").FilterField(zap.String("condition", rep.Warnings[0])).Len() != 1 {
			t.Fatalf("%s: the warning is not logged", key)
		}
	}
	if n := logs.FilterMessage("archive range: page done").FilterField(zap.Int("selected", 0)).FilterField(zap.Int("moved", 0)).Len(); n != 2 {
		t.Fatalf("%d deliveries logged selected 0, moved 0; want 2", n)
	}
	rep, err := a.ArchiveRange(b.ctx, ArchiveRangeJob{Source: b.current.Name(), PartitionKey: "Sales", TargetTable: b.archive.Name(),
		Where: []filter.Condition{{Property: "TotalCents", Op: "lt", Type: "Edm.Int64", Value: "500"}}})
	if err != nil || rep.Moved != 4 || len(rep.Warnings) != 0 {
		t.Fatalf("the correct job: %+v %v", rep, err)
	}
}
