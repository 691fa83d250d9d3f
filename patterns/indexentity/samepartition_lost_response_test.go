package indexentity

import (
	"errors"
	"slices"
	"testing"

	"github.com/tablepatterns/tablepatterns/internal/faultproxy"
	"github.com/tablepatterns/tablepatterns/repo"
)

// loseNextTransaction drops the response of ix's next transaction of step after the
// service applied it, and runs other, once, when ix learns that its outcome is unknown:
// another writer acts between this call's landed transaction and its re-read.
func loseNextTransaction(b *bed, ix *SamePartition[Employee], step string, other func() error) {
	b.t.Helper()
	b.tableProxy().AddRule(faultproxy.Rule{Name: "lost", Match: faultproxy.IsBatch, Times: 1, Action: faultproxy.DropAfterForward()})
	done := false
	ix.seams.afterSubmit = func(s string, err error) error {
		if s == step && !done && errors.Is(err, repo.ErrOutcomeUnknown) {
			done = true
			if oerr := other(); oerr != nil {
				b.t.Errorf("the other writer: %v", oerr)
			}
		}
		return err
	}
	b.t.Cleanup(func() {
		if !done {
			b.t.Errorf("the %s transaction's outcome was never unknown: the test proves nothing", step)
		}
	})
}

// Each call's transaction lands with its response lost, and another writer acts before
// the re-read: what the re-read finds is that writer's doing, so the call must not act on
// it again (re-insert what was deleted, delete what was re-inserted, overwrite what was
// updated); the answer is ErrOutcomeUnknown and the other writer's change stands, with an
// exact index.
func TestSamePartitionNeverUndoesAnotherWriterAfterAnUnknownOutcome(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		step     string
		existing bool                                            // the entity exists before the call
		call     func(b *bed, ix *SamePartition[Employee]) error // the call whose response is lost
		other    func(b *bed, ix *SamePartition[Employee]) error // the other writer, in the window
		want     map[string][]string                             // the index after both
	}{
		{"insert", false,
			func(b *bed, ix *SamePartition[Employee]) error {
				return ix.Insert(b.Ctx, emp("Sales", "000152", "Jones"))
			},
			func(b *bed, ix *SamePartition[Employee]) error { return ix.Delete(b.Ctx, "Sales", "000152", nil) },
			map[string][]string{"Jones": nil}},
		{"delete", true,
			func(b *bed, ix *SamePartition[Employee]) error { return ix.Delete(b.Ctx, "Sales", "000152", nil) },
			func(b *bed, ix *SamePartition[Employee]) error {
				return ix.Insert(b.Ctx, emp("Sales", "000152", "Jones"))
			},
			map[string][]string{"Jones": {"000152"}}},
		{"update", true,
			func(b *bed, ix *SamePartition[Employee]) error {
				return ix.Update(b.Ctx, emp("Sales", "000152", "Smith"))
			},
			func(b *bed, ix *SamePartition[Employee]) error {
				return ix.Update(b.Ctx, emp("Sales", "000152", "Brown"))
			},
			map[string][]string{"Smith": nil, "Brown": {"000152"}}},
	} {
		t.Run(c.step, func(t *testing.T) {
			t.Parallel()
			b := setup(t, true)
			ix := b.samePartition(&SamePartitionOptions{Conflict: fast})
			other := b.samePartition(&SamePartitionOptions{Conflict: fast})
			if c.existing {
				if err := ix.Insert(b.Ctx, emp("Sales", "000152", "Jones")); err != nil {
					t.Fatal(err)
				}
			}
			loseNextTransaction(b, ix, c.step, func() error { return c.other(b, other) })
			if err := c.call(b, ix); !errors.Is(err, repo.ErrOutcomeUnknown) {
				t.Errorf("%s: %v, want ErrOutcomeUnknown", c.step, err)
			}
			b.checkIndex(ix, "Sales")
			for value, want := range c.want {
				if ids, err := ix.IDs(b.Ctx, "Sales", value); err != nil || !slices.Equal(ids, want) {
					t.Errorf("%s lists %v (%v), want %v", value, ids, err, want)
				}
			}
		})
	}
}
