package indexentity

import (
	"testing"
	"time"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/codec/keys"
	"github.com/tablepatterns/tablepatterns/queueworker"
	"github.com/tablepatterns/tablepatterns/repo"
)

// The key space of option 3 when the TableStore shares the primary's table
// (TableStoreOptions.Name: "several indexes can share a table, the primary's included"):
// a primary entity whose PartitionKey is a value's index partition ("idx!LastName!Jones",
// escaped) would be read as a page of Jones's list and rewritten by the next Add, so it
// is refused before any request.
func TestTableStoreRefusesPrimaryKeyInIndexKeySpace(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	tbl := must(repo.New[codec.Entity](b.Clients.Tables, b.Table, &repo.Options{Retry: fast, Logger: b.log}))
	s, err := NewTableStore(tbl, "LastName", nil)
	if err != nil {
		t.Fatal(err)
	}
	q := b.queue()
	ix, err := NewEventual(b.emps, "LastName", lastName, s, q, &EventualOptions{Settle: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	victim := emp(keys.Join("idx", "LastName", "Jones"), "000000", "Tim")
	if err := ix.Insert(b.Ctx, victim); err != nil {
		t.Logf("refused: %v (held)", err)
		return
	}
	jones := emp("Sales", "000152", "Jones")
	if err := ix.Insert(b.Ctx, jones); err != nil {
		t.Fatal(err)
	}
	handleAll := func() {
		ix.seams.clock = func() time.Time { return time.Now().Add(time.Hour) }
		for _, m := range b.takeMessages(q) {
			if err := ix.Handle(b.Ctx, m); err != nil {
				if _, ok := err.(*queueworker.SnoozeError); !ok {
					t.Fatal(err)
				}
			}
		}
	}
	handleAll()
	got, err := b.emps.Get(b.Ctx, victim.Department, "000000")
	if err != nil {
		t.Fatalf("the primary entity %s/000000 is gone: %v", victim.Department, err)
	}
	if got.LastName != "Tim" {
		t.Fatalf("the primary entity %s/000000 was overwritten by Jones's index page: %+v", victim.Department, got)
	}
}
