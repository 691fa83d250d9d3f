package indexentity

import (
	"context"
	"sync"
	"testing"
)

// "It trusts nothing in the message but the keys, so duplicated, reordered and replayed
// messages, concurrent handlers and a stop at any point all end in the same lists."
//
// The state "gone" has no version, so it can repeat: an entity whose keys were used
// before (inserted, deleted and reconciled) is inserted again; the slow reconciliation of
// that insert reads it with its value and is held before it lists it. The entity is
// deleted again and that delete is reconciled completely (it finds the entity gone, as
// the earlier delete left it, and nothing listed). Released, the slow one lists the key;
// its closing read must see the entity gone and remove what it listed.
// (secondaryindex.Inter kept a copy of the deleted entity in this window:
// TestInterSlowReconcileOfAReinsertedEntityDeletedAgainLeavesNoCopy.)
func TestEventualSlowReconcileOfAReinsertedEntityDeletedAgainUnlistsIt(t *testing.T) {
	t.Parallel()
	for _, st := range stores {
		t.Run(st.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, false)
			s := st.make(b, storeOpts{})
			ix := b.eventual(s, b.queue())
			key := k("Sales", "000153")
			if err := b.emps.Insert(b.Ctx, emp("Sales", "000153", "Jones")); err != nil {
				t.Fatal(err)
			}
			if err := ix.Reconcile(b.Ctx, key); err != nil {
				t.Fatal(err)
			}
			if err := b.emps.Delete(b.Ctx, "Sales", "000153", nil); err != nil {
				t.Fatal(err)
			}
			if err := ix.Reconcile(b.Ctx, key, "Jones"); err != nil {
				t.Fatal(err)
			}
			b.checkKeys(s, "Jones")
			if err := b.emps.Insert(b.Ctx, emp("Sales", "000153", "Jones")); err != nil {
				t.Fatal(err)
			}

			type slow struct{}
			paused, resume := make(chan struct{}), make(chan struct{})
			var once sync.Once
			ix.seams.step = func(ctx context.Context, step string) error {
				if step == "add" && ctx.Value(slow{}) != nil {
					once.Do(func() { paused <- struct{}{}; <-resume })
				}
				return nil
			}
			done := make(chan error, 1)
			go func() { done <- ix.Reconcile(context.WithValue(b.Ctx, slow{}, true), key) }()
			<-paused

			if err := b.emps.Delete(b.Ctx, "Sales", "000153", nil); err != nil {
				t.Fatal(err)
			}
			if err := ix.Reconcile(b.Ctx, key, "Jones"); err != nil {
				t.Fatal(err)
			}
			close(resume)
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			b.checkKeys(s, "Jones") // the deleted entity is listed nowhere
		})
	}
}
