package indexentity

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/internal/faultproxy"
	"github.com/tablepatterns/tablepatterns/patterns/consistency"
	"github.com/tablepatterns/tablepatterns/patterns/internal/testbed"
	"github.com/tablepatterns/tablepatterns/queueworker"
	"github.com/tablepatterns/tablepatterns/repo"
)

// Both index kinds are companions of the archive.
var (
	_ consistency.Companion = (*SamePartition[Employee])(nil)
	_ consistency.Companion = (*Eventual[Employee])(nil)
)

// joneses inserts three Joneses and a Smith into Sales through insert.
func (b *bed) joneses(insert func(context.Context, *Employee) error) {
	b.t.Helper()
	for _, e := range []*Employee{emp("Sales", "000001", "Jones"), emp("Sales", "000002", "Jones"), emp("Sales", "000003", "Smith"), emp("Sales", "000004", "Jones")} {
		if err := insert(b.Ctx, e); err != nil {
			b.t.Fatal(err)
		}
	}
}

// samePartitionJoneses returns a proxied bed with an option 2 index over the Joneses,
// and an Archiver that has the index as companion, with its Archive table.
func samePartitionJoneses(t *testing.T) (*bed, *SamePartition[Employee], *consistency.Archiver, string) {
	t.Helper()
	b := setup(t, true)
	ix := b.samePartition(&SamePartitionOptions{Conflict: fast})
	b.joneses(ix.Insert)
	a, target := b.Archiver(ix)
	return b, ix, a, target
}

// samePartitionGone checks that the index of Sales lists only what its entities say (want
// for Jones), and that Verify finds no drift over the partition's entities.
func (b *bed) samePartitionGone(ix *SamePartition[Employee], entities int, want ...string) {
	b.t.Helper()
	ids, err := ix.IDs(b.Ctx, "Sales", "Jones")
	if err != nil {
		b.t.Fatal(err)
	}
	if !slices.Equal(ids, want) {
		b.t.Fatalf("Jones lists %v, want %v", ids, want)
	}
	got, err := collect(ix.Find(b.Ctx, "Sales", "Jones", nil))
	if err != nil || len(got) != len(want) {
		b.t.Fatalf("lookup of Jones: %d entities, want %d (%v)", len(got), len(want), err)
	}
	b.checkIndex(ix, "Sales")
	b.clean(ix, "Sales", entities)
}

// Archiving an employee takes its id out of its value's index
// entity in the transaction that deletes it.
func TestArchiveSamePartitionRemovesTheEntryInTheDeleteTransaction(t *testing.T) {
	t.Parallel()
	b, ix, a, target := samePartitionJoneses(t)
	mark := b.tableProxy().CountMatching(testbed.IsBatch)
	b.MustMove(a, target, "Sales", "000001")
	if n := b.tableProxy().CountMatching(testbed.IsBatch) - mark; n != 1 {
		t.Fatalf("the move sent %d transactions, want 1", n)
	}
	b.samePartitionGone(ix, 3, "000002", "000004")
	// The last entry of a value: its index entity goes with it.
	b.MustMove(a, target, "Sales", "000003")
	if ids, err := ix.IDs(b.Ctx, "Sales", "Smith"); err != nil || len(ids) != 0 {
		t.Fatalf("Smith lists %v (%v) after the last Smith was archived", ids, err)
	}
	b.checkIndex(ix, "Sales")
}

// A live writer adds another Jones (the index entity changes) while the move's
// transaction is held at the proxy: the transaction fails on the index entity, the move
// starts over, and both the archive and the new Jones end correct.
func TestArchiveSamePartitionWriterBetweenRemovalAndTransaction(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	ix := b.samePartition(&SamePartitionOptions{Conflict: fast})
	b.joneses(ix.Insert)
	live := must(NewSamePartition(must(repo.New[Employee](b.Direct.Tables, b.Table, &repo.Options{Retry: fast})), "LastName", lastName, &SamePartitionOptions{Conflict: fast}))
	a, target := b.Archiver(ix)
	n := b.MustMoveHeld(a, target, "Sales", "000001", func() {
		if err := live.Insert(b.Ctx, emp("Sales", "000005", "Jones")); err != nil {
			t.Fatal(err)
		}
	})
	if n < 2 {
		t.Fatalf("the move sent %d transactions: it did not start over", n)
	}
	b.samePartitionGone(ix, 4, "000002", "000004", "000005")
}

