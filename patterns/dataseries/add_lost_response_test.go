package dataseries_test

import (
	"errors"
	"math"
	"net/http"
	"testing"
	"time"

	"github.com/tablepatterns/tablepatterns/internal/faultproxy"
	"github.com/tablepatterns/tablepatterns/patterns/dataseries"
	"github.com/tablepatterns/tablepatterns/repo"
	"github.com/tablepatterns/tablepatterns/retry"
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

// Adds of whole doubles (which Azurite stores as Int32), -0 and 1e300, each with its
// response lost, count once each and read back as the sum.
func TestAddOfDoublesWithLostResponsesCountsEachOnce(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	s, err := dataseries.New[float64](table(b, nil), dataseries.Layout{Points: 3}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i, d := range []float64{2, 3, math.Copysign(0, -1), 1e300} {
		b.Proxy().AddRule(faultproxy.Rule{Match: faultproxy.IsEntityWrite, Times: 1, Action: faultproxy.DropAfterForward()})
		if _, err := s.Add(b.Ctx, "p", "r", 0, d, nil); err != nil {
			t.Fatalf("add %d (%v): %v", i, d, err)
		}
	}
	got, err := s.Get(b.Ctx, "p", "r")
	if err != nil {
		t.Fatal(err)
	}
	if got.Points[0] != 5+1e300 {
		t.Fatalf("P0 = %v, want %v", got.Points[0], 5+1e300)
	}
}

// An Add whose merge landed but whose response was lost, during a short outage (503
// ServerBusy on every request for a while): the re-read that would find the operation id
// fails with ErrTransient. Add must still answer ErrOutcomeUnknown, not that ErrTransient:
// a caller (or a queue worker) that retries a transient failure would call Add again with
// a new generated id and apply the increment twice.
func TestAddKeepsOutcomeUnknownWhenTheRereadFails(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	o := &dataseries.Options{Conflict: retry.Policy{Delay: 5 * time.Millisecond, MinDelay: time.Millisecond, MaxDelay: 20 * time.Millisecond}}
	s := hoursWith(t, b, &repo.Options{Retry: retry.Policy{Delay: 5 * time.Millisecond, MinDelay: time.Millisecond, MaxDelay: 20 * time.Millisecond, MaxRetries: 2}}, o)
	if _, err := s.Add(b.Ctx, "p", "r", 0, 1, nil); err != nil {
		t.Fatal(err)
	}
	b.Proxy().AddRule(faultproxy.Rule{Name: "lost", Match: faultproxy.IsEntityWrite, Times: 1, Action: faultproxy.DropAfterForward()})
	b.Proxy().AddRule(faultproxy.Rule{Name: "outage", Match: func(*http.Request) bool { return b.Proxy().Fired("lost") > 0 },
		Times: 6, Action: faultproxy.Respond(503, "ServerBusy")})
	_, err := s.Add(b.Ctx, "p", "r", 0, 1, nil)
	b.Proxy().ClearRules()
	got, gerr := s.Get(b.Ctx, "p", "r")
	if gerr != nil {
		t.Fatal(gerr)
	}
	t.Logf("Add: %v; H00 = %d", err, got.Points[0])
	if got.Points[0] == 2 && err != nil && !errors.Is(err, repo.ErrOutcomeUnknown) {
		t.Fatalf("the add was applied (H00 = 2) but Add returned %v, which is not ErrOutcomeUnknown: a caller retrying a transient error adds twice", err)
	}
}
