package consistency

import (
	"sync"
	"testing"
)

// Reordered and duplicated deliveries: a continuation (After in the middle of the range)
// runs before its parent, and two copies of another continuation run at once with the
// parent. Every entity ends archived once, none outside the range.
func TestAttackRangeContinuationOvertakesParent(t *testing.T) {
	t.Parallel()
	b := setup(t, "")
	want := b.loadRange(t, []string{"b1", "b2"}, 1200)
	keep := map[RangeKey]bool{}
	for k := range b.loadRange(t, []string{"c0"}, 10) {
		keep[k] = true
	}
	parent := ArchiveRangeJob{Source: b.current.Name(), PartitionKeyFrom: "b", PartitionKeyTo: "c", TargetTable: b.archive.Name()}
	cont := parent
	cont.After = &RangeKey{PartitionKey: "b1", RowKey: "000999"}
	if _, err := b.a.ArchiveRange(b.ctx, cont); err != nil {
		t.Fatal(err)
	}
	cont2 := parent
	cont2.After = &RangeKey{PartitionKey: "b1", RowKey: "000199"}
	var wg sync.WaitGroup
	errs := make([]error, 3)
	for i, j := range []ArchiveRangeJob{parent, cont2, cont2} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = b.a.ArchiveRange(b.ctx, j)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	b.assertRangeArchived(t, want, keep)
}