// The transaction lands and its response is lost, and a second delivery runs while the
// first is held: every delivery succeeds, the entry is removed once, nothing else is.
func TestArchiveSamePartitionLostResponseAndTwoDeliveries(t *testing.T) {
	t.Parallel()
	b, ix, a, target := samePartitionJoneses(t)
	b.tableProxy().AddRule(faultproxy.Rule{Name: "lost", Match: faultproxy.IsBatch, Times: 1, Action: faultproxy.DropAfterForward()})
	b.MustMove(a, target, "Sales", "000001")
	if b.tableProxy().Fired("lost") != 1 {
		t.Fatal("the response was never lost")
	}
	b.samePartitionGone(ix, 3, "000002", "000004")

	b.MustMoveHeld(a, target, "Sales", "000002", func() {
		b.MustMove(a, target, "Sales", "000002")
	})
	b.samePartitionGone(ix, 2, "000004")
}

// Stored rows are untrusted: an entity that does not decode, and an index entity
// archived as if it were an entity, are refused before anything is written.
func TestArchiveSamePartitionUnreadableAndForgedEntities(t *testing.T) {
	t.Parallel()
	b, ix, a, target := samePartitionJoneses(t)
	if err := b.Raw.Insert(b.Ctx, &codec.Entity{PartitionKey: "Sales", RowKey: "000009", Properties: map[string]any{"LastName": "Jones", "Age": "old"}}); err != nil {
		t.Fatal(err)
	}
	page := b.indexPages(ix, "Sales")[0].RowKey
	for _, rk := range []string{"000009", page} {
		before := b.tableProxy().CountMatching(testbed.IsWrite)
		if _, err := a.ArchiveEntity(b.Ctx, b.ArchiveJob(target, "Sales", rk)); !errors.Is(err, repo.ErrInvalidInput) {
			t.Fatalf("archive %s: %v, want invalid input", rk, err)
		}
		if n := b.tableProxy().CountMatching(testbed.IsWrite) - before; n != 0 {
			t.Fatalf("archive %s: %d writes before the refusal", rk, n)
		}
		if _, err := b.Raw.Get(b.Ctx, "Sales", rk); err != nil {
			t.Fatalf("%s after the refusal: %v", rk, err)
		}
	}
	if ids, err := ix.IDs(b.Ctx, "Sales", "Jones"); err != nil || !slices.Equal(ids, []string{"000001", "000002", "000004"}) {
		t.Fatalf("Jones lists %v (%v)", ids, err)
	}
}

// eventualJoneses returns a bed with an Eventual index over the Joneses, its store (from
// store; nil for a TableStore, option 3) and queue, the worker drained.
func eventualJoneses(t *testing.T, proxied bool, store func(*bed) Store) (*bed, *Eventual[Employee], Store, *queueworker.Client) {
	t.Helper()
	b := setup(t, proxied)
	q := b.queue()
	if store == nil {
		store = func(b *bed) Store { return b.tableStore(0) }
	}
	s := store(b)
	ix := b.eventual(s, q)
	b.joneses(ix.Insert)
	b.drain(q, ix.Register)
	return b, ix, s, q
}

// eventualGone checks, once the worker settled, that no lookup finds 000001, that its
// key is listed nowhere, and that Verify finds no drift.
func (b *bed) eventualGone(ix *Eventual[Employee], s Store) {
	b.t.Helper()
	got, err := collect(ix.Find(b.Ctx, "Jones", nil))
	if err != nil {
		b.t.Fatal(err)
	}
	for _, e := range got {
		if e.EmployeeID == "000001" {
			b.t.Fatal("the lookup found the archived employee")
		}
	}
	b.checkKeys(s, "Jones", k("Sales", "000002"), k("Sales", "000004"))
	b.clean(ix, "Sales", 3)
}

