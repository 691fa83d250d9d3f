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
	go func() { done <- s.Delete(b.Ctx, "P", "E", &repo.DeleteOptions{ETag: old.Rev}) }()
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
