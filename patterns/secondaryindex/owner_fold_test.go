package secondaryindex_test

import (
	"errors"
	"strings"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/internal/errs"
	"github.com/tablepatterns/tablepatterns/internal/faultproxy"
	"github.com/tablepatterns/tablepatterns/patterns/internal/testbed"
	"github.com/tablepatterns/tablepatterns/patterns/secondaryindex"
	"github.com/tablepatterns/tablepatterns/repo"
)

// Tests of the owner rule's fold: what a copy's named owner is worth, and what errors
// about a copy say.

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

// A copy names an owner that is live but holds another value now (its email changed
// around the package): it is not that entity's any more. Backfill, which does not load
// the partition, reads the named owner's primary row (one point read) and takes the
// copy for the entity that has the value, instead of leaving it as "another's".
func TestOwnerBackfillTakesCopyWhoseNamedOwnerHoldsAnotherValue(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	x := b.intra(t, byEmail)
	for _, e := range []*Employee{emp(3, "Cy", "Moved", "x@contoso.com"), emp(2, "Bo", "Here", "y@contoso.com")} {
		if err := x.Insert(b.Ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	// Around the package: employee 3 now has z@ (its x@ copy stays), employee 2 has x@.
	for id, mail := range map[string]string{"empid_000003": "z@contoso.com", "empid_000002": "x@contoso.com"} {
		if err := b.Raw.Upsert(b.Ctx, &codec.Entity{PartitionKey: "Sales", RowKey: id, Properties: map[string]any{"Email": mail}},
			&repo.UpsertOptions{Mode: repo.Merge}); err != nil {
			t.Fatal(err)
		}
	}
	mark := b.Proxies.Table.Count()
	cp, err := x.BackfillPartition(b.Ctx, "Sales", &secondaryindex.BackfillOptions{Limit: 1, PageSize: 1}) // employee 2 only
	if err != nil || cp.Written != 1 {
		t.Fatalf("backfill of employee 2: %+v %v, want it written", cp, err)
	}
	// 1 page, 1 read of the copy, 1 point read of the named owner, 1 transaction.
	if n := requestsTo(b.Proxies.Table, mark); n != 4 {
		t.Errorf("the backfill of one entity sent %d requests, want 4", n)
	}
	if got, err := x.Lookup(b.Ctx, "Sales", "email", "x@contoso.com"); err != nil || got.EmployeeID != "000002" {
		t.Fatalf("lookup of x@ after the backfill: %+v %v, want employee 000002", got, err)
	}
}

// A Conflict counts in Drift, and a verify job logs it as drift: two employees share an
// email in data older than the index, so one of them cannot be found by it.
func TestOwnerVerifyJobCountsConflictAsDrift(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	q, _ := b.Queue()
	old := b.intra(t)
	for _, e := range []*Employee{emp(1, "Ann", "Lee", "same@contoso.com"), emp(2, "Bo", "Kim", "same@contoso.com")} {
		if err := old.Insert(b.Ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	core, logs := observer.New(zapcore.InfoLevel)
	x := b.intraLogged(t, zap.New(core), q, byEmail)
	if _, err := x.BackfillPartition(b.Ctx, "Sales", nil); err != nil {
		t.Fatal(err)
	}
	if r, err := x.Verify(b.Ctx, "Sales", nil); err != nil || r.Conflict != 1 || r.Drift() != 1 {
		t.Fatalf("verify: %+v %v, want one Conflict counted in Drift", r, err)
	}
	w := b.Worker(q, x.Register)
	if err := x.StartVerify(b.Ctx, "Sales"); err != nil {
		t.Fatal(err)
	}
	testbed.Drain(t, w)
	lines := logs.FilterMessage("index verify").All()
	if len(lines) != 1 {
		t.Fatalf("%d verify lines, want 1", len(lines))
	}
	if f := lines[0].ContextMap(); f["conflict"] != int64(1) || f["drift"] != int64(1) {
		t.Fatalf("verify line %v, want conflict 1 and drift 1", f)
	}
}

// boundSecret is secret with the primary value's property encrypted too: what the
// package documentation advises for an index on an encrypted type, so that a copy's
// owner is bound to the copy by the encryption.
type boundSecret struct {
	Dept     string `table:",pk"`
	RK       string `table:",rk"`
	ID       string `table:"EmployeeId,encrypt"`
	SSN      string `table:"SSN,encrypt"`
	SSNIndex string `table:"SSNIndex"`
	ETag     string `table:",etag"`
}

// With the owner property encrypted, a writer of the table without the key who renames
// a copy's owner breaks the copy's authentication: no lookup returns it (so no decrypted
// value comes out), Verify reports it Stale, Repair writes it again as the entity's, and
// an archive move then removes it.
func TestOwnerEncryptedOwnerPropertyBindsTheCopy(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	byID := secondaryindex.Index[boundSecret]{Name: "id", Value: func(s *boundSecret) string { return s.ID }}
	bySSN := secondaryindex.Index[boundSecret]{Name: "ssn", Value: func(s *boundSecret) string { return s.SSNIndex }}
	x, err := intraOn(b.Clients.Tables, b.Table, byID, []secondaryindex.Index[boundSecret]{bySSN},
		&repo.Options{Encryption: &codec.Encryption{Key: localKey(t)}, Retry: testbed.FastRetry()})
	if err != nil {
		t.Fatal(err)
	}
	if err := x.Insert(b.Ctx, &boundSecret{Dept: "Sales", ID: "000001", SSN: "078-05-1120", SSNIndex: "h1"}); err != nil {
		t.Fatal(err)
	}
	if err := b.Raw.Upsert(b.Ctx, &codec.Entity{PartitionKey: "Sales", RowKey: "ssn_h1",
		Properties: map[string]any{"EmployeeId": "999999"}}, &repo.UpsertOptions{Mode: repo.Merge}); err != nil {
		t.Fatal(err)
	}
	if got, err := x.Lookup(b.Ctx, "Sales", "ssn", "h1"); err == nil || got.SSN != "" {
		t.Fatalf("the renamed copy reads %+v %v, want a refusal", got, err)
	}
	r, err := x.Repair(b.Ctx, "Sales", nil)
	if err != nil || r.Stale != 1 || r.Repaired != 1 {
		t.Fatalf("repair: %+v %v, want the renamed copy Stale and rewritten", r, err)
	}
	if got, err := x.Lookup(b.Ctx, "Sales", "ssn", "h1"); err != nil || got.ID != "000001" {
		t.Fatalf("after the repair the copy reads %+v %v, want employee 000001's", got, err)
	}
	a, target := b.Archiver(x)
	b.MustMove(a, target, "Sales", "id_000001")
	if got, err := x.Lookup(b.Ctx, "Sales", "ssn", "h1"); !errors.Is(err, repo.ErrNotFound) {
		t.Fatalf("after the move the value still finds %+v %v", got, err)
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

// A partial unique copy equal to the projection of exactly one of two employees that
// share its value: that one is its owner, and only the other is a Conflict (before, the
// other read as Stale, which Repair "fixes" by taking the copy over).
func TestOwnerVerifyPartialCopyOfOneOfTwoIsAConflictForTheOther(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	x := b.intra(t, byMailPartial)
	if err := x.Insert(b.Ctx, emp(1, "Jun", "Jones", "shared@contoso.com")); err != nil {
		t.Fatal(err)
	}
	if err := x.Backfill(b.Ctx, []*Employee{emp(3, "Kim", "Lee", "shared@contoso.com")}); err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		r, err := x.Repair(b.Ctx, "Sales", nil)
		if err != nil || r.Conflict != 1 || r.Drift() != 1 || r.Repaired != 0 || r.Samples[0].RowKey != "empid_000001" {
			t.Fatalf("repair %d: %+v %v, want employee 000001 a Conflict and nothing written", i, r, err)
		}
	}
	if got, err := x.Lookup(b.Ctx, "Sales", "mail", "shared@contoso.com"); err != nil || got.FirstName != "Kim" {
		t.Fatalf("the copy after the repairs: %+v %v, want Kim's", got, err)
	}
}

// busyIntra is an Intra of employees with the email index whose requests are retried
// once: enough to exhaust against a proxy rule that answers 503 every time.
func (b *bed) busyIntra(t *testing.T) *secondaryindex.Intra[Employee] {
	t.Helper()
	once := testbed.FastRetry()
	once.MaxRetries = 1
	x, err := intraOn(b.Clients.Tables, b.Table, byID, []secondaryindex.Index[Employee]{byEmail}, &repo.Options{Retry: once})
	if err != nil {
		t.Fatal(err)
	}
	return x
}
