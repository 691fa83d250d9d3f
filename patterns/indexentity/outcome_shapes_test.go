package indexentity

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/tablepatterns/tablepatterns/internal/faultproxy"
	"github.com/tablepatterns/tablepatterns/patterns/internal/testbed"
	"github.com/tablepatterns/tablepatterns/repo"
)

// The shape of TestSamePartitionConditionalUpdateUnknownThenDeleted for an Update
// without an ETag: it starts over after the unknown outcome, and its next read finds the
// entity deleted by another writer. "Not found" would say "nothing updated" of an update
// that landed: the answer is the unknown outcome.
func TestSamePartitionUnconditionalUpdateUnknownThenDeleted(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	ix := b.samePartition(&SamePartitionOptions{Conflict: fast})
	e := emp("Sales", "000154", "Jones")
	if err := ix.Insert(b.Ctx, e); err != nil {
		t.Fatal(err)
	}
	done := false
	ix.seams.afterSubmit = func(step string, err error) error {
		if step != "update" || done {
			return err
		}
		done = true
		if err != nil {
			t.Errorf("the update transaction did not land: %v", err)
		}
		if err := ix.Delete(b.Ctx, "Sales", "000154", nil); err != nil {
			t.Errorf("concurrent delete: %v", err)
		}
		return fmt.Errorf("indexentity test: retried transaction: %w (%w)", repo.ErrOutcomeUnknown,
			&repo.Error{Op: "transaction", StatusCode: 412, Code: "UpdateConditionNotSatisfied", Kind: repo.ErrPreconditionFailed})
	}
	e.LastName, e.ETag = "Smith", ""
	if err := ix.Update(b.Ctx, e); !errors.Is(err, repo.ErrOutcomeUnknown) || errors.Is(err, repo.ErrNotFound) {
		t.Fatalf("Update whose transaction landed, then deleted = %v; want ErrOutcomeUnknown, not ErrNotFound", err)
	}
	b.checkIndex(ix, "Sales")
}

// The same for Eventual.Update without an ETag, through the service: the update lands,
// its response is lost, repo's retry meets the changed entity (ErrOutcomeUnknown), and
// another writer deletes the entity before the next round reads it.
func TestEventualUnconditionalUpdateUnknownThenDeleted(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	ix := b.eventual(b.tableStore(0), b.queue())
	direct := must(repo.New[Employee](b.Direct.Tables, b.emps.Name(), &repo.Options{Retry: fast, Logger: b.log}))
	e := emp("Sales", "000155", "Jones")
	if err := ix.Insert(b.Ctx, e); err != nil {
		t.Fatal(err)
	}
	b.tableProxy().AddRule(faultproxy.Rule{Name: "lost update response", Times: 1, Action: faultproxy.DropAfterForward(),
		Match: faultproxy.All(faultproxy.IsEntityWrite, faultproxy.PathContains("RowKey='000155'"))})
	ps := b.tableProxy().PauseAt("next round's read", faultproxy.All(faultproxy.IsGetEntity, faultproxy.PathContains("RowKey='000155'")), 2)
	t.Cleanup(ps.Release)
	e.LastName, e.ETag = "Smith", ""
	done := make(chan error, 1)
	go func() { done <- ix.Update(b.Ctx, e) }()
	testbed.WaitHeld(t, ps)
	if got, err := direct.Get(b.Ctx, "Sales", "000155"); err != nil || got.LastName != "Smith" {
		t.Fatalf("the first update did not land: %+v, %v", got, err)
	}
	if err := direct.Delete(b.Ctx, "Sales", "000155", nil); err != nil {
		t.Fatal(err)
	}
	ps.Release()
	if err := <-done; !errors.Is(err, repo.ErrOutcomeUnknown) || errors.Is(err, repo.ErrNotFound) {
		t.Fatalf("Update whose write landed, then deleted = %v; want ErrOutcomeUnknown, not ErrNotFound", err)
	}
}

// A forged row must not hide an entity from a lookup in option 2: the index entity of a value is stored data that anyone with write access can edit.
// Entries that name no possible entity (a RowKey with a forbidden character, an empty one)
// must be skipped by Lookup, not fail it for the real entity listed next to them.
func TestSamePartitionFindSkipsForgedEntries(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	ix := b.samePartition(nil)
	e := emp("Sales", "000156", "Jones")
	if err := ix.Insert(b.Ctx, e); err != nil {
		t.Fatal(err)
	}
	pages := b.indexPages(ix, "Sales")
	if len(pages) != 1 {
		t.Fatalf("%d index entities, want 1", len(pages))
	}
	p := pages[0]
	p.Properties["IDs"] = strings.Join([]string{"", "0/forged", "000156", "\x01"}, entrySep)
	if err := ix.pages.tbl.Upsert(b.Ctx, &p, nil); err != nil {
		t.Fatal(err)
	}
	got, err := collect(ix.Find(b.Ctx, "Sales", "Jones", nil))
	if err != nil || len(got) != 1 || got[0].EmployeeID != "000156" {
		t.Fatalf("Lookup with forged entries = %+v, %v; want the real entity", got, err)
	}
}
