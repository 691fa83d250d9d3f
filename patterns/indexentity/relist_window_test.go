package indexentity

import (
	"testing"

	"github.com/tablepatterns/tablepatterns/internal/faultproxy"
	"github.com/tablepatterns/tablepatterns/patterns/internal/testbed"
	"github.com/tablepatterns/tablepatterns/repo"
)

// The narrowest window of Repair's removal of a gone entity's entry: the pages and the
// entity (404) are read, and the removal transaction is held at the proxy while a live
// Insert re-creates the entity (its id still listed: the Insert guards the page).
// Released, the removal must fail its page condition and the retry, reading again,
// must find the entity and leave it listed.
func TestSamePartitionRepairRemovalHeldWhileEntityReturns(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	direct := must(repo.New[Employee](b.Direct.Tables, b.Table, &repo.Options{Retry: fast}))
	live := must(NewSamePartition(direct, "LastName", lastName, nil))
	for _, id := range []string{"000001", "000002"} {
		if err := live.Insert(b.Ctx, emp("Sales", id, "Jones")); err != nil {
			t.Fatal(err)
		}
	}
	if err := direct.Delete(b.Ctx, "Sales", "000002", nil); err != nil { // around the index
		t.Fatal(err)
	}
	ix := b.samePartition(nil) // through the proxy
	ps := b.tableProxy().PauseAt("relist removal", faultproxy.IsBatch, 1)
	type result struct {
		r   *Report
		err error
	}
	done := make(chan result, 1)
	go func() {
		r, err := ix.Repair(b.Ctx, "Sales", nil)
		done <- result{r, err}
	}()
	testbed.WaitHeld(t, ps)
	if err := live.Insert(b.Ctx, emp("Sales", "000002", "Jones")); err != nil {
		t.Fatal(err)
	}
	ps.Release()
	res := <-done
	if res.err != nil {
		t.Fatal(res.err)
	}
	if res.r.Orphan != 1 {
		t.Fatalf("repair report %+v: want the orphan it was asked to fix", res.r)
	}
	if ids := must(ix.IDs(b.Ctx, "Sales", "Jones")); len(ids) != 2 {
		t.Fatalf("Jones lists %v after the repair: the re-inserted entity 000002 was unlisted", ids)
	}
	if r := must(ix.Verify(b.Ctx, "Sales", nil)); r.Drift() != 0 {
		t.Fatalf("drift after the repair: %+v", r)
	}
}
