package secondaryindex_test

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/tablepatterns/tablepatterns/internal/faultproxy"
	"github.com/tablepatterns/tablepatterns/patterns/secondaryindex"
	"github.com/tablepatterns/tablepatterns/repo"
)

// Upsert's first write (the entity does not exist yet, so Upsert takes the insert plan):
// the transaction lands, its response is lost, repo's retry meets 409 and answers
// ErrOutcomeUnknown. The entity found by a re-read may be this call's or another
// writer's, so Upsert must not write again on that guess: it answers ErrOutcomeUnknown,
// and the copies are the ones it wrote once.
func TestIntraUpsertNewEntityLostResponse(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	x := b.intra(t, byEmail, byLast)
	b.Proxies.Table.AddRule(faultproxy.Rule{Name: "lost", Match: faultproxy.IsBatch, Times: 1, Action: faultproxy.DropAfterForward()})
	e := emp(31, "Uma", "Ups", "uma@contoso.com")
	err := x.Upsert(b.Ctx, e)
	if n := b.Proxies.Table.Fired("lost"); n != 1 {
		t.Fatalf("lost fired %d times", n)
	}
	want := []string{"email_uma@contoso.com", "empid_000031", "last_" + interKey("Ups", "000031")}
	if got := b.rows(t, "Sales"); !slices.Equal(got, want) {
		t.Fatalf("rows %q, want %q", got, want)
	}
	if !errors.Is(err, repo.ErrOutcomeUnknown) {
		t.Fatalf("Upsert without an ETag after a lost response that landed: %v, want ErrOutcomeUnknown", err)
	}
}

// An Intra Update without an ETag whose transaction
// lands, is reported unknown, and is overtaken by another writer's delete before the
// fresh read. The next round finds the entity gone: "not found" would say "nothing
// updated" of an update that landed, so the answer is the unknown outcome.
func TestIntraUnconditionalUpdateUnknownThenDeleted(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	x := b.intra(t, byEmail)
	if err := x.Insert(b.Ctx, emp(851, "Ida", "Gone", "ida@contoso.com")); err != nil {
		t.Fatal(err)
	}
	first := true
	secondaryindex.SetIntraAfterSubmit(x, func(err error) error {
		if !first {
			return err
		}
		first = false
		if err != nil {
			t.Errorf("the update transaction did not land: %v", err)
		}
		if err := x.Delete(b.Ctx, "Sales", "empid_000851", nil); err != nil {
			t.Errorf("concurrent delete: %v", err)
		}
		return fmt.Errorf("test: retried transaction: %w (%w)", repo.ErrOutcomeUnknown,
			&repo.Error{Op: "transaction", StatusCode: 412, Code: "UpdateConditionNotSatisfied", Kind: repo.ErrPreconditionFailed})
	})
	err := x.Update(b.Ctx, emp(851, "Ida", "Gone", "ida2@contoso.com"))
	if !errors.Is(err, repo.ErrOutcomeUnknown) || errors.Is(err, repo.ErrNotFound) {
		t.Fatalf("Update whose transaction landed, then deleted = %v; want ErrOutcomeUnknown, not ErrNotFound", err)
	}
	if rows := b.rows(t, "Sales"); len(rows) != 0 {
		t.Fatalf("rows %q after the delete", rows)
	}
}

