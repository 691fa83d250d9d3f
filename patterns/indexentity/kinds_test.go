package indexentity

import (
	"context"
	"fmt"
	"testing"

	"github.com/tablepatterns/tablepatterns/queueworker"
	"github.com/tablepatterns/tablepatterns/repo"
)

// The kind of the index's messages names the table, and Register takes that kind only:
// the table-less kinds "indexentity.change.<name>" and "indexentity/<name>" stay free for
// another handler, and messages of the index's kind are handled.
func TestEventualRegisterTakesOnlyKindsThatNameTheTable(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	q := b.queue()
	ix := b.eventual(b.tableStore(0), q)
	if want := "indexentity.change." + b.Table + ".LastName"; ix.Kind() != want {
		t.Fatalf("kind %q, want %q", ix.Kind(), want)
	}
	reg := queueworker.NewRegistry()
	if err := ix.Register(reg); err != nil {
		t.Fatal(err)
	}
	noop := func(context.Context, *queueworker.Message[Change]) error { return nil }
	for _, kind := range []string{"indexentity/LastName", "indexentity.change.LastName"} {
		if err := queueworker.Handle(reg, kind, noop); err != nil {
			t.Errorf("kind %q is taken by Register: %v", kind, err)
		}
	}
	for i := range 2 {
		id := fmt.Sprintf("%06d", i+1)
		if err := ix.Table().Insert(b.Ctx, emp("Sales", id, "Jones")); err != nil {
			t.Fatal(err)
		}
		if _, err := queueworker.Enqueue(b.Ctx, q, ix.Kind(), "", Change{PartitionKey: "Sales", RowKey: id, Value: "Jones"}, nil); err != nil {
			t.Fatal(err)
		}
	}
	w := b.drain(q, ix.Register)
	if st := w.Stats(); st.Processed != 2 || st.Poisoned != 0 {
		t.Fatalf("stats %+v, want both messages processed", st)
	}
	b.checkKeys(ix.Store(), "Jones", k("Sales", "000001"), k("Sales", "000002"))
}

// Two option-3 indexes named alike on two tables join one registry: their own kinds
// differ (they name the table).
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
