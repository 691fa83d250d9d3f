package indexentity

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/codec/keys"
	"github.com/tablepatterns/tablepatterns/internal/faultproxy"
	"github.com/tablepatterns/tablepatterns/patterns/consistency"
	"github.com/tablepatterns/tablepatterns/patterns/internal/testbed"
	"github.com/tablepatterns/tablepatterns/repo"
)

// Index-aware moves: SamePartition and Eventual as
// companions of the single-entity archive move.

// Two Joneses listed on one index page are archived at once: the first move is held at
// its transaction while the second runs to completion. The first's page update is
// If-Match a page that changed: it starts over, and the page ends listing only the Jones
// left.
func TestArchiveSamePartitionTwoEntitiesOfOnePageAtOnce(t *testing.T) {
	t.Parallel()
	b, ix, a, target := samePartitionJoneses(t)
	n := b.MustMoveHeld(a, target, "Sales", "000001", func() {
		b.MustMove(a, target, "Sales", "000002")
	})
	if n < 3 {
		t.Fatalf("%d transactions: the held move did not start over", n)
	}
	b.MustBeArchived(target, "Sales", "000002")
	b.samePartitionGone(ix, 2, "000004")
	// The last two Joneses at once: one deletes the page, the other must not resurrect it.
	b.MustMoveHeld(a, target, "Sales", "000004", func() {
		b.MustMove(a, target, "Sales", "000003")
	})
	b.checkIndex(ix, "Sales")
	if ids, err := ix.IDs(b.Ctx, "Sales", "Jones"); err != nil || len(ids) != 0 {
		t.Fatalf("Jones lists %v (%v)", ids, err)
	}
	if pages := b.indexPages(ix, "Sales"); len(pages) != 0 {
		t.Fatalf("index entities left: %d", len(pages))
	}
}

// Forged index entities (stored data) list the archived id under another value, and
// under extra page numbers of its own value: after the move no Lookup finds it, and the
// other entities stay listed.
func TestArchiveSamePartitionForgedPagesPointingAtTheEntity(t *testing.T) {
	t.Parallel()
	b, ix, a, target := samePartitionJoneses(t)
	forge := func(value string, page int, ids string) {
		t.Helper()
		rk := keys.Join(tagIndex, ix.name, value, pageNumber(page))
		if err := b.Raw.Upsert(b.Ctx, &codec.Entity{PartitionKey: "Sales", RowKey: rk, Properties: map[string]any{"IDs": ids}}, nil); err != nil {
			t.Fatal(err)
		}
	}
	forge("Smith", 7, "000001\n000003")
	forge("Jones", 5, "000001\n000001\n000002")
	b.MustMove(a, target, "Sales", "000001")
	for _, value := range []string{"Jones", "Smith"} {
		got, err := collect(ix.Find(b.Ctx, "Sales", value, nil))
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range got {
			if e.EmployeeID == "000001" {
				t.Fatalf("lookup of %s found the archived employee", value)
			}
		}
	}
	if ids, err := ix.IDs(b.Ctx, "Sales", "Jones"); err != nil || fmt.Sprint(ids) != "[000002 000004]" {
		t.Fatalf("Jones lists %v (%v)", ids, err)
	}
}

// Forged index entities list the entity on more pages of its value than one entity
// group transaction can hold actions for. The companion plans one action per page, the
// move writes the archive copy, and only then the transaction is refused
// (ErrInvalidInput, permanent): the entity ends both in the archive and in the table
// ("never a half-applied move"; "an error stops the move before anything is written").
func TestArchiveSamePartitionForgedPagesOverflowTheTransaction(t *testing.T) {
	t.Parallel()
	b, ix, a, target := samePartitionJoneses(t)
	var forged []*codec.Entity
	for p := 1; p <= repo.MaxTransactionActions; p++ {
		forged = append(forged, &codec.Entity{PartitionKey: "Sales", RowKey: keys.Join(tagIndex, ix.name, "Jones", pageNumber(p)),
			Properties: map[string]any{"IDs": "000001"}})
	}
	if err := b.Raw.BulkWrite(b.Ctx, forged, nil); err != nil {
		t.Fatal(err)
	}
	out, err := a.ArchiveEntity(b.Ctx, b.ArchiveJob(target, "Sales", "000001"))
	arch := must(repo.New[codec.Entity](b.Direct.Tables, target, nil))
	_, aerr := arch.Get(b.Ctx, "Sales", "000001")
	_, serr := b.Raw.Get(b.Ctx, "Sales", "000001")
	switch {
	case err == nil:
		b.MustBeArchived(target, "Sales", "000001")
	case aerr == nil && serr == nil:
		t.Fatalf("move %v %v: refused after writing the archive copy; the entity is in the archive and in the table", out, err)
	}
}

