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

// Archiving an employee indexed within its partition removes its
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
func TestArchiveIntraWriterBetweenRemovalAndTransaction(t *testing.T) {
	t.Parallel()
	b, x := intraStaff(t)
	live, err := intraOn(b.Direct.Tables, b.Table, byID, []secondaryindex.Index[Employee]{byEmail, byLast}, b.RepoOptions())
	if err != nil {
		t.Fatal(err)
	}
	a, target := b.Archiver(x)
	n := b.MustMoveHeld(a, target, "Sales", "empid_000001", func() {
		cur, err := live.Get(b.Ctx, "Sales", "empid_000001")
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
func TestArchiveIntraLostTransactionResponse(t *testing.T) {
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
func TestArchiveIntraTwoDeliveriesAtOnce(t *testing.T) {
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
func TestArchiveIntraUnreadableAndForgedEntities(t *testing.T) {
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

// A forged primary row (stored data, untrusted) claims employee 2's email in a unique
// index whose copies do not carry the primary value. Archiving the forger must move the
// forger and leave employee 2's copy alone ("a copy that names another entity as its
// owner is left to it"; "never removes a copy that belongs to another entity").
func TestArchiveIntraPartialCopyOfAnotherEntityIsKept(t *testing.T) {
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
func TestArchiveIntraPartialCopyTakenOverByBackfillIsKept(t *testing.T) {
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

// Options.Companions names the table in another case than the Intra's table: the
// companions' actions and the move's delete cannot share a transaction. The move must be
// refused before anything is written ("never a half-applied move"): here it writes the
// archive copy first and then refuses, leaving the entity both in the archive and in the
// table with its copies.
func TestArchiveIntraCompanionsKeyedInAnotherCase(t *testing.T) {
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

// An entity type with encrypted fields: a copy of a unique index compared "by key only"
// would always count as the archived entity's (copyOwner decrypts it and reads its
// owner). A Backfill (which does not check unique indexes against what is stored) gave
// employee B the blind-index value A holds; archiving A must leave B's copy.
func TestArchiveIntraEncryptedCopyOfAnotherEntityIsKept(t *testing.T) {
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

// The other side of keeping copies of unknown owner: an entity's own copy in a unique
// index whose Properties leave the primary value out is still removed by its move (its
// stored properties are what the entity's writes store), and the neighbour's stays.
func TestArchiveIntraPartialOwnCopyIsRemoved(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	x := b.intra(t, byMailPartial)
	for _, e := range []*Employee{emp(1, "Jun", "Jones", "jun@contoso.com"), emp(2, "Amy", "Smith", "amy@contoso.com")} {
		if err := x.Insert(b.Ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	a, target := b.Archiver(x)
	b.MustMove(a, target, "Sales", "empid_000001")
	if b.row(t, "Sales", "mail_jun@contoso.com") != nil {
		t.Fatal("the archived employee's own partial copy is still findable")
	}
	if b.row(t, "Sales", "mail_amy@contoso.com") == nil {
		t.Fatal("the neighbour's copy went")
	}
}
