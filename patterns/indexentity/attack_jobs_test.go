package indexentity

import (
	"testing"

	"github.com/tablepatterns/tablepatterns/internal/faultproxy"
	"github.com/tablepatterns/tablepatterns/patterns/internal/testbed"
	"github.com/tablepatterns/tablepatterns/repo"
)

// Attack on SamePartition.Repair (and so on its repair job): "Repair is idempotent and
// every write conditional on what it read, so duplicated and concurrent jobs are
// harmless". An orphan entry (its entity deleted around the index) is repaired by
// relist, which reads the entity (gone) and then the value's pages. The page read is held
// at the proxy; meanwhile a live Insert re-creates the entity under the orphan's value
// (it finds its id listed and guards the page). Released, the page read sees the guarded
// page, and the removal, conditional only on that page's ETag, unlists a live entity:
// nothing in the transaction says "the entity is still gone".
func TestAttackSamePartitionRepairGoneEntityReadBeforePages(t *testing.T) {
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
	// Verify's two queries (entities, index pages), then relist's Get of 000002 (404),
	// then relist's read of Jones' pages: the third query.
	ps := b.tableProxy().PauseAt("relist page read", faultproxy.IsListEntities, 3)
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
	t.Logf("repair: %+v %v", res.r, res.err)
	if res.err != nil {
		t.Fatal(res.err)
	}
	if ids := must(ix.IDs(b.Ctx, "Sales", "Jones")); len(ids) != 2 {
		t.Fatalf("Jones lists %v after the repair: the live entity 000002 was unlisted", ids)
	}
}
