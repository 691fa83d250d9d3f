package indexentity

import (
	"errors"
	"fmt"
	"testing"

	"github.com/tablepatterns/tablepatterns/patterns/internal/testbed"
	"github.com/tablepatterns/tablepatterns/repo"
)

// Issue 14 ("Done when"), batched: a range archive of 60 employees of Sales sharing three
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
		if got, err := ix.Lookup(b.Ctx, "Sales", last); err != nil || len(got) != 0 {
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
