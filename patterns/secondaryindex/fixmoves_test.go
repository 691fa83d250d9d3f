package secondaryindex_test

import (
	"testing"

	"github.com/tablepatterns/tablepatterns/codec/keys"
	"github.com/tablepatterns/tablepatterns/patterns/internal/testbed"
)

// The other side of keeping copies of unknown owner: an entity's own copy in a unique
// index whose Properties leave the primary value out is still removed by its move (its
// stored properties are what the entity's writes store), and the neighbour's stays.
func TestFixMovesIntraPartialOwnCopyIsRemoved(t *testing.T) {
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

// A forged ref outside any move: the ordinary reconciliation of a live employee (Notify,
// then the worker) rewrites the ref to the employee's own copy and leaves the row the
// forged ref named, another employee's copy, alone.
func TestFixMovesInterReconcileIgnoresForgedRef(t *testing.T) {
	t.Parallel()
	b, x, w := interStaff(t, false)
	b.forgeRef(t, "000001", interKey("amy@contoso.com", "000002"))
	if err := x.Notify(b.Ctx, "Sales", "000001"); err != nil {
		t.Fatal(err)
	}
	testbed.Drain(t, w)
	if b.row(t, "email_Sales", interKey("amy@contoso.com", "000002")) == nil {
		t.Fatal("the reconciliation of employee 1 deleted employee 2's copy named by a forged ref")
	}
	got := b.row(t, "email_Sales", "!"+keys.Join("000001"))
	if got == nil || got.Properties["Key"] != interKey("jun@contoso.com", "000001") {
		t.Fatalf("ref after the reconciliation: %v", got)
	}
}

// forgeRef rewrites the email ref of employee id (stored data) to name key, and marks it
// as recording no version of the employee, so that the next reconciliation acts on it.
func (b *bed) forgeRef(t *testing.T, id, key string) {
	t.Helper()
	ref := b.row(t, "email_Sales", "!"+keys.Join(id))
	if ref == nil {
		t.Fatalf("no ref row for employee %s", id)
	}
	ref.Properties["Key"] = key
	ref.Properties["SourceETag"] = "forged"
	if err := b.Raw.Update(b.Ctx, ref, nil); err != nil {
		t.Fatal(err)
	}
}
