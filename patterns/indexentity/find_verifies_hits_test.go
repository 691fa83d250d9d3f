package indexentity

import (
	"fmt"
	"strings"
	"testing"

	"github.com/tablepatterns/tablepatterns/codec/keys"
	"github.com/tablepatterns/tablepatterns/internal/faultproxy"
	"github.com/tablepatterns/tablepatterns/patterns/internal/testbed"
)

// Attacks SamePartition.Find's "every entity returned has the value; so is an entry that
// names no possible entity (... a forged entry cannot make the lookup fail)" with entries
// that are valid keys: the RowKey of the index entity itself (inside the index's own key
// space, where no entity of T lives), another employee's id (whose last name is not the
// value) and the real id twice. Find yields the real entity once.
func TestSamePartitionFindReturnsOnlyEntitiesWithTheValue(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	ix := b.samePartition(nil)
	for _, e := range []*Employee{emp("Sales", "000301", "Jones"), emp("Sales", "000302", "Smith")} {
		if err := ix.Insert(b.Ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	pages := b.indexPages(ix, "Sales")
	var p = pages[0]
	for _, q := range pages {
		if strings.Contains(q.RowKey, "Jones") {
			p = q
		}
	}
	own := keys.Join(tagIndex, ix.name, "Jones", pageNumber(0))
	p.Properties["IDs"] = strings.Join([]string{p.RowKey, own, "000302", "000301", "000301"}, entrySep)
	if err := ix.pages.tbl.Upsert(b.Ctx, &p, nil); err != nil {
		t.Fatal(err)
	}
	got, err := collect(ix.Find(b.Ctx, "Sales", "Jones", nil))
	if err != nil || len(got) != 1 || got[0].EmployeeID != "000301" || got[0].LastName != "Jones" {
		t.Fatalf("Find with forged entries = %+v, %v; want employee 000301 once", got, err)
	}
}

// Attacks SamePartition.Find's "An entity deleted or renamed between the two steps is left
// out, so every entity returned has the value" at the exact window: Find is held at the
// point query of an entity its index entity listed, the entity is renamed meanwhile, and
// the read then returns the new version, which must be left out. An early break after the
// first entity reads no further batch (checked by the race detector for the fan-out's
// goroutines, and by the requests sent).
func TestSamePartitionFindLeavesOutAnEntityRenamedAfterTheIndexRead(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	ix := b.samePartition(nil)
	for i := 1; i <= 3; i++ {
		if err := ix.Insert(b.Ctx, emp("Sales", fmt.Sprintf("00040%d", i), "Jones")); err != nil {
			t.Fatal(err)
		}
	}
	ps := b.tableProxy().PauseAt("entity read", faultproxy.All(faultproxy.IsGetEntity, faultproxy.PathContains("RowKey='000402'")), 1)
	t.Cleanup(ps.Release)
	type result struct {
		got []Employee
		err error
	}
	done := make(chan result, 1)
	go func() {
		got, err := collect(ix.Find(b.Ctx, "Sales", "Jones", &FindOptions{Concurrency: 1}))
		done <- result{got, err}
	}()
	testbed.WaitHeld(t, ps)
	renamed := emp("Sales", "000402", "Smith")
	if err := ix.Update(b.Ctx, renamed); err != nil {
		t.Fatal(err)
	}
	ps.Release()
	r := <-done
	if r.err != nil {
		t.Fatal(r.err)
	}
	for _, e := range r.got {
		if e.LastName != "Jones" {
			t.Fatalf("Find(Jones) returned %s named %q", e.EmployeeID, e.LastName)
		}
	}
	if len(r.got) != 2 {
		t.Fatalf("Find(Jones) = %+v, want 000401 and 000403", r.got)
	}

	// An early break.
	mark := b.tableProxy().Count()
	for e, err := range ix.Find(b.Ctx, "Sales", "Jones", nil) {
		if err != nil || e.LastName != "Jones" {
			t.Fatalf("%+v %v", e, err)
		}
		break
	}
	if n := b.tableProxy().Count() - mark; n > 1+2 {
		t.Fatalf("an early break sent %d requests, want the index query and at most the 2 point queries of its batch", n)
	}
}
