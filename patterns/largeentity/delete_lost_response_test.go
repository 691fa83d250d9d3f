package largeentity_test

import (
	"errors"
	"testing"

	"github.com/tablepatterns/tablepatterns/internal/faultproxy"
	"github.com/tablepatterns/tablepatterns/patterns/largeentity"
	"github.com/tablepatterns/tablepatterns/repo"
)

// isEntityDelete selects a delete of one entity.
var isEntityDelete = faultproxy.All(faultproxy.IsEntityWrite, faultproxy.MethodIs("DELETE"))

// A Delete whose entity delete landed with its response lost, then another writer's Insert
// of the same keys before the retry: the re-read finds an entity, which proves nothing (it
// is the other writer's), so Delete must not delete it nor its blob; the answer is
// ErrOutcomeUnknown, and the re-inserted entity stays readable with its blobs.
func TestDeleteNeverDeletesAnEntityReinsertedByAnotherWriter(t *testing.T) {
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
	if err := b.store.Insert(b.ctx, employee("000123", photo(40, 40<<10))); err != nil {
		t.Fatal(err)
	}
	b.tproxy.AddRule(faultproxy.Rule{Name: "lost", Match: isEntityDelete, Times: 1, Action: faultproxy.DropAfterForward()})
	retried := b.tproxy.PauseAt("held retry", isEntityDelete, 1)
	t.Cleanup(retried.Release)
	done := make(chan error, 1)
	go func() { done <- b.store.Delete(b.ctx, "Sales", "000123", "") }()
	if err := retried.Wait(b.ctx); err != nil {
		t.Fatal(err)
	}
	again := photo(41, 40<<10)
	if err := other.Insert(b.ctx, employee("000123", again)); err != nil {
		t.Fatalf("the other writer's insert after the landed delete: %v", err)
	}
	retried.Release()
	if err := <-done; !errors.Is(err, repo.ErrOutcomeUnknown) {
		t.Errorf("delete: %v, want ErrOutcomeUnknown", err)
	}
	mustEqual(t, "the other writer's photo", b.consistent("Sales", "000123"), again)
}
