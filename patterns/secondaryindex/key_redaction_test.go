package secondaryindex_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/codes"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/tablepatterns/tablepatterns/internal/faultproxy"
	"github.com/tablepatterns/tablepatterns/internal/telemetry"
	"github.com/tablepatterns/tablepatterns/internal/telemetry/telemetrytest"
	"github.com/tablepatterns/tablepatterns/patterns/consistency"
	"github.com/tablepatterns/tablepatterns/patterns/internal/testbed"
	"github.com/tablepatterns/tablepatterns/patterns/secondaryindex"
	"github.com/tablepatterns/tablepatterns/repo"
)

// logMentions returns the first entry of logs (message or field) that carries text, as
// "message field=value", or "".
func logMentions(logs []observer.LoggedEntry, text string) string {
	for _, e := range logs {
		if strings.Contains(e.Message, text) {
			return e.Message
		}
		enc := zapcore.NewMapObjectEncoder()
		for _, f := range e.Context {
			f.AddTo(enc)
		}
		for k, v := range enc.Fields {
			if s := fmt.Sprint(v); strings.Contains(s, text) {
				return fmt.Sprintf("%s %s=%s", e.Message, k, s)
			}
		}
	}
	return ""
}

// retried returns the "retrying" entries of logs.
func retried(logs *observer.ObservedLogs) []observer.LoggedEntry {
	return logs.FilterMessage("retrying").All()
}

// A unique insert refused because the e-mail is taken fails its transaction; the
// transaction's span records the refusal's class, never the copy's key, which holds the
// e-mail.
func TestIntraRefusedInsertSpanNeverCarriesTheValue(t *testing.T) {
	t.Parallel()
	telemetrytest.Install()
	b := setup(t, false)
	x := b.intra(t, byEmail)
	const email = "taken.mailbox@contoso.com"
	if err := x.Insert(b.Ctx, emp(1, "Ann", "Lee", email)); err != nil {
		t.Fatal(err)
	}
	if err := x.Insert(b.Ctx, emp(2, "Bob", "Ray", email)); !errors.Is(err, repo.ErrAlreadyExists) {
		t.Fatalf("the insert of a taken e-mail: %v, want ErrAlreadyExists", err)
	}
	failed := 0
	for _, s := range telemetrytest.Find("repo.transaction", telemetry.KeyTable.String(b.Table)) {
		if s.Status.Code == codes.Error {
			failed++
		}
		if where := telemetrytest.Mentions(s, "taken.mailbox"); where != "" {
			t.Errorf("a transaction span carries the e-mail in its %s", where)
		}
	}
	if failed != 1 {
		t.Fatalf("%d failed transaction spans, want the refused insert's", failed)
	}
}

// A 503 on the read of an orphan copy during Repair is retried; the retry's log entry
// names neither the copy's key nor anything else that holds the e-mail.
func TestIntraRepairRetryLogNeverCarriesACopyKey(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	core, logs := observer.New(zap.WarnLevel)
	x := b.intraLogged(t, zap.New(core), nil, byEmail)
	if err := x.Insert(b.Ctx, emp(1, "Ann", "Lee", "orphan.mailbox@contoso.com")); err != nil {
		t.Fatal(err)
	}
	// The primary row goes behind the index's back: its e-mail copy is an orphan.
	if err := b.Raw.Delete(b.Ctx, "Sales", "empid_000001", nil); err != nil {
		t.Fatal(err)
	}
	b.Proxy().AddRule(faultproxy.Rule{Name: "busy copy read", Times: 1, Action: faultproxy.Respond(503, "ServerBusy"),
		Match: faultproxy.All(faultproxy.IsGetEntity, faultproxy.PathContains("email_"))})
	r, err := x.Repair(b.Ctx, "Sales", nil)
	if err != nil || r.Orphan != 1 || r.Repaired != 1 {
		t.Fatalf("repair: %+v %v, want the orphan deleted", r, err)
	}
	if b.Proxy().Fired("busy copy read") != 1 {
		t.Fatal("the copy read was not refused: the test proves nothing")
	}
	got := retried(logs)
	if len(got) == 0 {
		t.Fatal("the refused copy read was not logged as retried")
	}
	if where := logMentions(got, "orphan.mailbox"); where != "" {
		t.Fatalf("a retry log entry carries the e-mail: %s", where)
	}
}