// Intra's Update, Upsert and Delete without an ETag: the transaction lands, its response
// is lost, repo's retry meets the changed copies (ErrOutcomeUnknown), and another writer
// acts before the re-read (updates the entity again, re-inserts the deleted one). What
// the re-read finds is the other writer's: the call must not write over it or delete it,
// and answers ErrOutcomeUnknown; the other writer's copies stand.
func TestIntraNeverUndoesAnotherWriterAfterAnUnknownOutcome(t *testing.T) {
	t.Parallel()
	type ix = secondaryindex.Intra[Employee]
	for _, c := range []struct {
		name  string
		call  func(b *bed, x *ix) error
		other func(b *bed, x *ix) error
		want  []string // the rows after both
	}{
		{"update",
			func(b *bed, x *ix) error { return x.Update(b.Ctx, emp(861, "Ida", "Out", "ida2@contoso.com")) },
			func(b *bed, x *ix) error { return x.Update(b.Ctx, emp(861, "Ida", "Out", "ida3@contoso.com")) },
			[]string{"email_ida3@contoso.com", "empid_000861"}},
		{"upsert",
			func(b *bed, x *ix) error { return x.Upsert(b.Ctx, emp(861, "Ida", "Out", "ida2@contoso.com")) },
			func(b *bed, x *ix) error { return x.Upsert(b.Ctx, emp(861, "Ida", "Out", "ida3@contoso.com")) },
			[]string{"email_ida3@contoso.com", "empid_000861"}},
		{"delete",
			func(b *bed, x *ix) error { return x.Delete(b.Ctx, "Sales", "empid_000861", nil) },
			func(b *bed, x *ix) error { return x.Insert(b.Ctx, emp(861, "Ida", "Out", "ida3@contoso.com")) },
			[]string{"email_ida3@contoso.com", "empid_000861"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, true)
			x, other := b.intra(t, byEmail), b.intra(t, byEmail)
			if err := x.Insert(b.Ctx, emp(861, "Ida", "Out", "ida@contoso.com")); err != nil {
				t.Fatal(err)
			}
			b.Proxies.Table.AddRule(faultproxy.Rule{Name: "lost", Match: faultproxy.IsBatch, Times: 1, Action: faultproxy.DropAfterForward()})
			acted := false
			secondaryindex.SetIntraAfterSubmit(x, func(err error) error {
				if !acted && errors.Is(err, repo.ErrOutcomeUnknown) {
					acted = true
					if oerr := c.other(b, other); oerr != nil {
						t.Errorf("the other writer, after the landed %s: %v", c.name, oerr)
					}
				}
				return err
			})
			if err := c.call(b, x); !errors.Is(err, repo.ErrOutcomeUnknown) {
				t.Errorf("%s: %v, want ErrOutcomeUnknown", c.name, err)
			}
			if !acted {
				t.Fatal("the transaction's outcome was never unknown: the test proves nothing")
			}
			if rows := b.rows(t, "Sales"); !slices.Equal(rows, c.want) {
				t.Errorf("rows %q, want the other writer's %q", rows, c.want)
			}
		})
	}
}

// For Intra: a transaction whose outcome repo cannot prove (ErrOutcomeUnknown) after it
// landed is never reported as "nothing written" nor as success: Insert, Update (with or
// without an ETag) and Delete return the ErrOutcomeUnknown error (not a
// *UniqueViolationError, not ErrPreconditionFailed), since the re-read cannot tell this
// call's landed write from another writer's; the copies are consistent in every case.
func TestIntraOutcomeUnknownAfterTheWriteLanded(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	x := b.intra(t, byEmail)
	unknownOnce := func() {
		first := true
		secondaryindex.SetIntraAfterSubmit(x, func(err error) error {
			if !first {
				return err
			}
			first = false
			if err != nil {
				t.Errorf("the first transaction failed: %v", err)
			}
			return fmt.Errorf("test: retried transaction: %w (%w)", repo.ErrOutcomeUnknown,
				&repo.Error{Op: "transaction", StatusCode: 409, Code: "EntityAlreadyExists", Kind: repo.ErrAlreadyExists})
		})
	}
	e := emp(841, "Ida", "Out", "ida@contoso.com")
	var uv *secondaryindex.UniqueViolationError
	unknownOnce()
	if err := x.Insert(b.Ctx, e); !errors.Is(err, repo.ErrOutcomeUnknown) || errors.As(err, &uv) {
		t.Fatalf("insert: %v, want ErrOutcomeUnknown and no unique violation", err)
	}
	cur, err := x.Get(b.Ctx, "Sales", "empid_000841")
	if err != nil {
		t.Fatal(err)
	}
	cur.Email = "ida2@contoso.com"
	unknownOnce()
	if err := x.Update(b.Ctx, &cur); !errors.Is(err, repo.ErrOutcomeUnknown) || errors.Is(err, repo.ErrPreconditionFailed) {
		t.Fatalf("update with an ETag: %v, want ErrOutcomeUnknown only", err)
	}
	noTag := emp(841, "Ida", "Out", "ida3@contoso.com")
	unknownOnce()
	if err := x.Update(b.Ctx, noTag); !errors.Is(err, repo.ErrOutcomeUnknown) {
		t.Fatalf("update without an ETag: %v, want ErrOutcomeUnknown", err)
	}
	if rows := b.rows(t, "Sales"); !slices.Equal(rows, []string{"email_ida3@contoso.com", "empid_000841"}) {
		t.Fatalf("rows %q", rows)
	}
	unknownOnce()
	if err := x.Delete(b.Ctx, "Sales", "empid_000841", nil); !errors.Is(err, repo.ErrOutcomeUnknown) {
		t.Fatalf("delete: %v, want ErrOutcomeUnknown", err)
	}
	if rows := b.rows(t, "Sales"); len(rows) != 0 {
		t.Fatalf("rows %q after the delete", rows)
	}
}
