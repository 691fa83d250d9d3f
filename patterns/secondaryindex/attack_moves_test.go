package secondaryindex_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/internal/faultproxy"
	"github.com/tablepatterns/tablepatterns/patterns/consistency"
	"github.com/tablepatterns/tablepatterns/patterns/internal/testbed"
	"github.com/tablepatterns/tablepatterns/patterns/secondaryindex"
	"github.com/tablepatterns/tablepatterns/repo"
)

// Attacks on index-aware moves (issue 14 item 4): the Companion implementations of Intra
// and Inter as the single-entity archive move uses them.

// byMailPartial is a unique email index whose copies carry only what a mailing query
// needs: not the primary value (the employee id).
var byMailPartial = secondaryindex.Index[Employee]{Name: "mail", Value: func(e *Employee) string { return e.Email },
	Properties: []string{"FirstName", "Email"}}

// A forged primary row (stored data, untrusted) claims employee 2's email in a unique
// index whose copies do not carry the primary value. Archiving the forger must move the
// forger and leave employee 2's copy alone ("a copy that names another entity as its
// owner is left to it"; "never removes a copy that belongs to another entity").
func TestAttackArchiveIntraPartialCopyOfAnotherEntityIsKept(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	x := b.intra(t, byMailPartial)
	for _, e := range []*Employee{emp(1, "Jun", "Jones", "jun@contoso.com"), emp(2, "Amy", "Smith", "amy@contoso.com")} {
		if err := x.Insert(b.Ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Raw.Insert(b.Ctx, &codec.Entity{PartitionKey: "Sales", RowKey: "empid_000009",
		Properties: map[string]any{"EmployeeId": "000009", "FirstName": "Eve", "Email": "amy@contoso.com"}}); err != nil {
		t.Fatal(err)
	}
	a, target := b.Archiver(x)
	b.MustMove(a, target, "Sales", "empid_000009")
	if b.row(t, "Sales", "mail_amy@contoso.com") == nil {
		t.Fatal("archiving the forger deleted employee 2's email copy: employee 2 can no longer be looked up by email")
	}
	if got, err := x.Lookup(b.Ctx, "Sales", "mail", "amy@contoso.com"); err != nil || got.FirstName != "Amy" {
		t.Fatalf("employee 2 after the forger's move: %+v %v", got, err)
	}
}

// The same through the package's own API, without any forgery: Backfill does not check
// unique indexes against what is stored, so a backfilled employee 3 takes over the copy
// of the email employee 1 holds. Archiving employee 1 must leave employee 3's copy.
func TestAttackArchiveIntraPartialCopyTakenOverByBackfillIsKept(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	x := b.intra(t, byMailPartial)
	if err := x.Insert(b.Ctx, emp(1, "Jun", "Jones", "shared@contoso.com")); err != nil {
		t.Fatal(err)
	}
	if err := x.Backfill(b.Ctx, []*Employee{emp(3, "Kim", "Lee", "shared@contoso.com")}); err != nil {
		t.Fatal(err)
	}
	if got, err := x.Lookup(b.Ctx, "Sales", "mail", "shared@contoso.com"); err != nil || got.FirstName != "Kim" {
		t.Fatalf("before the move the copy is employee 3's: %+v %v", got, err)
	}
	a, target := b.Archiver(x)
	b.MustMove(a, target, "Sales", "empid_000001")
	if got, err := x.Lookup(b.Ctx, "Sales", "mail", "shared@contoso.com"); err != nil || got.FirstName != "Kim" {
		t.Fatalf("archiving employee 1 removed employee 3's copy: %+v %v", got, err)
	}
}

// Inter with SafetyDelay off has no Before: its only reconciliation is After's Notify.
// The delete lands and its response is lost: the move re-reads, finds the source gone
// and the copy written, and answers success — without running After. Inter's own
// Delete announces the entity in that very case ("without a safety message nothing else
// would reconcile its copies"); the move must too, or the copies stay findable forever.
func TestAttackArchiveInterNoSafetyLostDeleteResponseLeavesCopies(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	q, name := b.Queue()
	x := b.inter(t, q, -1, byEmail, byLast)
	w := b.worker(t, name, x)
	for _, e := range []*Employee{iemp(1, "Jun", "Jones", "jun@contoso.com"), iemp(2, "Amy", "Smith", "amy@contoso.com")} {
		if err := x.Insert(b.Ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	testbed.Drain(t, w)
	a, target := b.Archiver(x)
	b.Proxy().AddRule(faultproxy.Rule{Name: "lost", Match: faultproxy.MethodIs("DELETE"), Times: 1, Action: faultproxy.DropAfterForward()})
	b.MustMove(a, target, "Sales", "000001")
	if b.Proxy().Fired("lost") != 1 {
		t.Fatal("the response was never lost")
	}
	testbed.Drain(t, w)
	if b.row(t, "email_Sales", interKey("jun@contoso.com", "000001")) != nil {
		t.Fatal("the archived employee's email copy is still stored and no message will ever remove it")
	}
	interGone(t, b, x)
}

// The same, with the prompt enqueue failing (the queue answers 503 until the retries
// give up): the move reports success; with SafetyDelay off nothing else will reconcile.
// Inter's own write returns an error in that case ("was written but its reconciliation
// could not be enqueued (call Notify)"); the move only logs it.
func TestAttackArchiveInterNoSafetyFailedNotifyIsOnlyLogged(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	q, name := b.Queue()
	x := b.inter(t, q, -1, byEmail, byLast)
	w := b.worker(t, name, x)
	if err := x.Insert(b.Ctx, iemp(1, "Jun", "Jones", "jun@contoso.com")); err != nil {
		t.Fatal(err)
	}
	testbed.Drain(t, w)
	a, target := b.Archiver(x)
	b.Proxies.Queue.AddRule(faultproxy.Rule{Name: "busy", Match: faultproxy.IsEnqueue, Action: faultproxy.Respond(503, "ServerBusy")})
	out, err := a.ArchiveEntity(b.Ctx, b.ArchiveJob(target, "Sales", "000001"))
	b.Proxies.Queue.ClearRules()
	testbed.Drain(t, w)
	copyLeft := b.row(t, "email_Sales", interKey("jun@contoso.com", "000001")) != nil
	if err == nil && copyLeft {
		t.Fatalf("the move answered %v with no error, and the archived employee's copy stays with no message to remove it", out)
	}
}

// A writer re-inserts an employee under the archived keys (with another email) right
// after the move's delete landed, while the move's safety reconciliation is still
// pending: the reconciliations that follow must keep the new employee's copies.
func TestAttackArchiveInterReinsertWhileReconciliationPending(t *testing.T) {
	t.Parallel()
	b, x, w := interStaff(t, false)
	a, target := b.Archiver(x)
	b.MustMove(a, target, "Sales", "000001")
	if err := x.Insert(b.Ctx, iemp(1, "Jun", "Jonas", "jun.new@contoso.com")); err != nil {
		t.Fatal(err)
	}
	testbed.Drain(t, w)
	got, err := x.Lookup(b.Ctx, "Sales", "email", "jun.new@contoso.com")
	if err != nil || got.LastName != "Jonas" {
		t.Fatalf("the re-inserted employee by its new email: %+v %v", got, err)
	}
	if _, err := x.Lookup(b.Ctx, "Sales", "email", "jun@contoso.com"); !errors.Is(err, repo.ErrNotFound) {
		t.Fatalf("the archived email: %v", err)
	}
	if got := ids(collect(t, x.Find(b.Ctx, "Sales", "last", "Jonas", nil))); got != "000001" {
		t.Fatalf("find Jonas: %q", got)
	}
	mustClean(t, b.Ctx, x, 2, "Sales")
}

// Before lands, then the delete is held past Within (SafetyDelay/2): the move abandons
// it and starts over. The safety message of the first attempt must not remove copies of
// an entity still there, and the rerun must end with the entity archived and its copies
// gone.
func TestAttackArchiveInterDeleteMissesWithin(t *testing.T) {
	t.Parallel()
	b, x, w := interStaff(t, true)
	a, target := b.Archiver(x)
	ps := b.Proxy().PauseAt("slow delete", faultproxy.MethodIs("DELETE"), 1)
	t.Cleanup(ps.Release)
	type result struct {
		out consistency.Outcome
		err error
	}
	done := make(chan result, 1)
	go func() {
		out, err := a.ArchiveEntity(b.Ctx, b.ArchiveJob(target, "Sales", "000001"))
		done <- result{out, err}
	}()
	testbed.WaitHeld(t, ps)
	// The held delete is abandoned when Within passes; the move starts over and its second
	// delete is not held.
	r := <-done
	ps.Release()
	if r.err != nil || r.out != consistency.OutcomeMoved {
		t.Fatalf("move: %v %v", r.out, r.err)
	}
	b.MustBeArchived(target, "Sales", "000001")
	testbed.Drain(t, w)
	interGone(t, b, x)
}

// Options.Companions names the table in another case than the Intra's table: the
// companions' actions and the move's delete cannot share a transaction. The move must be
// refused before anything is written ("never a half-applied move"): here it writes the
// archive copy first and then refuses, leaving the entity both in the archive and in the
// table with its copies.
func TestAttackArchiveIntraCompanionsKeyedInAnotherCase(t *testing.T) {
	t.Parallel()
	b, x := intraStaff(t)
	a, err := consistency.New(b.Clients, &consistency.Options{Retry: testbed.FastRetry(),
		Companions: map[string][]consistency.Companion{strings.ToLower(b.Table): {x}}})
	if err != nil {
		t.Fatal(err)
	}
	target := b.NewTableName()
	out, err := a.ArchiveEntity(b.Ctx, b.ArchiveJob(target, "Sales", "empid_000001"))
	t.Logf("move: %v %v", out, err)
	arch, _ := repo.New[codec.Entity](b.Direct.Tables, target, nil)
	_, aerr := arch.Get(b.Ctx, "Sales", "empid_000001")
	_, serr := b.Raw.Get(b.Ctx, "Sales", "empid_000001")
	switch {
	case err == nil && out == consistency.OutcomeMissing && serr == nil:
		t.Fatalf("the move answered %q while the entity is still in the table (it addressed the table as Options.Companions spells it, a table Azurite does not know): the job is done, nothing moved", out)
	case err == nil:
		b.MustBeArchived(target, "Sales", "empid_000001")
		intraGone(t, b, x, "jun@contoso.com")
	case aerr == nil && serr == nil:
		t.Fatalf("move refused (%v) after writing the archive copy: the entity is in the archive and still in the table with its copies", err)
	}
}

// A live writer changes the employee's email (its copy moves to another key) while the
// move's delete is held at the proxy, after Before enqueued the reconciliation: the
// delete meets 412, the move starts over, and once the worker settled neither the old nor
// the new email finds the archived employee.
func TestAttackArchiveInterWriterBetweenBeforeAndDelete(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	q, name := b.Queue()
	x := b.inter(t, q, safety, byEmail, byLast)
	w := b.worker(t, name, x)
	for _, e := range []*Employee{iemp(1, "Jun", "Jones", "jun@contoso.com"), iemp(2, "Amy", "Smith", "amy@contoso.com")} {
		if err := x.Insert(b.Ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	testbed.Drain(t, w)
	live, err := secondaryindex.NewInter(b.Direct.Tables, b.Table, q, []secondaryindex.Index[Employee]{byEmail, byLast},
		&secondaryindex.InterOptions{SafetyDelay: safety, Conflict: testbed.FastRetry(), Table: repo.Options{Retry: testbed.FastRetry()}})
	if err != nil {
		t.Fatal(err)
	}
	a, target := b.Archiver(x)
	ps := b.Proxy().PauseAt("held delete", faultproxy.MethodIs("DELETE"), 1)
	t.Cleanup(ps.Release)
	done := make(chan error, 1)
	go func() {
		_, err := a.ArchiveEntity(b.Ctx, b.ArchiveJob(target, "Sales", "000001"))
		done <- err
	}()
	testbed.WaitHeld(t, ps)
	cur, err := live.Get(b.Ctx, "Sales", "000001")
	if err != nil {
		t.Fatal(err)
	}
	cur.Email = "jun.jones@contoso.com"
	cur.LastName = "Jonas"
	if err := live.Update(b.Ctx, &cur); err != nil {
		t.Fatal(err)
	}
	ps.Release()
	if err := <-done; err != nil {
		t.Fatalf("move: %v", err)
	}
	b.MustBeArchived(target, "Sales", "000001")
	arch, _ := repo.New[codec.Entity](b.Direct.Tables, target, nil)
	if got, _ := arch.Get(b.Ctx, "Sales", "000001"); got.Properties["Email"] != "jun.jones@contoso.com" {
		t.Fatalf("archived %v, want the version the writer wrote", got.Properties["Email"])
	}
	testbed.Drain(t, w)
	for _, email := range []string{"jun@contoso.com", "jun.jones@contoso.com"} {
		if _, err := x.Lookup(b.Ctx, "Sales", "email", email); !errors.Is(err, repo.ErrNotFound) {
			t.Fatalf("lookup of %s: %v", email, err)
		}
	}
	if got := ids(collect(t, x.Find(b.Ctx, "Sales", "last", "Jonas", nil))); got != "" {
		t.Fatalf("find Jonas: %q", got)
	}
	mustClean(t, b.Ctx, x, 1, "Sales")
}

// An entity type with encrypted fields: a copy of a unique index compared "by key only"
// would always count as the archived entity's (copyOwner decrypts it and reads its
// owner). A Backfill (which does not check unique indexes against what is stored) gave
// employee B the blind-index value A holds; archiving A must leave B's copy.
func TestAttackArchiveIntraEncryptedCopyOfAnotherEntityIsKept(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	x := secretIntra(t, b, true)
	if err := x.Insert(b.Ctx, &secret{Dept: "Sales", ID: "000001", SSN: "078-05-1120", SSNIndex: "h1"}); err != nil {
		t.Fatal(err)
	}
	if err := x.Backfill(b.Ctx, []*secret{{Dept: "Sales", ID: "000002", SSN: "219-09-9999", SSNIndex: "h1"}}); err != nil {
		t.Fatal(err)
	}
	if got, err := x.Lookup(b.Ctx, "Sales", "ssn", "h1"); err != nil || got.SSN != "219-09-9999" {
		t.Fatalf("before the move the copy is B's: %+v %v", got, err)
	}
	a, target := b.Archiver(x)
	b.MustMove(a, target, "Sales", "id_000001")
	if got, err := x.Lookup(b.Ctx, "Sales", "ssn", "h1"); err != nil || got.SSN != "219-09-9999" {
		t.Fatalf("archiving A removed B's copy: %+v %v", got, err)
	}
}

// A forged ref row (stored data) makes the archived employee's ref name employee 2's
// copy. The reconciliation the move enqueues finds employee 1 gone and deletes the copy
// its ref names: it must not delete a copy whose key is not employee 1's.
func TestAttackArchiveInterForgedRefNamesAnotherEntitysCopy(t *testing.T) {
	t.Parallel()
	b, x, w := interStaff(t, false)
	b.forgeRef(t, "000001", interKey("amy@contoso.com", "000002"))
	a, target := b.Archiver(x)
	b.MustMove(a, target, "Sales", "000001")
	testbed.Drain(t, w)
	if b.row(t, "email_Sales", interKey("amy@contoso.com", "000002")) == nil {
		t.Fatal("archiving employee 1 deleted employee 2's email copy (named by a forged ref)")
	}
	if got, err := x.Lookup(b.Ctx, "Sales", "email", "amy@contoso.com"); err != nil || got.EmployeeID != "000002" {
		t.Fatalf("employee 2 by email after the move: %+v %v", got, err)
	}
}