// The backfill reads each unique copy before it rewrites it: a 503 on that read is
// retried without logging the copy's key.
func TestIntraBackfillRetryLogNeverCarriesACopyKey(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	core, logs := observer.New(zap.WarnLevel)
	x := b.intraLogged(t, zap.New(core), nil, byEmail)
	if err := x.Insert(b.Ctx, emp(1, "Ann", "Lee", "backfill.mailbox@contoso.com")); err != nil {
		t.Fatal(err)
	}
	b.Proxy().AddRule(faultproxy.Rule{Name: "busy copy read", Times: 1, Action: faultproxy.Respond(503, "ServerBusy"),
		Match: faultproxy.All(faultproxy.IsGetEntity, faultproxy.PathContains("email_"))})
	if _, err := x.BackfillPartition(b.Ctx, "Sales", nil); err != nil {
		t.Fatal(err)
	}
	if b.Proxy().Fired("busy copy read") != 1 || len(retried(logs)) == 0 {
		t.Fatal("the copy read was not refused and retried: the test proves nothing")
	}
	if where := logMentions(retried(logs), "backfill.mailbox"); where != "" {
		t.Fatalf("a retry log entry carries the e-mail: %s", where)
	}
}

// Lookup reads a copy by its key: a 503 on it is retried without logging the key, and
// the error of a failed lookup does not name it either.
func TestIntraLookupNeverLogsOrReturnsTheCopyKey(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	core, logs := observer.New(zap.WarnLevel)
	// Three retries: the refused lookup is retried, and a server busy every time exhausts
	// them in four requests (each 503 also slows the client's retry.Gate: thirty cost
	// seconds).
	few := testbed.FastRetry()
	few.MaxRetries = 3
	x, err := intraOn(b.Clients.Tables, b.Table, byID, []secondaryindex.Index[Employee]{byEmail}, &repo.Options{Retry: few, Logger: zap.New(core)})
	if err != nil {
		t.Fatal(err)
	}
	if err := x.Insert(b.Ctx, emp(1, "Ann", "Lee", "lookup.mailbox@contoso.com")); err != nil {
		t.Fatal(err)
	}
	b.Proxy().AddRule(faultproxy.Rule{Name: "busy lookup", Times: 1, Action: faultproxy.Respond(503, "ServerBusy"),
		Match: faultproxy.All(faultproxy.IsGetEntity, faultproxy.PathContains("email_"))})
	if got, err := x.Lookup(b.Ctx, "Sales", "email", "lookup.mailbox@contoso.com"); err != nil || got.EmployeeID != "000001" {
		t.Fatalf("lookup: %+v %v", got, err)
	}
	if len(retried(logs)) == 0 || b.Proxy().Fired("busy lookup") != 1 {
		t.Fatal("the refused lookup was not retried: the test proves nothing")
	}
	if where := logMentions(retried(logs), "lookup.mailbox"); where != "" {
		t.Fatalf("a retry log entry carries the e-mail: %s", where)
	}
	_, err = x.Lookup(b.Ctx, "Sales", "email", "absent.mailbox@contoso.com")
	if !errors.Is(err, repo.ErrNotFound) {
		t.Fatalf("lookup of an absent e-mail: %v, want ErrNotFound", err)
	}
	var re *repo.Error
	if !errors.As(err, &re) {
		t.Fatalf("lookup of an absent e-mail: %T does not reach *repo.Error", err)
	}
	if strings.Contains(err.Error(), "absent.mailbox") {
		t.Fatalf("the error of a lookup names the copy's key: %v", err)
	}
	b.Proxy().AddRule(faultproxy.Rule{Name: "always busy", Action: faultproxy.Respond(503, "ServerBusy"),
		Match: faultproxy.All(faultproxy.IsGetEntity, faultproxy.PathContains("email_"))})
	_, err = x.Lookup(b.Ctx, "Sales", "email", "busy.mailbox@contoso.com")
	if !errors.Is(err, repo.ErrTransient) {
		t.Fatalf("lookup under a busy server: %v, want ErrTransient", err)
	}
	if strings.Contains(err.Error(), "busy.mailbox") {
		t.Fatalf("the error of an exhausted lookup names the copy's key: %v", err)
	}
	if where := logMentions(retried(logs), "busy.mailbox"); where != "" {
		t.Fatalf("a retry log entry carries the e-mail: %s", where)
	}
}

// An archive-entity job run by the worker: the spans of its enqueue and of its
// processing carry no key (the message's envelope id is built from the job's keys).
func TestArchiveWorkerSpansNeverCarryKeys(t *testing.T) {
	t.Parallel()
	telemetrytest.Install()
	b, x := intraStaff(t)
	a, target := b.Archiver(x)
	q, name := b.Queue()
	job := b.ArchiveJob(target, "Sales", "empid_000001")
	if err := consistency.EnqueueArchiveEntity(b.Ctx, q, job); err != nil {
		t.Fatal(err)
	}
	testbed.Drain(t, b.Worker(q, a.Register))
	b.MustBeArchived(target, "Sales", "empid_000001")
	queue := telemetry.KeyQueue.String(name)
	spans := append(telemetrytest.Find("queueworker.enqueue", queue), telemetrytest.Find("queueworker.process", queue)...)
	if len(spans) < 2 {
		t.Fatalf("%d enqueue and process spans for the queue, want both", len(spans))
	}
	for _, s := range spans {
		for _, secret := range []string{"empid_000001", "000001"} {
			if where := telemetrytest.Mentions(s, secret); where != "" {
				t.Errorf("the %s span carries %q in its %s", s.Name, secret, where)
			}
		}
	}
}

