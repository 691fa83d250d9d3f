package secondaryindex_test

import (
	"errors"
	"testing"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/internal/faultproxy"
	"github.com/tablepatterns/tablepatterns/patterns/consistency"
	"github.com/tablepatterns/tablepatterns/patterns/internal/testbed"
	"github.com/tablepatterns/tablepatterns/patterns/secondaryindex"
	"github.com/tablepatterns/tablepatterns/repo"
)

// Archiving an employee indexed in other partitions enqueues its
// reconciliation before the delete; once the worker settled no lookup finds it.
func TestArchiveInterRemovesCopiesThroughTheWorker(t *testing.T) {
	t.Parallel()
	b, x, w := interStaff(t, false)
	a, target := b.Archiver(x)
	b.MustMove(a, target, "Sales", "000001")
	b.drainAfterSafety(t, w)
	interGone(t, b, x)
}

// A crash after Before enqueued the reconciliation and before the delete: the entity and
// its copies stay (the reconciliation finds it and keeps them); the rerun moves it and
// its copies go.
func TestArchiveInterCrashBetweenBeforeAndDelete(t *testing.T) {
	t.Parallel()
	b, x, w := interStaff(t, false)
	crashing, target := b.Archiver(testbed.CrashAfterBefore{Companion: x})
	if _, err := crashing.ArchiveEntity(b.Ctx, b.ArchiveJob(target, "Sales", "000001")); !errors.Is(err, testbed.ErrStop) {
		t.Fatalf("crashed move: %v", err)
	}
	b.drainAfterSafety(t, w) // the safety message of the crashed run: the entity is still there
	if got, err := x.Lookup(b.Ctx, "Sales", "email", "jun@contoso.com"); err != nil || got.EmployeeID != "000001" {
		t.Fatalf("after the crash the entity must still be found: %+v %v", got, err)
	}
	mustClean(t, b.Ctx, x, 2, "Sales")
	a, _ := b.Archiver(x)
	b.MustMove(a, target, "Sales", "000001")
	b.drainAfterSafety(t, w)
	interGone(t, b, x)
}

// The delete's response is lost after it landed, and two deliveries run at once: both
// succeed and the worker removes every copy (the safety message covers the run that
// found the entity gone and enqueued nothing after it).
func TestArchiveInterLostResponseAndTwoDeliveries(t *testing.T) {
	t.Parallel()
	b, x, w := interStaff(t, true)
	a, target := b.Archiver(x)
	b.Proxy().AddRule(faultproxy.Rule{Name: "lost", Match: faultproxy.MethodIs("DELETE"), Times: 1, Action: faultproxy.DropAfterForward()})
	b.MustMoveConcurrently(a, 2, target, "Sales", "000001")
	b.drainAfterSafety(t, w)
	interGone(t, b, x)
}

// Inter needs only the keys: an entity whose values do not decode is archived and its
// copies removed; a row of an index partition archived as if it were an entity is
// refused before anything is written.
func TestArchiveInterUnreadableAndForgedEntities(t *testing.T) {
	t.Parallel()
	b, x, w := interStaff(t, false)
	cur := b.row(t, "Sales", "000001")
	cur.Properties["Age"] = "not a number"
	if err := b.Raw.Update(b.Ctx, cur, nil); err != nil {
		t.Fatal(err)
	}
	a, target := b.Archiver(x)
	b.MustMove(a, target, "Sales", "000001")
	rk := interKey("amy@contoso.com", "000002")
	if _, err := a.ArchiveEntity(b.Ctx, b.ArchiveJob(target, "email_Sales", rk)); !errors.Is(err, repo.ErrInvalidInput) {
		t.Fatalf("archive of a copy: %v, want invalid input", err)
	}
	if b.row(t, "email_Sales", rk) == nil {
		t.Fatal("the refused archive deleted the copy")
	}
	b.drainAfterSafety(t, w)
	interGone(t, b, x)
}

// Inter with SafetyDelay off has no Before: its only reconciliation is After's Notify.
// The delete lands and its response is lost: the move re-reads, finds the source gone
// and the copy written. As Inter's own Delete announces the entity in that very case
// ("without a safety message nothing else would reconcile its copies"), so does the
// move: the copies do not stay findable.
func TestArchiveInterNoSafetyLostDeleteResponseStillRemovesCopies(t *testing.T) {
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

// The same, with the prompt enqueue failing (the queue answers 500 until the retries
// give up; not 503 ServerBusy, whose every answer would slow the client's retry.Gate, and
// the drain after it, for seconds): the move reports success; with SafetyDelay off
// nothing else will reconcile.
// Inter's own write returns an error in that case ("was written but its reconciliation
// could not be enqueued (call Notify)"); the move only logs it.
func TestArchiveInterNoSafetyFailedNotifyIsOnlyLogged(t *testing.T) {
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
	b.Proxies.Queue.AddRule(faultproxy.Rule{Name: "busy", Match: faultproxy.IsEnqueue, Action: faultproxy.Respond(500, "InternalError")})
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
func TestArchiveInterReinsertWhileReconciliationPending(t *testing.T) {
	t.Parallel()
	b, x, w := interStaff(t, false)
	a, target := b.Archiver(x)
	b.MustMove(a, target, "Sales", "000001")
	if err := x.Insert(b.Ctx, iemp(1, "Jun", "Jonas", "jun.new@contoso.com")); err != nil {
		t.Fatal(err)
	}
	b.drainAfterSafety(t, w)
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
func TestArchiveInterDeleteMissesWithin(t *testing.T) {
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
	b.drainAfterSafety(t, w)
	interGone(t, b, x)
}

// A live writer changes the employee's email (its copy moves to another key) while the
// move's delete is held at the proxy, after Before enqueued the reconciliation: the
// delete meets 412, the move starts over, and once the worker settled neither the old nor
// the new email finds the archived employee.
func TestArchiveInterWriterBetweenBeforeAndDelete(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	q, name := b.safetyQueue(t)
	x := b.inter(t, q, safety, byEmail, byLast)
	w := b.worker(t, name, x)
	for _, e := range []*Employee{iemp(1, "Jun", "Jones", "jun@contoso.com"), iemp(2, "Amy", "Smith", "amy@contoso.com")} {
		if err := x.Insert(b.Ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	b.drainAfterSafety(t, w)
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
	b.drainAfterSafety(t, w)
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
