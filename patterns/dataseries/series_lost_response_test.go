package dataseries_test

import (
	"errors"
	"testing"

	"github.com/tablepatterns/tablepatterns/internal/faultproxy"
	"github.com/tablepatterns/tablepatterns/repo"
)

// An Add whose merge landed with its response lost, then another writer deletes the
// series before the retry: the re-read finds no series, which proves nothing (the other
// writer deleted it after this Add landed), so Add must not create the series again with
// its delta; the answer is ErrOutcomeUnknown and the series stays deleted.
func TestAddNeverRecreatesASeriesDeletedByAnotherWriter(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	s := hours(t, b, nil)
	if _, err := s.Add(b.Ctx, "p", "r", 0, 1, nil); err != nil {
		t.Fatal(err)
	}
	b.Proxy().AddRule(faultproxy.Rule{Name: "lost", Match: faultproxy.IsEntityWrite, Times: 1, Action: faultproxy.DropAfterForward()})
	retried := b.Proxy().PauseAt("the retried merge", faultproxy.IsEntityWrite, 1)
	t.Cleanup(retried.Release)
	done := make(chan error, 1)
	go func() { _, err := s.Add(b.Ctx, "p", "r", 0, 1, nil); done <- err }()
	if err := retried.Wait(b.Ctx); err != nil {
		t.Fatal(err)
	}
	if err := b.Raw.Delete(b.Ctx, "p", "r", nil); err != nil {
		t.Fatalf("the other writer's delete after the landed Add: %v", err)
	}
	retried.Release()
	if err := <-done; !errors.Is(err, repo.ErrOutcomeUnknown) {
		t.Errorf("Add: %v, want ErrOutcomeUnknown", err)
	}
	if got, err := s.Get(b.Ctx, "p", "r"); !errors.Is(err, repo.ErrNotFound) {
		t.Errorf("the series the other writer deleted: %+v, %v; want ErrNotFound", got, err)
	}
}
