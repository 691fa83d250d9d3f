package migrate

import (
	"sync/atomic"
	"testing"
)

// TestReadWhileCleanUpFinishesTheEntityNeverMisses: a Get at CleanUp reads an entity's
// copy (current and not yet detached, or missing: a writer inserted the old entity at
// CutOver and stopped before its copy step) and, before it reads the old entity, the
// clean-up finishes the entity (copy current and detached, old entity deleted); the Get
// returns the entity, never "not found".
func TestReadWhileCleanUpFinishesTheEntityNeverMisses(t *testing.T) {
	t.Parallel()
	f := setup(t, false, false)
	keys, _ := f.planned(t, 6, 2)
	f.advanceTo(t, CutOver)
	f.settled(t)
	crashed := [2]string{"dept01", "emp000077"}
	if err := f.src.Insert(f.b.Ctx, &Employee{Department: crashed[0], EmployeeID: crashed[1], Seq: 3}); err != nil {
		t.Fatal(err)
	}
	f.advanceTo(t, CleanUp)
	f.settled(t)
	for _, c := range []struct {
		k   [2]string
		seq int64
	}{{keys[2], 1}, {crashed, 3}} {
		var armed atomic.Bool
		armed.Store(true)
		f.m.seams.getBetween = func(pk, rk string) {
			if pk == c.k[0] && rk == c.k[1] && armed.CompareAndSwap(true, false) {
				if err := f.m.finish(f.b.Ctx, pk, rk); err != nil {
					t.Error(err)
				}
			}
		}
		v, err := f.m.Get(f.b.Ctx, c.k[0], c.k[1])
		if armed.Load() {
			t.Fatalf("%v: the Get never reached the window", c.k)
		}
		if err != nil || v.Seq != c.seq {
			t.Errorf("%v: Get while the clean-up finished the entity = Seq %d, %v; want %d", c.k, v.Seq, err, c.seq)
		}
	}
}
