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
	"github.com/tablepatterns/tablepatterns/queueworker"
	"github.com/tablepatterns/tablepatterns/repo"
)

// Both index variants are companions of the archive (issue 14 item 4).
var (
	_ consistency.Companion = (*secondaryindex.Intra[Employee])(nil)
	_ consistency.Companion = (*secondaryindex.Inter[Employee])(nil)
)

// intraStaff returns a proxied bed with an Intra (email and last name copies) holding
// Jun Jones (1) and Amy Smith (2).
func intraStaff(t *testing.T) (*bed, *secondaryindex.Intra[Employee]) {
	t.Helper()
	b := setup(t, true)
	x := b.intra(t, byEmail, byLast)
	for _, e := range []*Employee{emp(1, "Jun", "Jones", "jun@contoso.com"), emp(2, "Amy", "Smith", "amy@contoso.com")} {
		if err := x.Insert(b.Ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	return b, x
}

// intraGone checks that no read of x finds employee 1 (jun@contoso.com, Jones), that
// employee 2 is untouched, and that Verify finds no drift.
func intraGone(t *testing.T, b *bed, x *secondaryindex.Intra[Employee], email string) {
	t.Helper()
	if _, err := x.Lookup(b.Ctx, "Sales", "email", email); !errors.Is(err, repo.ErrNotFound) {
		t.Fatalf("lookup of the archived employee's email: %v", err)
	}
	if _, err := x.Get(b.Ctx, "Sales", "000001"); !errors.Is(err, repo.ErrNotFound) {
		t.Fatalf("get of the archived employee: %v", err)
	}
	if got := ids(collect(t, x.Find(b.Ctx, "Sales", "last", "Jones", nil))); got != "" {
		t.Fatalf("find Jones after the archive: %q", got)
	}
	if got := ids(collect(t, x.Range(b.Ctx, "Sales", "email", "", "", nil))); got != "000002" {
		t.Fatalf("every email after the archive: %q", got)
	}
	if got, err := x.Lookup(b.Ctx, "Sales", "email", "amy@contoso.com"); err != nil || got.EmployeeID != "000002" {
		t.Fatalf("the other employee: %+v %v", got, err)
	}
	mustClean(t, b.Ctx, x, 1, "Sales")
}

// Issue 14 ("Done when"): archiving an employee indexed within its partition removes its
// copies in the transaction that deletes it: one transaction, no copy left to find.
func TestArchiveIntraRemovesCopiesInTheDeleteTransaction(t *testing.T) {
	t.Parallel()
	b, x := intraStaff(t)
	a, target := b.Archiver(x)
	mark := b.Proxy().CountMatching(testbed.IsBatch)
	// The job spells the table otherwise (table names are case-insensitive): the delete
	// takes the companions' spelling, so that their actions share its transaction.
	job := b.ArchiveJob(target, "Sales", "empid_000001")
	job.Source = strings.ToUpper(job.Source)
	if out, err := a.ArchiveEntity(b.Ctx, job); err != nil || out != consistency.OutcomeMoved {
		t.Fatalf("archive: %v %v", out, err)
	}
	b.MustBeArchived(target, "Sales", "empid_000001")
	if n := b.Proxy().CountMatching(testbed.IsBatch) - mark; n != 1 {
		t.Fatalf("the move sent %d transactions, want 1", n)
	}
	if got := b.rows(t, "Sales"); len(got) != 3 {
		t.Fatalf("rows left in Sales: %q, want employee 2's three", got)
	}
	intraGone(t, b, x, "jun@contoso.com")
}

// A live writer changes the employee (a new email: a new copy) while the move's
// transaction is held at the proxy, after the companion read the copies: the transaction
// fails as a whole, the move starts over from fresh reads and archives the new version
// without any of its copies.
func TestAttackArchiveIntraWriterBetweenRemovalAndTransaction(t *testing.T) {
	t.Parallel()
	b, x := intraStaff(t)
	live, err := intraOn(b.Direct.Tables, b.Table, byID, []secondaryindex.Index[Employee]{byEmail, byLast}, b.RepoOptions())
	if err != nil {
		t.Fatal(err)
	}
	a, target := b.Archiver(x)
	n := b.MustMoveHeld(a, target, "Sales", "empid_000001", func() {
		cur, err := live.Get(b.Ctx, "Sales", "000001")
		if err != nil {
			t.Fatal(err)
		}
		cur.Email = "jun.jones@contoso.com"
		if err := live.Update(b.Ctx, &cur); err != nil {
			t.Fatal(err)
		}
	})
	if n < 2 {
		t.Fatalf("the move sent %d transactions: it did not start over", n)
	}
	b.MustBeArchived(target, "Sales", "empid_000001")
	arch, _ := repo.New[codec.Entity](b.Direct.Tables, target, nil)
	if got, _ := arch.Get(b.Ctx, "Sales", "empid_000001"); got.Properties["Email"] != "jun.jones@contoso.com" {
		t.Fatalf("archived %v, want the version the writer wrote", got.Properties["Email"])
	}
	intraGone(t, b, x, "jun.jones@contoso.com")
	intraGone(t, b, x, "jun@contoso.com")
}

// The transaction lands and its response is lost: the retried transaction meets 404, the
// outcome is unknown, and the move re-reads: the entity is gone and archived, and so are
// its copies (one transaction).
func TestAttackArchiveIntraLostTransactionResponse(t *testing.T) {
	t.Parallel()
	b, x := intraStaff(t)
	a, target := b.Archiver(x)
	b.Proxy().AddRule(faultproxy.Rule{Name: "lost", Match: faultproxy.IsBatch, Times: 1, Action: faultproxy.DropAfterForward()})
	b.MustMove(a, target, "Sales", "empid_000001")
	if b.Proxy().Fired("lost") != 1 {
		t.Fatal("the response was never lost")
	}
	intraGone(t, b, x, "jun@contoso.com")
}

// Two deliveries of one job at once, the first held at its transaction while the second
// runs to completion: both succeed, the entity is archived once, no copy is left.
func TestAttackArchiveIntraTwoDeliveriesAtOnce(t *testing.T) {
	t.Parallel()
	b, x := intraStaff(t)
	a, target := b.Archiver(x)
	b.MustMoveHeld(a, target, "Sales", "empid_000001", func() {
		b.MustMove(a, target, "Sales", "empid_000001")
	})
	intraGone(t, b, x, "jun@contoso.com")
}

// Stored rows are untrusted: an entity that does not decode, one whose primary value is
// not its own key, and a copy archived as if it were an entity are refused before
// anything is written (the job goes to the poison queue); a forged email that names
// another employee's copy moves the forger and leaves the other's copy alone.
func TestAttackArchiveIntraUnreadableAndForgedEntities(t *testing.T) {
	t.Parallel()
	b, x := intraStaff(t)
	a, target := b.Archiver(x)
	put := func(rk string, props map[string]any) {
		t.Helper()
		if err := b.Raw.Insert(b.Ctx, &codec.Entity{PartitionKey: "Sales", RowKey: rk, Properties: props}); err != nil {
			t.Fatal(err)
		}
	}
	put("empid_000007", map[string]any{"EmployeeId": "000007", "Age": "not a number", "Email": "amy@contoso.com"})
	put("empid_000008", map[string]any{"EmployeeId": "000002", "Email": "amy@contoso.com"})
	for _, rk := range []string{"empid_000007", "empid_000008", "email_amy@contoso.com"} {
		before := b.Proxy().CountMatching(testbed.IsWrite)
		out, err := a.ArchiveEntity(b.Ctx, b.ArchiveJob(target, "Sales", rk))
		if !errors.Is(err, repo.ErrInvalidInput) {
			t.Fatalf("archive %s: %v %v, want invalid input", rk, out, err)
		}
		if n := b.Proxy().CountMatching(testbed.IsWrite) - before; n != 0 {
			t.Fatalf("archive %s: %d writes sent before the refusal", rk, n)
		}
		if b.row(t, "Sales", rk) == nil {
			t.Fatalf("%s was deleted", rk)
		}
	}
	// A forged email equal to employee 2's: the forger moves, employee 2's copy stays.
	put("empid_000009", map[string]any{"EmployeeId": "000009", "FirstName": "Eve", "Email": "amy@contoso.com"})
	b.MustMove(a, target, "Sales", "empid_000009")
	if got, err := x.Lookup(b.Ctx, "Sales", "email", "amy@contoso.com"); err != nil || got.EmployeeID != "000002" {
		t.Fatalf("employee 2 after the forger's move: %+v %v", got, err)
	}
}

// interStaff returns a bed with an Inter (email and last name copies) and its worker,
// after inserting employees 1 and 2 and letting the worker write their copies.
func interStaff(t *testing.T, proxied bool) (*bed, *secondaryindex.Inter[Employee], *queueworker.Worker) {
	t.Helper()
	b := setup(t, proxied)
	q, name := b.Queue()
	x := b.inter(t, q, safety, byEmail, byLast)
	w := b.worker(t, name, x)
	for _, e := range []*Employee{iemp(1, "Jun", "Jones", "jun@contoso.com"), iemp(2, "Amy", "Smith", "amy@contoso.com")} {
		if err := x.Insert(b.Ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	testbed.Drain(t, w)
	if _, err := x.Lookup(b.Ctx, "Sales", "email", "jun@contoso.com"); err != nil {
		t.Fatalf("before the archive: %v", err)
	}
	return b, x, w
}

// interGone checks that no read of x finds employee 1 once the worker settled, and that
// Verify finds no drift.
func interGone(t *testing.T, b *bed, x *secondaryindex.Inter[Employee]) {
	t.Helper()
	if _, err := x.Lookup(b.Ctx, "Sales", "email", "jun@contoso.com"); !errors.Is(err, repo.ErrNotFound) {
		t.Fatalf("lookup of the archived employee's email: %v", err)
	}
	if got := ids(collect(t, x.Find(b.Ctx, "Sales", "last", "Jones", nil))); got != "" {
		t.Fatalf("find Jones after the archive: %q", got)
	}
	if got := ids(collect(t, x.Range(b.Ctx, "Sales", "email", "", "", nil))); got != "000002" {
		t.Fatalf("every email after the archive: %q", got)
	}
	if b.row(t, "email_Sales", interKey("jun@contoso.com", "000001")) != nil {
		t.Fatal("the archived employee's email copy is still stored")
	}
	mustClean(t, b.Ctx, x, 1, "Sales")
}

// Issue 14 ("Done when"): archiving an employee indexed in other partitions enqueues its
// reconciliation before the delete; once the worker settled no lookup finds it.
func TestArchiveInterRemovesCopiesThroughTheWorker(t *testing.T) {
	t.Parallel()
	b, x, w := interStaff(t, false)
	a, target := b.Archiver(x)
	b.MustMove(a, target, "Sales", "000001")
	testbed.Drain(t, w)
	interGone(t, b, x)
}

// A crash after Before enqueued the reconciliation and before the delete: the entity and
// its copies stay (the reconciliation finds it and keeps them); the rerun moves it and
// its copies go.
func TestAttackArchiveInterCrashBetweenBeforeAndDelete(t *testing.T) {
	t.Parallel()
	b, x, w := interStaff(t, false)
	crashing, target := b.Archiver(testbed.CrashAfterBefore{Companion: x})
	if _, err := crashing.ArchiveEntity(b.Ctx, b.ArchiveJob(target, "Sales", "000001")); !errors.Is(err, testbed.ErrStop) {
		t.Fatalf("crashed move: %v", err)
	}
	testbed.Drain(t, w) // the safety message of the crashed run: the entity is still there
	if got, err := x.Lookup(b.Ctx, "Sales", "email", "jun@contoso.com"); err != nil || got.EmployeeID != "000001" {
		t.Fatalf("after the crash the entity must still be found: %+v %v", got, err)
	}
	mustClean(t, b.Ctx, x, 2, "Sales")
	a, _ := b.Archiver(x)
	b.MustMove(a, target, "Sales", "000001")
	testbed.Drain(t, w)
	interGone(t, b, x)
}

// The delete's response is lost after it landed, and two deliveries run at once: both
// succeed and the worker removes every copy (the safety message covers the run that
// found the entity gone and enqueued nothing after it).
func TestAttackArchiveInterLostResponseAndTwoDeliveries(t *testing.T) {
	t.Parallel()
	b, x, w := interStaff(t, true)
	a, target := b.Archiver(x)
	b.Proxy().AddRule(faultproxy.Rule{Name: "lost", Match: faultproxy.MethodIs("DELETE"), Times: 1, Action: faultproxy.DropAfterForward()})
	b.MustMoveConcurrently(a, 2, target, "Sales", "000001")
	testbed.Drain(t, w)
	interGone(t, b, x)
}

// Inter needs only the keys: an entity whose values do not decode is archived and its
// copies removed; a row of an index partition archived as if it were an entity is
// refused before anything is written.
func TestAttackArchiveInterUnreadableAndForgedEntities(t *testing.T) {
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
	testbed.Drain(t, w)
	interGone(t, b, x)
}
