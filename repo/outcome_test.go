package repo_test

import (
	"context"
	"errors"
	"math"
	"net/http"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/tablepatterns/tablepatterns/internal/faultproxy"
	"github.com/tablepatterns/tablepatterns/internal/testenv"
	"github.com/tablepatterns/tablepatterns/repo"
	"github.com/tablepatterns/tablepatterns/retry"
)

// Counter is one counter entity, for read-modify-write tests.
type Counter struct {
	PK   string `table:",pk"`
	RK   string `table:",rk"`
	N    int64
	X    float64 `table:",omitempty"`
	ETag string  `table:",etag"`
}

// busyOnce makes the next entity write answer 503 ServerBusy: the service refused it, so it
// was not applied.
func busyOnce(p *faultproxy.Proxy, match func(*http.Request) bool) {
	p.AddRule(faultproxy.Rule{Name: "busy", Match: match, Times: 1, Action: faultproxy.Respond(503, "ServerBusy")})
}

// onRetry returns a logger that runs f, synchronously, when the retry layer logs that it
// is about to retry: the exact moment between an unanswered attempt and its retry, where
// another writer acts in the tests below.
func onRetry(f func()) *zap.Logger {
	done := false
	core, _ := observer.New(zap.WarnLevel) // a core that is enabled, so that hooks run
	return zap.New(core, zap.Hooks(func(e zapcore.Entry) error {
		if e.Message == "retrying" && !done {
			done = true
			f()
		}
		return nil
	}))
}

func mustInsertCounter(t *testing.T, tbl *repo.Table[Counter], n int64) *Counter {
	t.Helper()
	c := &Counter{PK: "c", RK: "1", N: n}
	if err := tbl.Insert(t.Context(), c); err != nil {
		t.Fatal(err)
	}
	return c
}

// Two writers read N=5 with the same ETag; A writes 6; B's first update is refused
// with 503 ServerBusy (never applied) and its retry meets 412. That 412 is the truth: B must
// not be told its increment happened.
func TestRefusedAttemptThenConflictIsNotSuccess(t *testing.T) {
	t.Parallel()
	for _, track := range []bool{false, true} {
		b := setup(t, true)
		tbl := table[Counter](t, b, &repo.Options{TrackWrites: track})
		mustInsertCounter(t, tbl, 5)
		a, _ := tbl.Get(b.ctx, "c", "1")
		bb, _ := tbl.Get(b.ctx, "c", "1")
		a.N++
		if err := tbl.Update(b.ctx, &a, nil); err != nil {
			t.Fatal(err)
		}
		busyOnce(b.proxy, faultproxy.IsEntityWrite)
		bb.N++
		err := tbl.Update(b.ctx, &bb, nil)
		if !errors.Is(err, repo.ErrPreconditionFailed) || errors.Is(err, repo.ErrOutcomeUnknown) {
			t.Fatalf("track=%v: B's update after 503 then 412 returned %v, want ErrPreconditionFailed", track, err)
		}
		if b.proxy.Fired("busy") != 1 {
			t.Fatal("the 503 did not fire")
		}
		got, _ := tbl.Get(b.ctx, "c", "1")
		if got.N != 6 {
			t.Fatalf("N = %d, want 6", got.N)
		}
	}
}

// The same for an insert used as a claim (two claimers with the same body), a conditional
// delete that finds 404, and a transaction.
func TestRefusedAttemptThenEchoIsTheTruth(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	tbl := table[Counter](t, b, nil)
	ctx := b.ctx

	if err := tbl.Insert(ctx, &Counter{PK: "claim", RK: "x", N: 1}); err != nil {
		t.Fatal(err)
	}
	busyOnce(b.proxy, faultproxy.IsInsertEntity)
	if err := tbl.Insert(ctx, &Counter{PK: "claim", RK: "x", N: 1}); !errors.Is(err, repo.ErrAlreadyExists) || errors.Is(err, repo.ErrOutcomeUnknown) {
		t.Fatalf("second claimer: %v, want ErrAlreadyExists", err)
	}

	c := mustInsertCounter(t, tbl, 5)
	if err := tbl.Delete(ctx, "c", "1", nil); err != nil {
		t.Fatal(err)
	}
	busyOnce(b.proxy, faultproxy.IsEntityWrite)
	if err := tbl.Delete(ctx, "c", "1", &repo.DeleteOptions{ETag: c.ETag}); !errors.Is(err, repo.ErrNotFound) || errors.Is(err, repo.ErrOutcomeUnknown) {
		t.Fatalf("conditional delete after 503 then 404: %v, want ErrNotFound", err)
	}

	mustInsertCounter(t, tbl, 5)
	a, _ := tbl.Get(ctx, "c", "1")
	bb, _ := tbl.Get(ctx, "c", "1")
	a.N++
	if _, err := repo.Submit(ctx, tbl.UpdateAction(&a, nil)); err != nil {
		t.Fatal(err)
	}
	busyOnce(b.proxy, faultproxy.IsBatch)
	bb.N++
	var ae *repo.ActionError
	if _, err := repo.Submit(ctx, tbl.UpdateAction(&bb, nil), tbl.InsertAction(&Counter{PK: "c", RK: "2"})); !errors.As(err, &ae) || !errors.Is(err, repo.ErrPreconditionFailed) || errors.Is(err, repo.ErrOutcomeUnknown) {
		t.Fatalf("transaction after 503 then 412: %v, want an ActionError with ErrPreconditionFailed", err)
	}
	if _, err := tbl.Get(ctx, "c", "2"); !errors.Is(err, repo.ErrNotFound) {
		t.Fatalf("the failed transaction wrote its insert: %v", err)
	}
}

