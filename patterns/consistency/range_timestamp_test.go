package consistency

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/tablepatterns/tablepatterns/internal/errs"
	"github.com/tablepatterns/tablepatterns/internal/testenv"
	"github.com/tablepatterns/tablepatterns/repo"
	"github.com/tablepatterns/tablepatterns/repo/filter"
)

// An archive-range job refuses a Timestamp condition of any type but Edm.DateTime, naming
// the condition (the comparison itself: package repo/filter). No server.
func TestRangeTimestampConditionCompilesAsDateTime(t *testing.T) {
	t.Parallel()
	for _, typ := range []string{"", "Edm.String", "Edm.Int64", "Edm.Int32"} {
		job := ArchiveRangeJob{Source: "Current", PartitionKey: "P", TargetTable: "Archive",
			Where: []filter.Condition{{Property: filter.TimestampProperty, Op: "lt", Type: typ, Value: "2020-01-01T00:00:00Z"}}}
		err := job.Validate()
		if !errors.Is(err, errs.ErrInvalidInput) || !strings.Contains(err.Error(), "where[0].type") {
			t.Errorf("a Timestamp condition of type %q: %v, want ErrInvalidInput on where[0].type", typ, err)
		}
	}
}

// "Archive what was not written since T", through the worker: the entities written at
// or before T move, those written after stay. The second group is rewritten until the
// service's Timestamp passes T (a poll with a deadline, not a sleep). A Timestamp
// condition of another type is refused before any request.
func TestRangeTimestampConditionThroughWorker(t *testing.T) {
	t.Parallel()
	ps := testenv.Proxies(t)
	b := setup(t, ps.ConnectionString)
	want := b.loadRange(t, []string{"Sales"}, 4)
	old, err := b.current.Collect(b.ctx, repo.Query{})
	if err != nil {
		t.Fatal(err)
	}
	var cut time.Time
	for _, e := range old {
		if e.Timestamp.After(cut) {
			cut = e.Timestamp
		}
	}
	keep := map[RangeKey]bool{}
	deadline := time.Now().Add(30 * time.Second)
	for n := 100; n < 103; n++ {
		e := rangeEntity("Sales", n, 1)
		for {
			if err := b.current.Upsert(b.ctx, e, nil); err != nil {
				t.Fatal(err)
			}
			got, err := b.current.Get(b.ctx, e.PartitionKey, e.RowKey)
			if err != nil {
				t.Fatal(err)
			}
			if got.Timestamp.After(cut) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the service's Timestamp did not pass %v", cut)
			}
		}
		keep[RangeKey{e.PartitionKey, e.RowKey}] = true
	}
	job := ArchiveRangeJob{Source: b.current.Name(), PartitionKey: "Sales", TargetTable: b.archive.Name(),
		Where: []filter.Condition{{Property: "Timestamp", Op: "le", Type: "Edm.DateTime", Value: cut.Format(time.RFC3339Nano)}}}
	q, queue := rangeClient(t, b)
	w := rangeWorker(t, b, queue, rangeArchiver(t, b, q, nil))
	bad := job
	bad.Where = []filter.Condition{{Property: "Timestamp", Op: "le", Type: "Edm.String", Value: cut.Format(time.RFC3339Nano)}}
	mark := ps.Table.Count() + ps.Queue.Count()
	if err := EnqueueArchiveRange(b.ctx, q, bad); !errors.Is(err, errs.ErrInvalidInput) {
		t.Fatalf("a Timestamp condition of Edm.String: %v", err)
	}
	if n := ps.Table.Count() + ps.Queue.Count() - mark; n != 0 {
		t.Fatalf("%d requests sent for an invalid Timestamp condition", n)
	}
	if err := EnqueueArchiveRange(b.ctx, q, job); err != nil {
		t.Fatal(err)
	}
	drain(t, w)
	if s := w.Stats(); s.Failed != 0 {
		t.Fatalf("worker: %+v", s)
	}
	b.assertRangeArchived(t, want, keep)
}
