package secondaryindex_test

import (
	"errors"
	"slices"
	"testing"

	"github.com/tablepatterns/tablepatterns/internal/faultproxy"
	"github.com/tablepatterns/tablepatterns/patterns/secondaryindex"
	"github.com/tablepatterns/tablepatterns/repo"
)

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
			func(b *bed, x *ix) error { return x.Delete(b.Ctx, emp(861, "", "", "")) },
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