// A lost response after the write landed, then another writer builds on it before the
// retry: two increments, and both are acknowledged only when tracking can prove it.
func TestLostResponseThenAnotherWriter(t *testing.T) {
	t.Parallel()
	for _, track := range []bool{true, false} {
		b := setup(t, true)
		other := table[Counter](t, b, &repo.Options{TrackWrites: track})
		var otherErr error
		tbl := table[Counter](t, b, &repo.Options{TrackWrites: track, Logger: onRetry(func() {
			c, err := other.Get(b.ctx, "c", "1")
			if err == nil {
				c.N++
				err = other.Update(b.ctx, &c, nil)
			}
			otherErr = err
		})})
		mustInsertCounter(t, tbl, 5)
		a, _ := tbl.Get(b.ctx, "c", "1")
		b.proxy.AddRule(faultproxy.Rule{Name: "lost", Match: faultproxy.IsEntityWrite, Times: 1, Action: faultproxy.DropAfterForward()})
		a.N++
		err := tbl.Update(b.ctx, &a, nil)
		if otherErr != nil {
			t.Fatal(otherErr)
		}
		got, _ := tbl.Get(b.ctx, "c", "1")
		if got.N != 7 {
			t.Fatalf("N = %d, want 7 (both increments landed)", got.N)
		}
		switch {
		case track && err != nil:
			t.Fatalf("tracked: %v, want nil (its write id is in the history)", err)
		case !track && !errors.Is(err, repo.ErrOutcomeUnknown):
			t.Fatalf("untracked: %v, want ErrOutcomeUnknown", err)
		}
		if track {
			// Its write happened but is no longer the stored version: its ETag must
			// not let a next conditional write overwrite the other writer's.
			a.N = 100
			if err := tbl.Update(b.ctx, &a, nil); !errors.Is(err, repo.ErrPreconditionFailed) {
				t.Fatalf("next update with the superseded ETag: %v, want ErrPreconditionFailed", err)
			}
		}
	}
}