// A move whose companion's copy changes between the companion's read and the move's
// transaction starts over; the restart, logged by the move's retry, names the action,
// never the copy's key, which holds the e-mail.
func TestMoveRestartNeverNamesACompanionCopy(t *testing.T) {
	t.Parallel()
	b, x := intraStaff(t)
	core, logs := observer.New(zap.WarnLevel)
	policy := testbed.FastRetry()
	policy.Logger = zap.New(core)
	a, err := consistency.New(b.Clients, &consistency.Options{Retry: policy, Companions: map[string][]consistency.Companion{b.Table: {x}}})
	if err != nil {
		t.Fatal(err)
	}
	target := b.NewTableName()
	b.MustMoveHeld(a, target, "Sales", "empid_000001", func() {
		// The copy changes under the held transaction: its conditional delete fails.
		cp, err := b.Raw.Get(b.Ctx, "Sales", "email_jun@contoso.com")
		if err != nil {
			t.Fatal(err)
		}
		if err := b.Raw.Update(b.Ctx, &cp, &repo.UpdateOptions{Mode: repo.Merge}); err != nil {
			t.Fatal(err)
		}
	})
	got := retried(logs)
	if len(got) == 0 {
		t.Fatal("the move did not restart: the test proves nothing")
	}
	if where := logMentions(got, "jun@contoso"); where != "" {
		t.Fatalf("the move's restart log carries the e-mail: %s", where)
	}
}

// Inter's Lookup of a value no entity holds answers ErrNotFound as Intra's does: its text
// names the index and the partition, never the value looked up (the key of the copy it
// looked for).
func TestInterLookupNotFoundNeverCarriesTheValue(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	q, _ := b.Queue()
	x := b.inter(t, q, -1, byEmail)
	if err := x.CreateIfNotExists(b.Ctx); err != nil {
		t.Fatal(err)
	}
	_, err := x.Lookup(b.Ctx, "Sales", "email", "lookup.secret@contoso.com")
	if !errors.Is(err, repo.ErrNotFound) {
		t.Fatalf("lookup of a value nobody holds: %v; want ErrNotFound", err)
	}
	if s := fmt.Sprintf("%v %+v", err, err); strings.Contains(s, "lookup.secret") {
		t.Errorf("the error carries the value looked up: %s", s)
	}
}

// Delete by a copy's key reads that copy first: a 503 on the read is retried without
// logging the key, and the errors of a delete through a gone copy (with or without the
// ETag read) do not name it either.
func TestIntraDeleteByACopysKeyNeverLogsOrReturnsIt(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	core, logs := observer.New(zap.WarnLevel)
	x := b.intraLogged(t, zap.New(core), nil, byEmail)
	if err := x.Insert(b.Ctx, emp(1, "Ann", "Lee", "delete.mailbox@contoso.com")); err != nil {
		t.Fatal(err)
	}
	read, err := x.Lookup(b.Ctx, "Sales", "email", "delete.mailbox@contoso.com")
	if err != nil {
		t.Fatal(err)
	}
	b.Proxy().AddRule(faultproxy.Rule{Name: "busy copy read", Times: 1, Action: faultproxy.Respond(503, "ServerBusy"),
		Match: faultproxy.All(faultproxy.IsGetEntity, faultproxy.PathContains("email_"))})
	if err := x.Delete(b.Ctx, "Sales", read.RowKey, &repo.DeleteOptions{ETag: read.ETag}); err != nil {
		t.Fatal(err)
	}
	if len(retried(logs)) == 0 || b.Proxy().Fired("busy copy read") != 1 {
		t.Fatal("the refused copy read was not retried: the test proves nothing")
	}
	if where := logMentions(retried(logs), "delete.mailbox"); where != "" {
		t.Fatalf("a retry log entry carries the e-mail: %s", where)
	}
	for name, opts := range map[string]*repo.DeleteOptions{"unconditional": nil, "with the ETag read": {ETag: read.ETag}} {
		err := x.Delete(b.Ctx, "Sales", read.RowKey, opts)
		want := repo.ErrNotFound
		if opts != nil {
			want = repo.ErrPreconditionFailed
		}
		if !errors.Is(err, want) {
			t.Fatalf("%s delete through a gone copy: %v, want %v", name, err, want)
		}
		if strings.Contains(err.Error(), "delete.mailbox") {
			t.Fatalf("%s delete through a gone copy: the error names the copy's key: %v", name, err)
		}
	}
}
