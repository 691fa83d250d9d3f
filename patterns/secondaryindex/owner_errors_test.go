package secondaryindex_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/errs"
	"github.com/tablepatterns/tablepatterns/internal/faultproxy"
	"github.com/tablepatterns/tablepatterns/patterns/internal/testbed"
	"github.com/tablepatterns/tablepatterns/patterns/secondaryindex"
	"github.com/tablepatterns/tablepatterns/queueworker"
	"github.com/tablepatterns/tablepatterns/repo"
	"github.com/tablepatterns/tablepatterns/repo/filter"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

// A decode error that is not the data's fault (the key holder out of reach) is returned,
// and its text, which the worker logs on every failed delivery of a verify job (Redact
// keeps keys), names the index and the entity, never the copy's RowKey ("ssn_" + the
// indexed value): the log leaves the value out, as the job's own report line does.
func TestOwnerKeyOutageNeverLogsTheIndexedValue(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	const value = "blind7f3a9cVALUE"
	kek := &flakyKey{KeyEncryptionKey: localKey(t)}
	kek.left.Store(1 << 30)
	q, _ := b.Queue()
	tb, err := repo.New[secret](b.Clients.Tables, b.Table, &repo.Options{Encryption: &codec.Encryption{Key: kek}, Retry: testbed.FastRetry()})
	if err != nil {
		t.Fatal(err)
	}
	x, err := secondaryindex.NewIntra(tb, secondaryindex.Index[secret]{Name: "id", Value: func(s *secret) string { return s.ID }},
		[]secondaryindex.Index[secret]{{Name: "ssn", Value: func(s *secret) string { return s.SSNIndex }}},
		&secondaryindex.IntraOptions{Conflict: testbed.FastRetry(), Queue: q})
	if err != nil {
		t.Fatal(err)
	}
	if err := x.Insert(b.Ctx, &secret{Dept: "Sales", ID: "000001", SSN: "078-05-1120", SSNIndex: value}); err != nil {
		t.Fatal(err)
	}
	kek.left.Store(1) // the primary decrypts; the copy does not (the key holder went away)
	_, verr := x.Verify(b.Ctx, "Sales", nil)
	if verr == nil {
		t.Fatal("verify succeeded while the key holder is out of reach")
	}
	if text := errs.Redact(verr); strings.Contains(text, value) {
		t.Errorf("the verify error, as the worker logs it, carries the indexed value: %s", text)
	}

	// The same through a verify job on a worker whose log is observed.
	core, logs := observer.New(zapcore.DebugLevel)
	reg := queueworker.NewRegistry()
	if err := x.Register(reg); err != nil {
		t.Fatal(err)
	}
	w, err := queueworker.New(queueworker.Config{Queue: q.Queue(), Service: b.Clients.Queues, Registry: reg,
		Logger: zap.New(core), MaxDequeueCount: 1, Retry: testbed.FastRetry(),
		MinPollInterval: 10 * time.Millisecond, MaxPollInterval: 200 * time.Millisecond, ShutdownTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	kek.left.Store(1)
	if err := x.StartVerify(b.Ctx, "Sales"); err != nil {
		t.Fatal(err)
	}
	testbed.Drain(t, w)
	for _, l := range logs.All() {
		line := l.Message
		for k, v := range l.ContextMap() {
			line += " " + k + "=" + strings.TrimSpace(strings.ReplaceAll(toString(v), "\n", " "))
		}
		if strings.Contains(line, value) {
			t.Errorf("the worker's log carries the indexed value: %s", line)
		}
	}
}

// A context cancelled while copyOwner decrypts the copy is no evidence about the copy:
// Verify and Removal must fail with the context's error, never report the copy as Stale
// or of unknown owner.
func TestOwnerContextCancelledDuringCopyDecodeDecidesNothing(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	kek := &cancelKey{KeyEncryptionKey: localKey(t)}
	x := secretIntraWith(t, b, true, kek)
	if err := x.Insert(b.Ctx, &secret{Dept: "Sales", ID: "000001", SSN: "078-05-1120", SSNIndex: "h1"}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(b.Ctx)
	kek.cancel = cancel
	kek.n.Store(2) // the primary decrypts, the copy's decryption meets the cancellation
	r, err := x.Verify(ctx, "Sales", nil)
	if err == nil || !errors.Is(err, context.Canceled) || errors.Is(err, repo.ErrInvalidInput) {
		t.Fatalf("verify cancelled during the copy's decode: %+v %v, want context.Canceled", r, err)
	}
	e := b.row(t, "Sales", "id_000001")
	ctx, cancel = context.WithCancel(b.Ctx)
	kek.cancel = cancel
	kek.n.Store(2) // e decrypts, the copy does not
	rm, err := x.Removal(ctx, e)
	if err == nil || !errors.Is(err, context.Canceled) || errors.Is(err, repo.ErrInvalidInput) {
		t.Fatalf("removal cancelled during the copy's decode: %+v %v, want context.Canceled", rm, err)
	}
}

// A read of a unique copy that fails with 503 ServerBusy (retries exhausted) fails the
// move's Removal and the backfill; the errors name the index and the entity's primary
// keys, never the copy's key (the indexed value), and keep the cause reachable: the
// sentinel ErrTransient and the *errs.ServiceError with its 503.
func TestOwnerCopyErrorsNameTheEntityNotTheValue(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	const value = "hidden7q@contoso.com"
	x := b.busyIntra(t)
	if err := x.Insert(b.Ctx, emp(1, "Ann", "Lee", value)); err != nil {
		t.Fatal(err)
	}
	e := b.row(t, "Sales", "empid_000001")
	b.Proxies.Table.AddRule(faultproxy.Rule{Name: "busy copy", Match: faultproxy.All(faultproxy.IsGetEntity, faultproxy.PathContains("email_")),
		Action: faultproxy.Respond(503, "ServerBusy")})
	check := func(what string, err error) {
		t.Helper()
		var se *errs.ServiceError
		switch {
		case err == nil:
			t.Fatalf("%s succeeded while the copy cannot be read", what)
		case strings.Contains(err.Error(), "hidden7q") || strings.Contains(errs.Redact(err), "hidden7q"):
			t.Errorf("%s: the error carries the indexed value: %v", what, err)
		case !strings.Contains(err.Error(), "empid_000001") || !strings.Contains(err.Error(), `"email"`) || !strings.Contains(err.Error(), "503 ServerBusy"):
			t.Errorf("%s: the error does not name the index, the entity and the class: %v", what, err)
		case !errors.Is(err, errs.ErrTransient) || !errors.As(err, &se) || se.StatusCode != 503 || errors.Is(err, errs.ErrInvalidInput):
			t.Errorf("%s: the cause is not reachable (want ErrTransient and a 503 ServiceError): %v", what, err)
		}
	}
	_, err := x.Removal(b.Ctx, e)
	check("removal", err)
	_, err = x.BackfillPartition(b.Ctx, "Sales", nil)
	check("backfill", err)
}

// A Backfill whose transaction (the entity and its copies) fails as a whole, not on one
// action, names the entity it was writing and the cause's class, never a copy's key: an
// answer for the whole transaction is not proven to concern the primary alone.
func TestOwnerBackfillTransactionErrorNamesTheEntity(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	const value = "hidden8r@contoso.com"
	x := b.busyIntra(t)
	if err := b.Raw.Upsert(b.Ctx, &codec.Entity{PartitionKey: "Sales", RowKey: "empid_000001",
		Properties: map[string]any{"EmployeeId": "000001", "FirstName": "Ann", "LastName": "Lee", "Email": value}}, nil); err != nil {
		t.Fatal(err)
	}
	b.Proxies.Table.AddRule(faultproxy.Rule{Name: "busy transaction", Match: faultproxy.IsBatch, Action: faultproxy.Respond(503, "ServerBusy")})
	_, err := x.BackfillPartition(b.Ctx, "Sales", nil)
	var se *errs.ServiceError
	switch {
	case err == nil:
		t.Fatal("backfill succeeded while every transaction is refused")
	case strings.Contains(errs.Redact(err), "hidden8r"):
		t.Errorf("the error carries the indexed value: %v", err)
	case !strings.Contains(err.Error(), "empid_000001") || !strings.Contains(err.Error(), "503 ServerBusy"):
		t.Errorf("the error does not name the entity and the class: %v", err)
	case !errors.Is(err, errs.ErrTransient) || !errors.As(err, &se) || se.StatusCode != 503:
		t.Errorf("the cause is not reachable (want ErrTransient and a 503 ServiceError): %v", err)
	}
}

// A backfill transaction whose outcome stays unknown because the retry's answer was a
// copy's (a 409 on the copy of an email), followed by a failed read of the primary copy
// to decide it: the error returned names the index and the entity, not the copy's key
// that the answer carries; errors.Is still finds ErrOutcomeUnknown and the read's 503.
func TestOwnerRewriteOutcomeUnknownOnACopyKeepsTheValueOut(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	const value = "hidden9k@contoso.com"
	old := b.intra(t)
	if err := old.Insert(b.Ctx, emp(1, "Ann", "Lee", value)); err != nil {
		t.Fatal(err)
	}
	x := b.busyIntra(t)
	secondaryindex.SetIntraAfterSubmit(x, func(error) error {
		// The answer a retried transaction met: the copy's insert refused (409).
		return &errs.OutcomeUnknownError{Op: "transaction", Resource: b.Table, PartitionKey: "Sales", RowKey: "empid_000001",
			Cause: errors.New("read: connection reset"),
			Err:   &repo.ActionError{Index: 1, PartitionKey: "Sales", RowKey: "email_" + value, StatusCode: 409, Code: "EntityAlreadyExists"}}
	})
	b.Proxies.Table.AddRule(faultproxy.Rule{Name: "busy primary", Match: faultproxy.All(faultproxy.IsGetEntity, faultproxy.PathContains("empid_")),
		Action: faultproxy.Respond(503, "ServerBusy")})
	_, err := x.BackfillPartition(b.Ctx, "Sales", nil)
	var se *errs.ServiceError
	switch {
	case err == nil:
		t.Fatal("backfill succeeded while its outcome is unknown and the primary cannot be read")
	case strings.Contains(errs.Redact(err), "hidden9k"):
		t.Errorf("the backfill's error carries the indexed value: %s", errs.Redact(err))
	case !errors.Is(err, errs.ErrOutcomeUnknown) || !errors.As(err, &se) || se.StatusCode != 503:
		t.Errorf("the causes are not reachable: %v", err)
	}
}

// Repair's read of an orphan copy fails with 503: the error names the index and the
// partition, not the orphan's key (the indexed value), and keeps the 503 reachable.
func TestOwnerRepairOrphanErrorKeepsTheValueOut(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	x := b.busyIntra(t)
	if err := b.Raw.Insert(b.Ctx, &codec.Entity{PartitionKey: "Sales", RowKey: "email_hidden3m@contoso.com",
		Properties: map[string]any{"EmployeeId": "000042"}}); err != nil {
		t.Fatal(err)
	}
	b.Proxies.Table.AddRule(faultproxy.Rule{Name: "busy copy", Match: faultproxy.All(faultproxy.IsGetEntity, faultproxy.PathContains("email_")),
		Action: faultproxy.Respond(503, "ServerBusy")})
	r, err := x.Repair(b.Ctx, "Sales", nil)
	var se *errs.ServiceError
	switch {
	case err == nil:
		t.Fatalf("repair succeeded while the orphan cannot be read: %+v", r)
	case strings.Contains(errs.Redact(err), "hidden3m") || !strings.Contains(err.Error(), `"email"`):
		t.Errorf("the repair's error: %s, want the index named and the value left out", errs.Redact(err))
	case !errors.As(err, &se) || se.StatusCode != 503:
		t.Errorf("the 503 is not reachable: %v", err)
	}
}

// A Repair that leaves a unique copy held by another entity says so as a repair, not as
// a backfill: two employees share an email in data older than the indexes; the backfill
// gives the copy to one and logs that it left it for the other; the other's copy in a
// second index, deleted by hand, is Missing, so Repair rewrites that employee and logs
// that it left the email copy once more.
func TestIntraRepairLogsItsOwnName(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	old := b.intra(t)
	for _, e := range []*Employee{emp(1, "Ann", "Lee", "same@contoso.com"), emp(2, "Bob", "Ray", "same@contoso.com")} {
		if err := old.Insert(b.Ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	core, logs := observer.New(zap.WarnLevel)
	x := b.intraLogged(t, zap.New(core), nil, byEmail, byLast)
	left := func(op string) {
		t.Helper()
		got := logs.TakeAll()
		if len(got) != 1 || got[0].Message != "secondaryindex: "+op+" left a unique copy held by another entity (Verify reports it as a conflict)" {
			t.Fatalf("%s logged %v, want one line saying the %s left a unique copy", op, got, op)
		}
	}
	if _, err := x.BackfillPartition(b.Ctx, "Sales", nil); err != nil {
		t.Fatal(err)
	}
	left("backfill")
	r, err := x.Verify(b.Ctx, "Sales", nil)
	// The Conflict is the only drift (a Conflict counts in Drift).
	if err != nil || r.Conflict != 1 || r.Drift() != 1 {
		t.Fatalf("verify: %+v %v, want one Conflict and no other drift", r, err)
	}
	loser := r.Samples[0].RowKey
	lasts, err := b.Raw.Collect(b.Ctx, repo.Query{Filter: filter.RowKeyPrefix("Sales", "last_")})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range lasts {
		if "empid_"+c.Properties["EmployeeId"].(string) == loser {
			if err := b.Raw.Delete(b.Ctx, "Sales", c.RowKey, nil); err != nil {
				t.Fatal(err)
			}
		}
	}
	if r, err := x.Repair(b.Ctx, "Sales", nil); err != nil || r.Missing != 1 || r.Repaired != 1 {
		t.Fatalf("repair: %+v %v, want the missing copy of %s written", r, err, loser)
	}
	left("repair")
}

// Attack on "a unique copy whose owner cannot be proven is never taken over": the copy
// of employee A's value cannot be decrypted because the key holder is out of reach, not
// because the copy is bad. A backfill of employee B (who shares A's value in data older
// than the index) reads B, then A's copy, whose decryption fails: that failure decides
// nothing (it is no evidence about the copy), so the backfill fails and leaves the copy
// with A, and so do Verify and an archive move's Removal, instead of reading the copy as
// one of unknown owner (which a backfill rewrites, and Verify reports as Stale).
func TestIntraKeyHolderOutageDecidesNoOwner(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	kek := &flakyKey{KeyEncryptionKey: localKey(t)}
	kek.left.Store(1 << 30)
	old, x := secretIntraWith(t, b, false, kek), secretIntraWith(t, b, true, kek)
	if err := x.Insert(b.Ctx, &secret{Dept: "Sales", ID: "000001", SSN: "078-05-1120", SSNIndex: "h1"}); err != nil {
		t.Fatal(err)
	}
	if err := old.Insert(b.Ctx, &secret{Dept: "Sales", ID: "000002", SSN: "219-09-9999", SSNIndex: "h1"}); err != nil {
		t.Fatal(err)
	}
	kek.left.Store(1) // B's primary copy decrypts; A's ssn copy does not
	cp, err := x.BackfillPartition(b.Ctx, "Sales", &secondaryindex.BackfillOptions{After: "id_000001"})
	if err == nil || errors.Is(err, repo.ErrInvalidInput) {
		t.Errorf("backfill of B while the key holder is out of reach: %+v %v, want its error (not a decision, not ErrInvalidInput)", cp, err)
	}
	kek.left.Store(2) // the primaries decrypt; the copy does not
	if r, err := x.Verify(b.Ctx, "Sales", nil); err == nil {
		t.Errorf("verify while the key holder is out of reach: %+v, want its error", r)
	}
	e := b.row(t, "Sales", "id_000002")
	kek.left.Store(1) // B decrypts; the copy does not
	if rm, err := x.Removal(b.Ctx, e); err == nil || errors.Is(err, repo.ErrInvalidInput) {
		t.Errorf("removal of B while the key holder is out of reach: %+v %v, want its error", rm, err)
	}
	kek.left.Store(1 << 30)
	got, err := x.Lookup(b.Ctx, "Sales", "ssn", "h1")
	if err != nil || got.ID != "000001" {
		t.Fatalf("the copy of h1 reads %+v %v, want A's (000001): an unreadable copy was taken over", got, err)
	}
}