// A write dropped before it reached the service (so not applied, though the client cannot
// know), then another writer: tracking finds no trace of it, which proves nothing (a
// history is data others can rewrite), so the answer is ErrOutcomeUnknown, never nil and
// never a refusal.
func TestDroppedAttemptThenAnotherWriterTracked(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	other := table[Counter](t, b, &repo.Options{TrackWrites: true})
	tbl := table[Counter](t, b, &repo.Options{TrackWrites: true, Logger: onRetry(func() {
		c, err := other.Get(b.ctx, "c", "1")
		if err == nil {
			c.N++
			err = other.Update(b.ctx, &c, nil)
		}
		if err != nil {
			t.Error(err)
		}
	})})
	mustInsertCounter(t, tbl, 5)
	a, _ := tbl.Get(b.ctx, "c", "1")
	b.proxy.AddRule(faultproxy.Rule{Match: faultproxy.IsEntityWrite, Times: 1, Action: faultproxy.DropBeforeForward()})
	a.N++
	if err := tbl.Update(b.ctx, &a, nil); !errors.Is(err, repo.ErrOutcomeUnknown) || errors.Is(err, repo.ErrPreconditionFailed) {
		t.Fatalf("update dropped before the service, then overtaken: %v, want ErrOutcomeUnknown", err)
	}
	if got, _ := tbl.Get(b.ctx, "c", "1"); got.N != 6 {
		t.Fatalf("N = %d, want 6 (only the other writer's increment)", got.N)
	}

	// An insert claim dropped before the service while another claimer wins.
	claimer := table[Counter](t, b, &repo.Options{TrackWrites: true, Logger: onRetry(func() {
		if err := other.Insert(b.ctx, &Counter{PK: "claim", RK: "y"}); err != nil {
			t.Error(err)
		}
	})})
	b.proxy.AddRule(faultproxy.Rule{Match: faultproxy.IsInsertEntity, Times: 1, Action: faultproxy.DropBeforeForward()})
	if err := claimer.Insert(b.ctx, &Counter{PK: "claim", RK: "y"}); !errors.Is(err, repo.ErrOutcomeUnknown) || errors.Is(err, repo.ErrAlreadyExists) {
		t.Fatalf("claim dropped before the service, then won by another: %v, want ErrOutcomeUnknown", err)
	}

	// A claim by delete dropped before the service while another consumer deletes: never
	// nil for both (DeleteIfExists, which asks only for "gone", is nil).
	if err := tbl.Insert(b.ctx, &Counter{PK: "d", RK: "1"}); err != nil {
		t.Fatal(err)
	}
	deleter := table[Counter](t, b, &repo.Options{Logger: onRetry(func() {
		if err := other.Delete(b.ctx, "d", "1", nil); err != nil {
			t.Error(err)
		}
	})})
	b.proxy.AddRule(faultproxy.Rule{Match: faultproxy.IsEntityWrite, Times: 1, Action: faultproxy.DropBeforeForward()})
	if err := deleter.Delete(b.ctx, "d", "1", nil); !errors.Is(err, repo.ErrOutcomeUnknown) {
		t.Fatalf("delete dropped before the service, then done by another: %v, want ErrOutcomeUnknown", err)
	}
}

// An insert holding NaN whose response was lost is recognised as applied, not reported as
// ErrAlreadyExists: NaN is not equal to itself, so a content comparison must not decide.
func TestLostResponseInsertWithNaN(t *testing.T) {
	t.Parallel()
	for _, track := range []bool{true, false} {
		b := setup(t, true)
		tbl := table[Counter](t, b, &repo.Options{TrackWrites: track})
		b.proxy.AddRule(faultproxy.Rule{Match: faultproxy.IsInsertEntity, Times: 1, Action: faultproxy.DropAfterForward()})
		err := tbl.Insert(b.ctx, &Counter{PK: "n", RK: "1", X: math.NaN()})
		if track && err != nil {
			t.Fatalf("tracked NaN insert: %v", err)
		}
		var ue *repo.OutcomeUnknownError
		if !track && (!errors.As(err, &ue) || !errors.Is(ue.Err, repo.ErrAlreadyExists) || errors.Is(err, repo.ErrAlreadyExists)) {
			t.Fatalf("untracked NaN insert: %v, want ErrOutcomeUnknown carrying (not unwrapping to) the 409 it met", err)
		}
	}
}

// A transaction whose response was lost is proved by one action whose id is stored: it
// must not require every action's entity to be in the target state, or a one-to-many Add
// gets ErrAlreadyExists ("nothing written") for a child it wrote.
func TestLostResponseTransaction(t *testing.T) {
	t.Parallel()
	for _, track := range []bool{true, false} {
		b := setup(t, true)
		other := table[Counter](t, b, &repo.Options{TrackWrites: track})
		tbl := table[Counter](t, b, &repo.Options{TrackWrites: track, Logger: onRetry(func() {
			// Another writer changes the parent after the commit, before the retry.
			p, err := other.Get(b.ctx, "c", "1")
			if err == nil {
				p.X = 1
				err = other.Update(b.ctx, &p, nil)
			}
			if err != nil {
				t.Error(err)
			}
		})})
		mustInsertCounter(t, tbl, 0)
		parent, _ := tbl.Get(b.ctx, "c", "1")
		parent.N++
		child := &Counter{PK: "c", RK: "child-1"}
		b.proxy.AddRule(faultproxy.Rule{Match: faultproxy.IsBatch, Times: 1, Action: faultproxy.DropAfterForward()})
		etags, err := repo.Submit(b.ctx, tbl.UpdateAction(&parent, nil), tbl.InsertAction(child))
		switch {
		case track && err != nil:
			t.Fatalf("tracked transaction with a lost response: %v", err)
		case track && (len(etags) != 2 || child.ETag == "" || parent.ETag == ""):
			t.Fatalf("etags %q, child %q, parent %q", etags, child.ETag, parent.ETag)
		case !track && (!errors.Is(err, repo.ErrOutcomeUnknown) || errors.Is(err, repo.ErrNotFound)):
			t.Fatalf("untracked transaction with a lost response: %v, want ErrOutcomeUnknown", err)
		}
		if _, err := tbl.Get(b.ctx, "c", "child-1"); err != nil {
			t.Fatalf("the committed child: %v", err)
		}
	}
}

