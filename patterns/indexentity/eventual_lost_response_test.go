package indexentity

import (
	"errors"
	"testing"

	"github.com/tablepatterns/tablepatterns/internal/faultproxy"
	"github.com/tablepatterns/tablepatterns/patterns/internal/testbed"
	"github.com/tablepatterns/tablepatterns/repo"
)

// Eventual's Delete and Update without an ETag: the write lands, its response is lost,
// repo's retry meets the changed entity (ErrOutcomeUnknown), and another writer acts
// before the next read (re-creates the deleted entity, updates the updated one). What
// that read finds is the other writer's: the call must not delete or overwrite it, and
// answers ErrOutcomeUnknown.
func TestEventualNeverUndoesAnotherWriterAfterAnUnknownOutcome(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name   string
		method string
		call   func(b *bed, ix *Eventual[Employee]) error
		other  func(b *bed, direct *repo.Table[Employee]) error
		want   string // the stored LastName after both ("" for none)
	}{
		{"delete", "DELETE",
			func(b *bed, ix *Eventual[Employee]) error { return ix.Delete(b.Ctx, "Sales", "000156", nil) },
			func(b *bed, direct *repo.Table[Employee]) error {
				return direct.Insert(b.Ctx, emp("Sales", "000156", "Jones"))
			},
			"Jones"},
		{"update", "PUT",
			func(b *bed, ix *Eventual[Employee]) error { return ix.Update(b.Ctx, emp("Sales", "000156", "Smith")) },
			func(b *bed, direct *repo.Table[Employee]) error {
				e := emp("Sales", "000156", "Brown")
				return direct.Update(b.Ctx, e, &repo.UpdateOptions{Unconditional: true})
			},
			"Brown"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, true)
			ix := b.eventual(b.tableStore(0), b.queue())
			direct := must(repo.New[Employee](b.Direct.Tables, b.emps.Name(), &repo.Options{Retry: fast, Logger: b.log}))
			if err := ix.Insert(b.Ctx, emp("Sales", "000156", "Jones")); err != nil {
				t.Fatal(err)
			}
			b.tableProxy().AddRule(faultproxy.Rule{Name: "lost", Times: 1, Action: faultproxy.DropAfterForward(),
				Match: faultproxy.All(faultproxy.IsEntityWrite, faultproxy.MethodIs(c.method), faultproxy.PathContains("RowKey='000156'"))})
			ps := b.tableProxy().PauseAt("the re-read", faultproxy.All(faultproxy.IsGetEntity, faultproxy.PathContains("RowKey='000156'")), 2)
			t.Cleanup(ps.Release)
			done := make(chan error, 1)
			go func() { done <- c.call(b, ix) }()
			testbed.WaitHeld(t, ps)
			if err := c.other(b, direct); err != nil {
				t.Fatalf("the other writer, after the landed %s: %v", c.name, err)
			}
			ps.Release()
			if err := <-done; !errors.Is(err, repo.ErrOutcomeUnknown) {
				t.Errorf("%s: %v, want ErrOutcomeUnknown", c.name, err)
			}
			if got, err := direct.Get(b.Ctx, "Sales", "000156"); err != nil || got.LastName != c.want {
				t.Errorf("stored: %+v, %v; want the other writer's %q", got, err, c.want)
			}
		})
	}
}