// Before enqueued the Change, then the delete is held past Within (Settle/2): the move
// abandons it and starts over. The Change of the first attempt must not unlist an entity
// that is still there; the rerun archives it and the worker unlists it.
func TestArchiveEventualDeleteMissesWithin(t *testing.T) {
	t.Parallel()
	b, ix, s, q := eventualJoneses(t, true, nil)
	a, target := b.Archiver(ix)
	ps := b.tableProxy().PauseAt("slow delete", faultproxy.MethodIs("DELETE"), 1)
	t.Cleanup(ps.Release)
	type result struct {
		out consistency.Outcome
		err error
	}
	done := make(chan result, 1)
	go func() {
		out, err := a.ArchiveEntity(b.Ctx, b.ArchiveJob(target, "Sales", "000001"))
		done <- result{out, err}
	}()
	testbed.WaitHeld(t, ps)
	r := <-done
	ps.Release()
	if r.err != nil || r.out != consistency.OutcomeMoved {
		t.Fatalf("move: %v %v", r.out, r.err)
	}
	b.MustBeArchived(target, "Sales", "000001")
	b.drain(q, ix.Register)
	b.eventualGone(ix, s)
}

// A crash right after Before: the Change (Deleted) is pending while the entity is
// still there, and a writer renames it. The Change must not unlist the entity under its
// new value, and the rename's own Change lists it.
func TestArchiveEventualCrashThenRename(t *testing.T) {
	t.Parallel()
	b, ix, s, q := eventualJoneses(t, false, nil)
	crashing, target := b.Archiver(testbed.CrashAfterBefore{Companion: ix})
	if _, err := crashing.ArchiveEntity(b.Ctx, b.ArchiveJob(target, "Sales", "000001")); !errors.Is(err, testbed.ErrStop) {
		t.Fatalf("crashed move: %v", err)
	}
	cur, err := ix.Table().Get(b.Ctx, "Sales", "000001")
	if err != nil {
		t.Fatal(err)
	}
	cur.LastName = "Smith"
	if err := ix.Update(b.Ctx, &cur); err != nil {
		t.Fatal(err)
	}
	b.drain(q, ix.Register)
	b.checkKeys(s, "Smith", k("Sales", "000001"), k("Sales", "000003"))
	b.checkKeys(s, "Jones", k("Sales", "000002"), k("Sales", "000004"))
}

// A writer re-inserts the archived keys with the same value right after the move's
// delete landed, while the Change announcing the delete is pending: once the worker
// settled the new entity is listed and found.
func TestArchiveEventualReinsertWhileChangePending(t *testing.T) {
	t.Parallel()
	b, ix, s, q := eventualJoneses(t, false, nil)
	a, target := b.Archiver(ix)
	b.MustMove(a, target, "Sales", "000001")
	if err := ix.Insert(b.Ctx, emp("Sales", "000001", "Jones")); err != nil {
		t.Fatal(err)
	}
	b.drain(q, ix.Register)
	b.checkKeys(s, "Jones", k("Sales", "000001"), k("Sales", "000002"), k("Sales", "000004"))
	if got, err := collect(ix.Find(b.Ctx, "Jones", nil)); err != nil || len(got) != 3 {
		t.Fatalf("lookup: %d Joneses (%v), want 3", len(got), err)
	}
}

// The same for SamePartition: re-inserted right after the move, the new entity is listed.
func TestArchiveSamePartitionReinsertAfterMove(t *testing.T) {
	t.Parallel()
	b, ix, a, target := samePartitionJoneses(t)
	b.MustMoveHeld(a, target, "Sales", "000001", func() {})
	if err := ix.Insert(b.Ctx, emp("Sales", "000001", "Jones")); err != nil {
		t.Fatal(err)
	}
	b.samePartitionGone(ix, 4, "000001", "000002", "000004")
}

// A live writer renames the employee (Jones becomes Smith: its key moves to another
// list) while the move's delete is held at the proxy, after Before enqueued the Change:
// the delete meets 412, the move starts over, and once the worker settled no list holds
// the archived key.
func TestArchiveEventualWriterBetweenBeforeAndDelete(t *testing.T) {
	t.Parallel()
	b, ix, s, q := eventualJoneses(t, true, nil)
	live := must(NewEventual(must(repo.New[Employee](b.Direct.Tables, b.Table, &repo.Options{Retry: fast})), "LastName", lastName, s, q, &EventualOptions{Settle: 2 * time.Second}))
	a, target := b.Archiver(ix)
	ps := b.tableProxy().PauseAt("held delete", faultproxy.MethodIs("DELETE"), 1)
	t.Cleanup(ps.Release)
	done := make(chan error, 1)
	go func() {
		_, err := a.ArchiveEntity(b.Ctx, b.ArchiveJob(target, "Sales", "000001"))
		done <- err
	}()
	testbed.WaitHeld(t, ps)
	cur, err := live.Table().Get(b.Ctx, "Sales", "000001")
	if err != nil {
		t.Fatal(err)
	}
	cur.LastName = "Smith"
	if err := live.Update(b.Ctx, &cur); err != nil {
		t.Fatal(err)
	}
	ps.Release()
	if err := <-done; err != nil {
		t.Fatalf("move: %v", err)
	}
	b.MustBeArchived(target, "Sales", "000001")
	b.drain(q, ix.Register)
	b.checkKeys(s, "Smith", k("Sales", "000003"))
	b.checkKeys(s, "Jones", k("Sales", "000002"), k("Sales", "000004"))
	b.clean(ix, "Sales", 3)
}
