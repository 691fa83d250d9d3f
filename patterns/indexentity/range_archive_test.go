package indexentity

import (
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/tablepatterns/tablepatterns/patterns/internal/testbed"
	"github.com/tablepatterns/tablepatterns/repo"
)

// A range archive of 60 employees of Sales sharing three
// last names (20 ids on each value's index entity) takes every id out of the index in
// the transactions that delete the employees. The entities of one batch share an index
// entity, so their removals go in rounds (one per entity of a value), each asked against
// the index entity as the round before left it: no transaction fails on it, and the
// batch never restarts. The partition ends with no employee and no index entity, no
// lookup finds an archived employee, Verify finds no drift, and Ops is untouched. The
// range ends below the index's KeyRange: a range that selects index entities is refused
// before anything is written.
func TestArchiveRangeSamePartitionRemovesEntriesInTheDeleteTransactions(t *testing.T) {
	t.Parallel()
	const n = 60
	lasts := []string{"Jones", "Smith", "Brown"}
	b := setup(t, true)
	ix := b.samePartition(&SamePartitionOptions{Conflict: fast})
	for i := range n {
		for _, dept := range []string{"Sales", "Ops"} {
			if err := ix.Insert(b.Ctx, emp(dept, fmt.Sprintf("%06d", i+1), lasts[i%3])); err != nil {
				t.Fatal(err)
			}
		}
	}
	a, target := b.Archiver(ix)
	lo, _ := ix.KeyRange()

	mark := b.tableProxy().CountMatching(testbed.IsWrite)
	if _, err := a.ArchiveRange(b.Ctx, b.RangeJob(target, "Sales", "", "")); !errors.Is(err, repo.ErrInvalidInput) {
		t.Fatalf("a range over the index entities: %v, want invalid input", err)
	}
	if w := b.tableProxy().CountMatching(testbed.IsWrite) - mark; w != 0 {
		t.Fatalf("the refused range sent %d writes", w)
	}

	mark = b.tableProxy().CountMatching(testbed.IsBatch)
	b.MustArchiveRange(a, b.RangeJob(target, "Sales", "", lo), n)
	// One copy transaction, then a delete transaction per round: n/3 rounds.
	if got := b.tableProxy().CountMatching(testbed.IsBatch) - mark; got != 1+n/3 {
		t.Fatalf("the range sent %d transactions, want %d (no failed one)", got, 1+n/3)
	}
	for _, last := range lasts {
		ids, err := ix.IDs(b.Ctx, "Sales", last)
		if err != nil || len(ids) != 0 {
			t.Fatalf("%s lists %v (%v) after the archive", last, ids, err)
		}
		if got, err := collect(ix.Find(b.Ctx, "Sales", last, nil)); err != nil || len(got) != 0 {
			t.Fatalf("lookup of %s: %d employees (%v)", last, len(got), err)
		}
	}
	if pages := b.indexPages(ix, "Sales"); len(pages) != 0 {
		t.Fatalf("%d index entities left in Sales", len(pages))
	}
	b.clean(ix, "Sales", 0)
	b.checkIndex(ix, "Ops")
	b.clean(ix, "Ops", n)
}

// Two deliveries of one range job at once over a SamePartition index whose values the
// employees share: both runs compute removals against the same index entities, so each
// commit of one makes the other's next transaction fail If-Match and restart from fresh
// reads. Both succeed, every employee is moved once (the two reports add up to all of
// them), and the index ends empty with no drift.
func TestArchiveRangeSamePartitionTwoDeliveriesAtOnce(t *testing.T) {
	t.Parallel()
	const n = 30
	b := setup(t, false)
	ix := b.samePartition(&SamePartitionOptions{Conflict: fast})
	for i := range n {
		if err := ix.Insert(b.Ctx, emp("Sales", fmt.Sprintf("%06d", i+1), []string{"Jones", "Smith"}[i%2])); err != nil {
			t.Fatal(err)
		}
	}
	a, target := b.Archiver(ix)
	lo, _ := ix.KeyRange()
	job := b.RangeJob(target, "Sales", "", lo)
	var wg sync.WaitGroup
	moved := make([]int, 2)
	for i := range moved {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rep, err := a.ArchiveRange(b.Ctx, job)
			if err != nil {
				t.Errorf("delivery %d: %v", i, err)
			}
			moved[i] = rep.Moved
		}()
	}
	wg.Wait()
	if moved[0]+moved[1] != n {
		t.Fatalf("the deliveries moved %v, want %d in all", moved, n)
	}
	b.MustHaveArchivedRange(job, n)
	if pages := b.indexPages(ix, "Sales"); len(pages) != 0 {
		t.Fatalf("%d index entities left in Sales", len(pages))
	}
	b.clean(ix, "Sales", 0)
}
