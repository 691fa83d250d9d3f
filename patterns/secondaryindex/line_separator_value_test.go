package secondaryindex_test

import (
	"errors"
	"testing"

	"github.com/tablepatterns/tablepatterns/patterns/internal/testbed"
	"github.com/tablepatterns/tablepatterns/repo"
)

// The copy of an old value holding U+2028 or U+2029 is deleted inside the update's
// transaction: a store that misaddresses that delete (Azurite) must neither keep the old
// copy nor delete another row in its place.
func TestIntraUpdateRemovesOldCopyWhenValueHasLineSeparator(t *testing.T) {
	t.Parallel()
	for _, sep := range testbed.LineSeparators {
		t.Run(sep.Name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, false)
			x := b.intra(t, byEmail)
			b.Bystander("", "Sales")
			old := "jones" + sep.Rune + "j@contoso.com"
			e := emp(223, "Jun", "Jones", old)
			if err := x.Insert(b.Ctx, e); err != nil {
				t.Fatal(err)
			}
			e.Email = "jonesj@contoso.com"
			if err := x.Update(b.Ctx, e); err != nil {
				t.Fatal(err)
			}
			if got, err := x.Lookup(b.Ctx, "Sales", "email", old); !errors.Is(err, repo.ErrNotFound) {
				t.Fatalf("lookup by the old value after the update: %+v, %v", got, err)
			}
			if got, err := x.Lookup(b.Ctx, "Sales", "email", e.Email); err != nil || got.EmployeeID != "000223" {
				t.Fatalf("lookup by the new value: %+v, %v", got, err)
			}
			b.MustHaveBystander("", "Sales")
		})
	}
}

// A Delete removes the primary copy and every index copy in one transaction: keys
// holding U+2028 or U+2029 (here both the primary value and the email) must all go, and
// no other row with them.
func TestIntraDeleteRemovesEveryCopyWhenValuesHaveLineSeparator(t *testing.T) {
	t.Parallel()
	for _, sep := range testbed.LineSeparators {
		t.Run(sep.Name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, false)
			x := b.intra(t, byEmail, byLast)
			b.Bystander("", "Sales")
			e := emp(223, "Jun", "Jo"+sep.Rune+"nes", "jones"+sep.Rune+"j@contoso.com")
			e.EmployeeID = "000" + sep.Rune + "223"
			if err := x.Insert(b.Ctx, e); err != nil {
				t.Fatal(err)
			}
			if err := x.Delete(b.Ctx, "Sales", "empid_"+e.EmployeeID, &repo.DeleteOptions{ETag: e.ETag}); err != nil {
				t.Fatal(err)
			}
			if got := b.rows(t, "Sales"); len(got) != 1 || got[0] != "" {
				t.Fatalf("rows after the delete: %q, want the bystander only", got)
			}
		})
	}
}

// A reconciliation moves a copy by deleting the old one in the index partition's
// transaction: an old value holding U+2028 or U+2029 must leave no copy behind and no
// other row deleted in its place.
func TestInterReconcileRemovesOldCopyWhenValueHasLineSeparator(t *testing.T) {
	t.Parallel()
	for _, sep := range testbed.LineSeparators {
		t.Run(sep.Name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, false)
			q, _ := b.Queue()
			x := b.inter(t, q, -1, byEmail)
			b.Bystander("", "email_Sales")
			old := "jones" + sep.Rune + "j@contoso.com"
			e := iemp(223, "Jun", "Jones", old)
			if err := x.Insert(b.Ctx, e); err != nil {
				t.Fatal(err)
			}
			if err := x.Reconcile(b.Ctx, "Sales", e.RowKey); err != nil {
				t.Fatal(err)
			}
			if b.row(t, "email_Sales", interKey(old, e.RowKey)) == nil {
				t.Fatal("the first reconciliation wrote no copy of the old value")
			}
			e.Email = "jonesj@contoso.com"
			if err := x.Update(b.Ctx, e); err != nil {
				t.Fatal(err)
			}
			if err := x.Reconcile(b.Ctx, "Sales", e.RowKey); err != nil {
				t.Fatal(err)
			}
			if b.row(t, "email_Sales", interKey(old, e.RowKey)) != nil {
				t.Fatal("the copy of the old value is still there after the reconciliation")
			}
			if b.row(t, "email_Sales", interKey(e.Email, e.RowKey)) == nil {
				t.Fatal("no copy of the new value")
			}
			b.MustHaveBystander("", "email_Sales")
		})
	}
}

// An archive move deletes the entity's copies in the transaction that deletes it, each
// conditional on the copy as read (Removal): a value holding U+2028 or U+2029 must never
// make the store delete another row, and the move either removes the entity with every
// copy or leaves both (package consistency starts over when the store refuses the copy's
// delete, which Azurite does).
func TestIntraArchiveNeverDeletesAnotherRowWhenValueHasLineSeparator(t *testing.T) {
	t.Parallel()
	for _, sep := range testbed.LineSeparators {
		t.Run(sep.Name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, false)
			x := b.intra(t, byEmail)
			b.Bystander("", "Sales")
			email := "jones" + sep.Rune + "j@contoso.com"
			if err := x.Insert(b.Ctx, emp(1, "Jun", "Jones", email)); err != nil {
				t.Fatal(err)
			}
			a, target := b.Archiver(x)
			_, err := a.ArchiveEntity(b.Ctx, b.ArchiveJob(target, "Sales", "empid_000001"))
			t.Logf("ArchiveEntity: %v", err)
			b.MustHaveBystander("", "Sales")
			_, gerr := x.Get(b.Ctx, "Sales", "empid_000001")
			_, lerr := x.Lookup(b.Ctx, "Sales", "email", email)
			switch {
			case err == nil && errors.Is(gerr, repo.ErrNotFound) && errors.Is(lerr, repo.ErrNotFound):
				b.MustBeArchived(target, "Sales", "empid_000001")
			case err != nil && gerr == nil && lerr == nil:
				// Refused as a whole: the entity and its copy are both still there.
			default:
				t.Fatalf("half a move: ArchiveEntity %v, get %v, lookup by email %v", err, gerr, lerr)
			}
		})
	}
}
