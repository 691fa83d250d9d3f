package consistency

import (
	"fmt"
	"sync"
	"testing"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/repo"
)

// Two deliveries of one range job at once, with companions and a hot entity written
// after every copy: every other entity ends in the target and leaves the source with its
// companion copy, each counted once across the two reports; the hot entity stays in the
// source at its last version with its companion copy.
func TestRangeTwoRunsAtOnceAroundAHotEntityMoveEachOtherEntityOnce(t *testing.T) {
	t.Parallel()
	b := setup(t, "")
	sib := &sibling{tbl: b.current}
	a, err := New(b.clients, &Options{Retry: fastRetry(), Companions: map[string][]Companion{b.current.Name(): {sib}}})
	if err != nil {
		t.Fatal(err)
	}
	const n = 30
	var items []*codec.Entity
	for i := range n {
		e := rangeEntity("Sales", i, 1)
		items = append(items, e, &codec.Entity{PartitionKey: "Sales", RowKey: "copy-" + e.RowKey, Properties: map[string]any{"Of": e.RowKey}})
	}
	if err := b.current.BulkWrite(b.ctx, items, nil); err != nil {
		t.Fatal(err)
	}
	hot := rangeEntity("Sales", 11, 1)
	var mu sync.Mutex
	a.seams.step = func(job, step string) error {
		if job != KindArchiveRange || step != "copied" {
			return nil
		}
		mu.Lock()
		defer mu.Unlock()
		hot.Properties["Version"] = hot.Properties["Version"].(int32) + 1
		return b.current.Upsert(b.ctx, hot, &repo.UpsertOptions{Mode: repo.Replace})
	}
	job := ArchiveRangeJob{Source: b.current.Name(), PartitionKey: "Sales", RowKeyFrom: "0", RowKeyTo: "1", TargetTable: b.archive.Name()}
	var wg sync.WaitGroup
	reps := make([]RangeReport, 2)
	errs := make([]error, 2)
	for i := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			reps[i], errs[i] = a.ArchiveRange(b.ctx, job)
		}()
	}
	wg.Wait()
	for i := range 2 {
		if errs[i] != nil {
			t.Fatalf("run %d: %+v %v", i, reps[i], errs[i])
		}
	}
	left, err := b.current.Collect(b.ctx, repo.Query{})
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, e := range left {
		keys = append(keys, e.RowKey)
	}
	if want := fmt.Sprint([]string{hot.RowKey, "copy-" + hot.RowKey}); fmt.Sprint(keys) != want {
		t.Fatalf("left in the source %v, want %s", keys, want)
	}
	if got := reps[0].Moved + reps[1].Moved; got != n-1 {
		t.Fatalf("the runs report %d + %d moved, want %d in all", reps[0].Moved, reps[1].Moved, n-1)
	}
	got, err := b.archive.Collect(b.ctx, repo.Query{Select: []string{"PartitionKey", "RowKey"}})
	if err != nil || len(got) != n {
		t.Fatalf("the target holds %d: %v, want %d (the hot entity's copy beside it)", len(got), err, n)
	}
}
