package largeentity_test

import (
	"errors"
	"testing"

	"github.com/tablepatterns/tablepatterns/patterns/largeentity"
	"github.com/tablepatterns/tablepatterns/repo"
)

// Attacks Delete's "with opts.ETag set, the delete is also conditional on it ...
// errs.ErrPreconditionFailed (opts.ETag given and changed)" and "never an entity without
// its blobs" at the window its read cannot see: Delete read the entity at the ETag given,
// and another writer's Update (a new photo, in a new blob) lands while the entity's delete
// is held. The delete must be refused, and the newer version stays readable with its
// blobs (the version read is not what Delete's blob deletes may reach).
func TestConditionalDeleteKeepsAVersionWrittenAfterItsRead(t *testing.T) {
	t.Parallel()
	b := setup(t, true, nil)
	direct, err := repo.New[Employee](b.Direct.Tables, b.Table, b.RepoOptions())
	if err != nil {
		t.Fatal(err)
	}
	other, err := largeentity.New(direct, b.Direct.Blobs, b.cname, &largeentity.Options{Retry: fast})
	if err != nil {
		t.Fatal(err)
	}
	first := employee("000124", photo(50, 40<<10))
	if err := b.store.Insert(b.ctx, first); err != nil {
		t.Fatal(err)
	}
	held := b.tproxy.PauseAt("held entity delete", isEntityDelete, 1)
	t.Cleanup(held.Release)
	done := make(chan error, 1)
	go func() { done <- b.store.Delete(b.ctx, "Sales", "000124", &repo.DeleteOptions{ETag: first.ETag}) }()
	if err := held.Wait(b.ctx); err != nil {
		t.Fatal(err)
	}
	newer := employee("000124", photo(51, 44<<10))
	if err := other.Update(b.ctx, newer); err != nil {
		t.Fatal(err)
	}
	held.Release()
	if err := <-done; !errors.Is(err, repo.ErrPreconditionFailed) {
		t.Fatalf("delete at an ETag overwritten after its read: %v, want ErrPreconditionFailed", err)
	}
	mustEqual(t, "the newer version's photo", b.consistent("Sales", "000124"), photo(51, 44<<10))
}
