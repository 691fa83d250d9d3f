package secondaryindex_test

import (
	"testing"

	"github.com/tablepatterns/tablepatterns/codec/keys"
)

// A forged ref row (stored data) makes the archived employee's ref name employee 2's
// copy. The reconciliation the move enqueues finds employee 1 gone and deletes the copy
// its ref names: it must not delete a copy whose key is not employee 1's.
func TestArchiveInterForgedRefNamesAnotherEntitysCopy(t *testing.T) {
	t.Parallel()
	b, x, w := interStaff(t, false)
	b.forgeRef(t, "000001", interKey("amy@contoso.com", "000002"))
	a, target := b.Archiver(x)
	b.MustMove(a, target, "Sales", "000001")
	b.drainAfterSafety(t, w)
	if b.row(t, "email_Sales", interKey("amy@contoso.com", "000002")) == nil {
		t.Fatal("archiving employee 1 deleted employee 2's email copy (named by a forged ref)")
	}
	if got, err := x.Lookup(b.Ctx, "Sales", "email", "amy@contoso.com"); err != nil || got.EmployeeID != "000002" {
		t.Fatalf("employee 2 by email after the move: %+v %v", got, err)
	}
}

// A forged ref outside any move: the ordinary reconciliation of a live employee (Notify,
// then the worker) rewrites the ref to the employee's own copy and leaves the row the
// forged ref named, another employee's copy, alone.
func TestInterReconcileIgnoresForgedRef(t *testing.T) {
	t.Parallel()
	b, x, w := interStaff(t, false)
	b.forgeRef(t, "000001", interKey("amy@contoso.com", "000002"))
	if err := x.Notify(b.Ctx, "Sales", "000001"); err != nil {
		t.Fatal(err)
	}
	b.drainAfterSafety(t, w)
	if b.row(t, "email_Sales", interKey("amy@contoso.com", "000002")) == nil {
		t.Fatal("the reconciliation of employee 1 deleted employee 2's copy named by a forged ref")
	}
	got := b.row(t, "email_Sales", "!"+keys.Join("000001"))
	if got == nil || got.Properties["Key"] != interKey("jun@contoso.com", "000001") {
		t.Fatalf("ref after the reconciliation: %v", got)
	}
}