// Reads never show the tracking property, not even to a type with an extra map, and a
// read-modify-write through such a type keeps one history, not two.
func TestTrackingPropertyIsReserved(t *testing.T) {
	t.Parallel()
	type Dyn struct {
		PK    string         `table:",pk"`
		RK    string         `table:",rk"`
		Extra map[string]any `table:",extra"`
		ETag  string         `table:",etag"`
	}
	b := setup(t, false)
	tbl := table[Dyn](t, b, &repo.Options{TrackWrites: true})
	d := &Dyn{PK: "p", RK: "r", Extra: map[string]any{"A": "x"}}
	if err := tbl.Insert(b.ctx, d); err != nil {
		t.Fatal(err)
	}
	got, err := tbl.Get(b.ctx, "p", "r")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := got.Extra[repo.DefaultWriteIDProperty]; ok || got.Extra["A"] != "x" {
		t.Fatalf("extra map %v", got.Extra)
	}
	if err := tbl.Update(b.ctx, &got, nil); err != nil {
		t.Fatal(err)
	}
	raw := rawJSON(t, b, "p", "r")
	if n := strings.Count(raw, repo.DefaultWriteIDProperty+`"`); n != 1 {
		t.Fatalf("stored entity holds the tracking property %d times: %s", n, raw)
	}
	// Bad options are refused at construction.
	if _, err := repo.New[Counter](b.clients.Tables, b.name, &repo.Options{TrackWrites: true, WriteIDProperty: "N"}); !errors.Is(err, repo.ErrInvalidInput) {
		t.Fatalf("a tracking property the type maps: %v", err)
	}
	if _, err := repo.New[Counter](b.clients.Tables, b.name, &repo.Options{TrackWrites: true, WriteHistory: 1}); !errors.Is(err, repo.ErrInvalidInput) {
		t.Fatalf("WriteHistory 1: %v", err)
	}
}

// U+2028 and U+2029 in a value or a key work in a transaction as in single-entity calls
// (Azurite reads them as line ends inside a $batch body: DESIGN.md, "Traps").
func TestLineSeparatorsInATransaction(t *testing.T) {
	t.Parallel()
	type N struct {
		PK   string `table:",pk"`
		RK   string `table:",rk"`
		Text string
	}
	b := setup(t, false)
	tbl := table[N](t, b, nil)
	rk := "k\u2029end"
	if _, err := repo.Submit(b.ctx, tbl.InsertAction(&N{PK: "p", RK: rk, Text: "a\u2028b\u2029c"})); err != nil {
		t.Fatal(err)
	}
	got, err := tbl.Get(b.ctx, "p", rk)
	if err != nil || got.Text != "a\u2028b\u2029c" {
		t.Fatalf("%+v, %v", got, err)
	}
}

// 9999-12-31T23:59:59.999999999Z is accepted: the service stores it as .9999999.
func TestMaximumDateTime(t *testing.T) {
	t.Parallel()
	type D struct {
		PK string `table:",pk"`
		RK string `table:",rk"`
		At time.Time
	}
	b := setup(t, false)
	tbl := table[D](t, b, nil)
	max := time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC)
	if err := tbl.Insert(b.ctx, &D{PK: "p", RK: "r", At: max}); err != nil {
		t.Fatal(err)
	}
	got, err := tbl.Get(b.ctx, "p", "r")
	if err != nil || !got.At.Equal(max.Truncate(100*time.Nanosecond)) {
		t.Fatalf("%+v, %v", got, err)
	}
}

