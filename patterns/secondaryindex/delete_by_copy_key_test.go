package secondaryindex_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/codec/keys"
	"github.com/tablepatterns/tablepatterns/patterns/internal/testbed"
	"github.com/tablepatterns/tablepatterns/repo"
)

// Attacks Intra.Delete's "rk is the RowKey ... of any copy of the entity ..., which is read
// first to find the entity it belongs to" with stored data (DESIGN.md, "Untrusted data"):
// a row under a copy's key that nobody wrote through Intra, whose primary value names
// another employee. The row is not a copy of that employee (its copies are elsewhere), so
// deleting by its key must not delete the employee it names, with or without the ETag the
// forged row was read with.
func TestIntraDeleteByAForgedCopysKeyDeletesNoOtherEntity(t *testing.T) {
	t.Parallel()
	b, x := intraStaff(t) // Jun Jones (1), Amy Smith (2)
	forged := map[string]string{
		"unique index":          "email_forged.mailbox@contoso.com",
		"index with duplicates": "last_" + keys.Join("Forged", "000002"),
	}
	for name, rk := range forged {
		props := map[string]any{"EmployeeId": "000001", "FirstName": "Jun", "LastName": "Forged", "Email": "forged.mailbox@contoso.com"}
		if strings.HasPrefix(rk, "last_") {
			props["Age"] = int32(21)
		}
		if err := b.Raw.Insert(b.Ctx, &codec.Entity{PartitionKey: "Sales", RowKey: rk, Properties: props}); err != nil {
			t.Fatal(err)
		}
		read := b.row(t, "Sales", rk)
		for how, opts := range map[string]*repo.DeleteOptions{"unconditional": nil, "with the forged row's ETag": {ETag: read.ETag}} {
			err := x.Delete(b.Ctx, "Sales", rk, opts)
			if err == nil {
				t.Errorf("%s, %s delete by a forged copy's key: nil error", name, how)
			}
			if err != nil && strings.Contains(fmt.Sprintf("%v %+v", err, err), "forged") {
				t.Errorf("%s, %s: the error names the forged key: %v", name, how, err)
			}
			if _, gerr := x.Get(b.Ctx, "Sales", "empid_000001"); gerr != nil {
				t.Fatalf("%s, %s delete by a forged copy's key (answered %v) removed the employee it names: %v", name, how, err, gerr)
			}
		}
		if err := b.Raw.Delete(b.Ctx, "Sales", rk, nil); err != nil {
			t.Fatal(err)
		}
	}
	mustClean(t, b.Ctx, x, 2, "Sales")
}

// Attacks "a copy lacking the primary value is refused": the copies of an index with
// Properties that leave out the primary value cannot name their entity, so a delete by
// such a copy's key is refused (errs.ErrInvalidInput) after the one read, nothing is
// written, and the error does not name the copy's key.
func TestIntraDeleteByACopyWithoutThePrimaryValueIsRefused(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	x := b.intra(t, byMailPartial)
	if err := x.Insert(b.Ctx, emp(1, "Ann", "Lee", "partial.mailbox@contoso.com")); err != nil {
		t.Fatal(err)
	}
	read, err := x.Lookup(b.Ctx, "Sales", "mail", "partial.mailbox@contoso.com")
	if err != nil {
		t.Fatal(err)
	}
	for how, opts := range map[string]*repo.DeleteOptions{"unconditional": nil, "with the ETag read": {ETag: read.ETag}} {
		before := b.Proxy().CountMatching(testbed.IsWrite)
		err := x.Delete(b.Ctx, "Sales", read.RowKey, opts)
		if !errors.Is(err, repo.ErrInvalidInput) {
			t.Fatalf("%s delete by a partial copy's key: %v, want ErrInvalidInput", how, err)
		}
		if n := b.Proxy().CountMatching(testbed.IsWrite) - before; n != 0 {
			t.Fatalf("%s: %d writes sent", how, n)
		}
		if strings.Contains(fmt.Sprintf("%v %+v", err, err), "partial.mailbox") {
			t.Fatalf("%s: the error names the copy's key: %v", how, err)
		}
	}
	if _, err := x.Get(b.Ctx, "Sales", "empid_000001"); err != nil {
		t.Fatalf("the entity after refused deletes: %v", err)
	}
}
