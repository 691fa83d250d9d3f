package secondaryindex_test

import (
	"errors"
	"testing"

	"github.com/tablepatterns/tablepatterns/internal/faultproxy"
	"github.com/tablepatterns/tablepatterns/patterns/internal/testbed"
	"github.com/tablepatterns/tablepatterns/repo"
)

// "A slow reconciliation that read 'no copy yet, the primary has the value' and commits
// after the entity was deleted ... and that was reconciled meets the tombstone and starts
// over, instead of leaving a copy of a deleted entity", and "every decision rests on a
// ref version that any other decision must change first".
//
// The same window over an entity whose keys were used before: it was written, deleted
// and reconciled (its ref is a tombstone: no Key, SourceETag ""), then inserted again.
// The slow reconciliation of the new entity reads the tombstone and the primary with its
// email, and is held before its transaction (conditional on the tombstone's ETag). The
// entity is deleted again and that delete is reconciled: the primary is gone and the
// tombstone records "gone", so the fast reconciliation finds it up to date and writes
// nothing, leaving the tombstone's ETag as it was. Released, the slow transaction's
// condition still holds. Every reconciliation the writes asked for has then run: the
// index must hold no copy of the deleted entity.
func TestInterSlowReconcileOfAReinsertedEntityDeletedAgainLeavesNoCopy(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	q, _ := b.Queue()
	slow := b.inter(t, q, -1, byEmail)
	fast := b.directInter(t, byEmail)
	e := iemp(811, "Cy", "Aba", "cy@contoso.com")
	if err := fast.Insert(b.Ctx, e); err != nil {
		t.Fatal(err)
	}
	if err := fast.Reconcile(b.Ctx, "Sales", e.RowKey); err != nil {
		t.Fatal(err)
	}
	if err := fast.Delete(b.Ctx, "Sales", e.RowKey, nil); err != nil {
		t.Fatal(err)
	}
	if err := fast.Reconcile(b.Ctx, "Sales", e.RowKey); err != nil {
		t.Fatal(err)
	}
	b.expect(t, "email_Sales") // a tombstone only
	again := iemp(811, "Cy", "Aba", "cy@contoso.com")
	if err := fast.Insert(b.Ctx, again); err != nil {
		t.Fatal(err)
	}

	ps := b.Proxies.Table.PauseAt("slow reconcile transaction", faultproxy.IsBatch, 1)
	t.Cleanup(ps.Release)
	done := make(chan error, 1)
	go func() { done <- slow.Reconcile(b.Ctx, "Sales", again.RowKey) }()
	testbed.WaitHeld(t, ps) // it read the tombstone and the re-inserted primary

	if err := fast.Delete(b.Ctx, "Sales", again.RowKey, nil); err != nil {
		t.Fatal(err)
	}
	if err := fast.Reconcile(b.Ctx, "Sales", again.RowKey); err != nil {
		t.Fatal(err)
	}
	ps.Release()
	if err := <-done; err != nil {
		t.Fatalf("slow reconcile: %v", err)
	}
	if _, err := fast.Get(b.Ctx, "Sales", again.RowKey); !errors.Is(err, repo.ErrNotFound) {
		t.Fatalf("the entity: %v, want deleted", err)
	}
	b.expect(t, "email_Sales") // no copy of the deleted entity, no live ref
}