// Non-transient transport errors (https against an http endpoint, a mistyped host) carry
// neither the SAS signature nor the URL query, in error text or in logs.
func TestTransportErrorsCarryNoSecrets(t *testing.T) {
	t.Parallel()
	core, logs := observer.New(zap.DebugLevel)
	server := testenv.Server(t)
	httpsURL := strings.Replace(server.TableURL, "http://", "https://", 1)
	const token = "sv=2019-02-02&tn=T&sp=raud&se=2099-01-01T00%3A00%3A00Z&sig=U0VDUkVUU0lHTkFUVVJF"
	var texts []string
	for _, endpoint := range []string{httpsURL, "http://127.0.0.1:1/devstoreaccount1"} {
		svc, err := repo.NewTablesWithSAS(endpoint, token, nil)
		if err != nil {
			t.Fatal(err)
		}
		tbl, err := repo.New[Counter](svc, "Tab", &repo.Options{Logger: zap.New(core),
			Retry: retry.Policy{Delay: time.Millisecond, MinDelay: time.Millisecond, MaxRetries: 2}})
		if err != nil {
			t.Fatal(err)
		}
		for _, err := range []error{
			tbl.Insert(t.Context(), &Counter{PK: "p", RK: "r"}),
			tbl.Update(t.Context(), &Counter{PK: "p", RK: "r", ETag: `W/"x"`}, nil),
			func() error { _, err := tbl.Get(t.Context(), "p", "r"); return err }(),
			func() error {
				_, err := repo.Submit(t.Context(), tbl.InsertAction(&Counter{PK: "p", RK: "r"}))
				return err
			}(),
		} {
			if err == nil {
				t.Fatal("a request to a wrong endpoint succeeded")
			}
			texts = append(texts, err.Error())
		}
	}
	if logs.Len() == 0 {
		t.Fatal("no retry was logged: the refused connection should have been retried")
	}
	for _, e := range logs.All() {
		texts = append(texts, e.Message)
		for _, v := range e.ContextMap() {
			if s, ok := v.(string); ok {
				texts = append(texts, s)
			}
		}
	}
	for _, text := range texts {
		for _, secret := range []string{"sig=", "se=", "sp=", "U0VDUkVUU0lHTkFUVVJF", "AccountKey"} {
			if strings.Contains(text, secret) {
				t.Errorf("%q appears in %q", secret, text)
			}
		}
	}
}

// An insert lands, its response is lost, the table is deleted before the retry: the
// retry meets 404 TableNotFound. The write happened (and was then destroyed with its
// table); ErrNotFound is listed among the refusals that must not be returned for a write
// that happened.
func TestInsertLandedThenTableDeletedIsOutcomeUnknown(t *testing.T) {
	t.Parallel()
	for _, track := range []bool{false, true} {
		b := setup(t, true)
		tbl := table[Counter](t, b, &repo.Options{TrackWrites: track, Logger: onRetry(func() {
			if _, err := testenv.TableService(t).DeleteTable(b.ctx, b.name, nil); err != nil {
				t.Error(err)
			}
		})})
		b.proxy.AddRule(faultproxy.Rule{Name: "lost", Match: faultproxy.IsInsertEntity, Times: 1, Action: faultproxy.DropAfterForward()})
		err := tbl.Insert(b.ctx, &Counter{PK: "c", RK: "1"})
		if !errors.Is(err, repo.ErrOutcomeUnknown) {
			t.Errorf("track=%v: insert that landed, table deleted before the retry: %v (ErrNotFound=%v), want ErrOutcomeUnknown", track, err, errors.Is(err, repo.ErrNotFound))
		}
	}
}

// Context cancelled while the request is held at the proxy (it may or may not be
// forwarded later): the answer is ErrOutcomeUnknown, never nil or a refusal.
func TestCancelledMidRequestIsOutcomeUnknown(t *testing.T) {
	t.Parallel()
	for _, track := range []bool{false, true} {
		b := setup(t, true)
		tbl := table[Counter](t, b, &repo.Options{TrackWrites: track})
		mustInsertCounter(t, tbl, 5)
		a, _ := tbl.Get(b.ctx, "c", "1")
		for _, op := range []string{"insert", "update", "delete", "submit"} {
			ps := b.proxy.PauseAt("hold-"+op, func(r *http.Request) bool { return faultproxy.IsEntityWrite(r) || faultproxy.IsBatch(r) }, 1)
			ctx, cancel := context.WithCancel(b.ctx)
			done := make(chan error, 1)
			go func() {
				switch op {
				case "insert":
					done <- tbl.Insert(ctx, &Counter{PK: "c", RK: "new"})
				case "update":
					a.N++
					done <- tbl.Update(ctx, &a, nil)
				case "delete":
					done <- tbl.Delete(ctx, "c", "1", &repo.DeleteOptions{ETag: a.ETag})
				case "submit":
					_, err := repo.Submit(ctx, tbl.InsertAction(&Counter{PK: "c", RK: "tx"}))
					done <- err
				}
			}()
			if err := ps.Wait(b.ctx); err != nil {
				t.Fatal(err)
			}
			cancel()
			err := <-done
			ps.Release()
			if !errors.Is(err, repo.ErrOutcomeUnknown) {
				t.Errorf("track=%v %s cancelled mid-request: %v, want ErrOutcomeUnknown", track, op, err)
			}
		}
	}
}
