package dataseries_test

import (
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/tablepatterns/tablepatterns/internal/faultproxy"
	"github.com/tablepatterns/tablepatterns/patterns/dataseries"
	"github.com/tablepatterns/tablepatterns/repo"
	"github.com/tablepatterns/tablepatterns/retry"
)

// Attack: an Add whose merge landed but whose response was lost, during a short outage
// (503 ServerBusy on every request for a while). repo.Update gives up with
// ErrOutcomeUnknown; dataseries re-reads to look for its op id, the re-read fails with
// ErrTransient, and Add returns that ErrTransient: the "may have happened" is lost. A
// caller (or a queue worker) that retries a transient failure calls Add again with a new
// generated op id: the increment is applied twice.
func TestAttackAddOutcomeUnknownMaskedByTransientReread(t *testing.T) {
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
