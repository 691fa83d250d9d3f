package repo_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/tablepatterns/tablepatterns/internal/errs"
	"github.com/tablepatterns/tablepatterns/internal/faultproxy"
	"github.com/tablepatterns/tablepatterns/repo"
	"github.com/tablepatterns/tablepatterns/retry"
)

// DecideOutcome reads again the entities of a transaction that may hold index copies,
// whose keys hold the indexed value: the retries of those reads log no key, and a read
// that fails leaves no key in the error it returns, whatever the caller's context.
func TestDecideOutcomeNeverCarriesIndexCopyKey(t *testing.T) {
	t.Parallel()
	const secret = "email_jonesj@contoso.com"
	b := setup(t, true)
	core, logs := observer.New(zap.DebugLevel)
	tbl := table[Counter](t, b, &repo.Options{Logger: zap.New(core),
		Retry: retry.Policy{Delay: time.Millisecond, MinDelay: time.Millisecond, MaxDelay: 5 * time.Millisecond, MaxRetries: 3}})
	c := &Counter{PK: "Sales", RK: secret, N: 1}
	if err := tbl.Insert(b.ctx, c); err != nil {
		t.Fatal(err)
	}
	unknown := &errs.OutcomeUnknownError{Op: "transaction", Resource: b.name, PartitionKey: "Sales", Cause: errors.New("reset")}
	b.proxy.AddRule(faultproxy.Rule{Name: "busy", Match: faultproxy.IsGetEntity, Times: 1, Action: faultproxy.Respond(503, "ServerBusy")})
	b.proxy.AddRule(faultproxy.Rule{Name: "refused", Match: faultproxy.IsGetEntity, Times: 1, Action: faultproxy.Respond(403, "AuthorizationFailure")})
	err := repo.DecideOutcome(b.ctx, unknown, tbl.DeleteAction("Sales", secret, &repo.DeleteOptions{ETag: c.ETag}))
	if !errors.Is(err, repo.ErrOutcomeUnknown) {
		t.Fatalf("a failed re-read: %v; want the unknown outcome kept", err)
	}
	if b.proxy.Fired("busy") != 1 || b.proxy.Fired("refused") != 1 {
		t.Fatalf("fired busy %d, refused %d; want 1 and 1", b.proxy.Fired("busy"), b.proxy.Fired("refused"))
	}
	if s := fmt.Sprintf("%v %+v", err, err); strings.Contains(s, "jonesj") {
		t.Errorf("the error carries the copy's key: %s", s)
	}
	if logs.Len() == 0 {
		t.Fatal("no retry was logged")
	}
	for _, e := range logs.All() {
		if s := fmt.Sprint(e.Message, e.ContextMap()); strings.Contains(s, "jonesj") {
			t.Errorf("a retry log carries the copy's key: %s", s)
		}
	}
}

// A tracked transaction whose retry meets its own commit reads its entities again to find
// its write id: when that read fails, the error Submit returns still names no key of an
// action (an action may be an index copy).
func TestSubmitNeverCarriesIndexCopyKeyWhenItsReReadFails(t *testing.T) {
	t.Parallel()
	const secret = "email_jonesj@contoso.com"
	b := setup(t, true)
	tbl := table[Counter](t, b, &repo.Options{TrackWrites: true,
		Retry: retry.Policy{Delay: time.Millisecond, MinDelay: time.Millisecond, MaxDelay: 5 * time.Millisecond, MaxRetries: 3}})
	b.proxy.AddRule(faultproxy.Rule{Name: "lost", Match: faultproxy.IsBatch, Times: 1, Action: faultproxy.DropAfterForward()})
	b.proxy.AddRule(faultproxy.Rule{Name: "refused", Match: faultproxy.IsGetEntity, Action: faultproxy.Respond(403, "AuthorizationFailure")})
	_, err := repo.Submit(b.ctx, tbl.InsertAction(&Counter{PK: "Sales", RK: secret}), tbl.InsertAction(&Counter{PK: "Sales", RK: "emp_1"}))
	if err == nil {
		t.Fatal("succeeded although its re-read was refused")
	}
	if b.proxy.Fired("lost") != 1 || b.proxy.Fired("refused") == 0 {
		t.Fatalf("fired lost %d, refused %d; want 1 and some", b.proxy.Fired("lost"), b.proxy.Fired("refused"))
	}
	if s := fmt.Sprintf("%v %+v", err, err); strings.Contains(s, "jonesj") {
		t.Errorf("the error carries the copy's key: %s", s)
	}
}