// Archiving an employee indexed by options 1 and 3 enqueues the
// Change that removes its key, before the delete; once the worker settled no list holds
// it.
func TestArchiveEventualRemovesTheEntryThroughTheWorker(t *testing.T) {
	t.Parallel()
	for _, st := range stores {
		t.Run(st.name, func(t *testing.T) {
			t.Parallel()
			b, ix, s, q := eventualJoneses(t, false, func(b *bed) Store { return st.make(b, storeOpts{}) })
			b.checkKeys(s, "Jones", k("Sales", "000001"), k("Sales", "000002"), k("Sales", "000004"))
			a, target := b.Archiver(ix)
			b.MustMove(a, target, "Sales", "000001")
			b.drain(q, ix.Register)
			b.eventualGone(ix, s)
		})
	}
}

// A crash after Before enqueued the Change and before the delete: the message settles
// and changes nothing (the entity is still listed and found); the rerun moves it and the
// worker unlists it. Then two deliveries at once.
func TestArchiveEventualCrashBetweenBeforeAndDeleteThenTwoDeliveries(t *testing.T) {
	t.Parallel()
	b, ix, s, q := eventualJoneses(t, false, nil)
	crashing, target := b.Archiver(testbed.CrashAfterBefore{Companion: ix})
	if _, err := crashing.ArchiveEntity(b.Ctx, b.ArchiveJob(target, "Sales", "000001")); !errors.Is(err, testbed.ErrStop) {
		t.Fatalf("crashed move: %v", err)
	}
	b.drain(q, ix.Register) // the crashed run's Change settles: the entity is still there
	b.checkKeys(s, "Jones", k("Sales", "000001"), k("Sales", "000002"), k("Sales", "000004"))
	if got, err := collect(ix.Find(b.Ctx, "Jones", nil)); err != nil || len(got) != 3 {
		t.Fatalf("after the crash: %d Joneses (%v), want 3", len(got), err)
	}
	a, _ := b.Archiver(ix)
	b.MustMoveConcurrently(a, 2, target, "Sales", "000001")
	b.drain(q, ix.Register)
	b.eventualGone(ix, s)
}

// The delete's response is lost after it landed: the move decides from a fresh read
// (gone, archived) and the Change enqueued before it unlists the key.
func TestArchiveEventualLostDeleteResponse(t *testing.T) {
	t.Parallel()
	b, ix, s, q := eventualJoneses(t, true, nil)
	a, target := b.Archiver(ix)
	b.tableProxy().AddRule(faultproxy.Rule{Name: "lost", Match: faultproxy.MethodIs("DELETE"), Times: 1, Action: faultproxy.DropAfterForward()})
	b.MustMove(a, target, "Sales", "000001")
	if b.tableProxy().Fired("lost") != 1 {
		t.Fatal("the response was never lost")
	}
	b.drain(q, ix.Register)
	b.eventualGone(ix, s)
}

// Stored rows are untrusted: an entity that does not decode is refused before anything
// is written or enqueued.
func TestArchiveEventualUnreadableEntity(t *testing.T) {
	t.Parallel()
	b, ix, s, q := eventualJoneses(t, true, nil)
	if err := b.Raw.Insert(b.Ctx, &codec.Entity{PartitionKey: "Sales", RowKey: "000009", Properties: map[string]any{"LastName": "Jones", "Age": "old"}}); err != nil {
		t.Fatal(err)
	}
	a, target := b.Archiver(ix)
	before := b.Proxies.Queue.Count() + b.tableProxy().CountMatching(testbed.IsWrite)
	if _, err := a.ArchiveEntity(b.Ctx, b.ArchiveJob(target, "Sales", "000009")); !errors.Is(err, repo.ErrInvalidInput) {
		t.Fatalf("archive: %v, want invalid input", err)
	}
	if n := b.Proxies.Queue.Count() + b.tableProxy().CountMatching(testbed.IsWrite) - before; n != 0 {
		t.Fatalf("%d writes or enqueues before the refusal", n)
	}
	if msgs := b.takeMessages(q); len(msgs) != 0 {
		t.Fatalf("the refused move enqueued %d messages", len(msgs))
	}
	b.checkKeys(s, "Jones", k("Sales", "000001"), k("Sales", "000002"), k("Sales", "000004"))
}
