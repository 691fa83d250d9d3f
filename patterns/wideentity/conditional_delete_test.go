package wideentity_test

import (
	"errors"
	"testing"

	"github.com/tablepatterns/tablepatterns/internal/faultproxy"
	"github.com/tablepatterns/tablepatterns/patterns/internal/testbed"
	"github.com/tablepatterns/tablepatterns/patterns/wideentity"
	"github.com/tablepatterns/tablepatterns/repo"
)

// Attacks Delete's "With opts.ETag set to the revision a read returned (Entity.Rev) the
// delete is conditional on it ... errs.ErrPreconditionFailed (opts.ETag given and the
// entity written since)" at the window its read cannot see: the chunks are read at the
// revision given, and another writer's Update lands while the delete's transaction is
// held. The transaction must be refused and the newer version kept whole.
func TestConditionalDeleteRefusedWhenAnUpdateLandsAfterItsRead(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	s := store(t, b, nil)
	if err := s.Insert(b.Ctx, &wideentity.Entity{PartitionKey: "P", RowKey: "E", Properties: year(1)}); err != nil {
		t.Fatal(err)
	}
	old, err := s.Get(b.Ctx, "P", "E")
	if err != nil {
		t.Fatal(err)
	}
	ps := b.Proxy().PauseAt("delete transaction", faultproxy.IsBatch, 1)
	t.Cleanup(ps.Release)
	done := make(chan error, 1)
	go func() { done <- s.Delete(b.Ctx, "P", "E", &repo.DeleteOptions{ETag: old.ETag()}) }()
	testbed.WaitHeld(t, ps)
	cur, err := storeDirect(t, b, nil).Update(b.Ctx, "P", "E", func(e *wideentity.Entity) error { e.Properties["Name"] = "newer"; return nil })
	if err != nil {
		t.Fatal(err)
	}
	ps.Release()
	if err := <-done; !errors.Is(err, repo.ErrPreconditionFailed) {
		t.Fatalf("delete at a revision overwritten after its read: %v, want ErrPreconditionFailed", err)
	}
	if rev := checkWhole(t, b, "P", "E", 2); rev != cur.Rev {
		t.Fatalf("stored revision %s, want the update's %s", rev, cur.Rev)
	}
}

// A conditional Delete whose transaction landed but whose response was lost: the retry
// finds the chunks gone, which is success ("A missing entity is success"), never a
// precondition failure for its own write; and with a Put landing after a first attempt
// that never reached the store, the retry is refused and the Put's version stays whole.
func TestConditionalDeleteLostResponses(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	s := store(t, b, nil)
	for _, rk := range []string{"landed", "dropped"} {
		if err := s.Insert(b.Ctx, &wideentity.Entity{PartitionKey: "P", RowKey: rk, Properties: year(2)}); err != nil {
			t.Fatal(err)
		}
	}
	landed, err := s.Get(b.Ctx, "P", "landed")
	if err != nil {
		t.Fatal(err)
	}
	b.Proxy().AddRule(faultproxy.Rule{Name: "lost", Match: faultproxy.IsBatch, Times: 1, Action: faultproxy.DropAfterForward()})
	err = s.Delete(b.Ctx, "P", "landed", &repo.DeleteOptions{ETag: landed.ETag()})
	if b.Proxy().Fired("lost") != 1 {
		t.Fatal("the response was not lost: the test proves nothing")
	}
	if err != nil && !errors.Is(err, repo.ErrOutcomeUnknown) {
		t.Fatalf("conditional delete that landed, response lost: %v, want nil (or ErrOutcomeUnknown)", err)
	}
	if n := len(chunksOf(t, b, "P", "landed")); n != 0 {
		t.Fatalf("%d chunks left", n)
	}

	dropped, err := s.Get(b.Ctx, "P", "dropped")
	if err != nil {
		t.Fatal(err)
	}
	b.Proxy().AddRule(faultproxy.Rule{Name: "dropped", Match: faultproxy.IsBatch, Times: 1, Action: faultproxy.DropBeforeForward()})
	ps := b.Proxy().PauseAt("retried delete", faultproxy.IsBatch, 1)
	t.Cleanup(ps.Release)
	done := make(chan error, 1)
	go func() { done <- s.Delete(b.Ctx, "P", "dropped", &repo.DeleteOptions{ETag: dropped.ETag()}) }()
	testbed.WaitHeld(t, ps)
	cur, err := storeDirect(t, b, nil).Update(b.Ctx, "P", "dropped", func(e *wideentity.Entity) error { e.Properties["Name"] = "newer"; return nil })
	if err != nil {
		t.Fatal(err)
	}
	ps.Release()
	if err := <-done; !errors.Is(err, repo.ErrPreconditionFailed) && !errors.Is(err, repo.ErrOutcomeUnknown) {
		t.Fatalf("retried delete at a revision overwritten in between: %v, want ErrPreconditionFailed (or ErrOutcomeUnknown)", err)
	}
	if b.Proxy().Fired("dropped") != 1 {
		t.Fatal("the first attempt was not dropped: the test proves nothing")
	}
	if rev := checkWhole(t, b, "P", "dropped", 2); rev != cur.Rev {
		t.Fatalf("stored revision %s, want the update's %s", rev, cur.Rev)
	}
}
