package indexentity

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/tablepatterns/tablepatterns/queueworker"
	"github.com/tablepatterns/tablepatterns/repo"
)

// Issue 13 item 7: an index that normalizes (here: lower-cases last names) applies the
// hook on every write and on every read, so asking with another case finds the entity.
func TestSamePartitionNormalizeAppliesOnWriteAndLookup(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	ix := b.samePartition(&SamePartitionOptions{Normalize: strings.ToLower})
	if err := ix.Insert(b.Ctx, emp("Sales", "000001", "Jones")); err != nil {
		t.Fatal(err)
	}
	if err := ix.Insert(b.Ctx, emp("Sales", "000002", "JONES")); err != nil {
		t.Fatal(err)
	}
	for _, asked := range []string{"Jones", "jones", "jOnEs"} {
		ids, err := ix.IDs(b.Ctx, "Sales", asked)
		if err != nil || strings.Join(ids, ",") != "000001,000002" {
			t.Errorf("IDs(%q) = %v, %v", asked, ids, err)
		}
		got, err := ix.Lookup(b.Ctx, "Sales", asked)
		if err != nil || len(got) != 2 {
			t.Errorf("Lookup(%q) = %d entities, %v; the check against the value must compare normalized values", asked, len(got), err)
		}
	}
	// One index entity for the value, under its normalized form.
	pages := b.indexPages(ix, "Sales")
	if len(pages) != 1 || !strings.Contains(pages[0].RowKey, "jones") {
		t.Fatalf("index entities %v, want one for \"jones\"", pages)
	}
}

func TestEventualNormalizeAppliesOnWriteAndLookup(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	q := b.queue()
	ix, err := NewEventual(b.emps, "LastName", lastName, b.tableStore(0), q, &EventualOptions{Settle: 2 * time.Second, Normalize: strings.ToLower})
	if err != nil {
		t.Fatal(err)
	}
	if err := ix.Insert(b.Ctx, emp("Sales", "000001", "Jones")); err != nil {
		t.Fatal(err)
	}
	b.drain(q, ix.Register)
	b.checkKeys(ix.Store(), "jones", k("Sales", "000001"))
	for _, asked := range []string{"Jones", "JONES"} {
		got, err := ix.Lookup(b.Ctx, asked)
		if err != nil || len(got) != 1 || got[0].EmployeeID != "000001" {
			t.Errorf("Lookup(%q) = %+v, %v", asked, got, err)
		}
	}
}

// Messages of the kinds of earlier releases ("indexentity.change.<name>",
// "indexentity/<name>") are still handled; the kind names the table.
func TestEventualRegisterAcceptsTheLegacyKind(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	q := b.queue()
	ix := b.eventual(b.tableStore(0), q)
	if want := "indexentity.change." + b.Table + ".LastName"; ix.Kind() != want {
		t.Fatalf("kind %q, want %q", ix.Kind(), want)
	}
	for i, kind := range []string{"indexentity/LastName", "indexentity.change.LastName"} {
		id := fmt.Sprintf("%06d", i+1)
		if err := ix.Table().Insert(b.Ctx, emp("Sales", id, "Jones")); err != nil {
			t.Fatal(err)
		}
		if _, err := queueworker.Enqueue(b.Ctx, q, kind, "", Change{PartitionKey: "Sales", RowKey: id, Value: "Jones"}, nil); err != nil {
			t.Fatal(err)
		}
	}
	w := b.drain(q, ix.Register)
	if st := w.Stats(); st.Processed != 2 || st.Poisoned != 0 {
		t.Fatalf("stats %+v, want both legacy messages processed", st)
	}
	b.checkKeys(ix.Store(), "Jones", k("Sales", "000001"), k("Sales", "000002"))
}

// Two option-3 indexes named alike on two tables join one registry: their own kinds
// differ (they name the table), and the legacy kinds, which do not, go to the first.
func TestEventualKindsNameTheTable(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	q := b.queue()
	a := b.eventual(b.tableStore(0), q)
	other := must(repo.New[Employee](b.Clients.Tables, b.NewTableName(), &repo.Options{Retry: fast}))
	c := must(NewEventual(other, "LastName", lastName, b.tableStore(0), q, nil))
	for _, k := range [][2]string{{a.Kind(), c.Kind()}, {a.BackfillKind(), c.BackfillKind()}, {a.VerifyKind(), c.VerifyKind()}, {a.RepairKind(), c.RepairKind()}} {
		if k[0] == k[1] {
			t.Fatalf("indexes on two tables share the kind %q", k[0])
		}
	}
	reg := queueworker.NewRegistry()
	if err := a.Register(reg); err != nil {
		t.Fatal(err)
	}
	if err := c.Register(reg); err != nil {
		t.Fatalf("the second table's index cannot join the registry: %v", err)
	}
	if err := a.Register(reg); err == nil {
		t.Fatal("registering one index twice succeeded")
	}
}
