package indexentity

import (
	"strings"
	"testing"
	"time"

	"github.com/tablepatterns/tablepatterns/queueworker"
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

// Messages of the kind of earlier releases ("indexentity/<name>") are still handled.
func TestEventualRegisterAcceptsTheLegacyKind(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	q := b.queue()
	ix := b.eventual(b.tableStore(0), q)
	if ix.Kind() != "indexentity.change.LastName" {
		t.Fatalf("kind %q", ix.Kind())
	}
	e := emp("Sales", "000001", "Jones")
	if err := ix.Table().Insert(b.Ctx, e); err != nil {
		t.Fatal(err)
	}
	if _, err := queueworker.Enqueue(b.Ctx, q, "indexentity/LastName", "", Change{PartitionKey: "Sales", RowKey: "000001", Value: "Jones"}, nil); err != nil {
		t.Fatal(err)
	}
	w := b.drain(q, ix.Register)
	if st := w.Stats(); st.Processed != 1 || st.Poisoned != 0 {
		t.Fatalf("stats %+v, want the legacy message processed", st)
	}
	b.checkKeys(ix.Store(), "Jones", k("Sales", "000001"))
}
