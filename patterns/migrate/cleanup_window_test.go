package migrate

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/tablepatterns/tablepatterns/errs"
)

// cleanUpWindowTest leaves one entity's copy behind its old entity at CutOver (stale: a
// writer stopped after its old write; or missing), takes the migration to CleanUp, and
// runs the clean-up with act run once, for that entity, in the window between the
// clean-up's reads of it and its copy write. It returns the entity's keys.
func cleanUpWindowTest(t *testing.T, missing bool, act func(f *fix, pk, rk string)) (*fix, [2]string) {
	f := setup(t, false, false)
	// act's write at CleanUp finishes the entity before it writes the copy, about nine
	// requests in a row under one WriteTimeout.
	f.patient(t)
	keys, _ := f.planned(t, 12, 3)
	f.advanceTo(t, CutOver)
	f.settled(t)
	victim := keys[5]
	if err := f.src.Upsert(f.b.Ctx, &Employee{Department: victim[0], EmployeeID: victim[1], Seq: 40}, nil); err != nil {
		t.Fatal(err)
	}
	if missing {
		c, err := f.m.readCopy(f.b.Ctx, victim[0], victim[1])
		if err != nil || !c.found {
			t.Fatalf("no copy to remove: %v", err)
		}
		if err := f.m.tgt.Delete(f.b.Ctx, c.e.PartitionKey, c.e.RowKey, nil); err != nil {
			t.Fatal(err)
		}
	}
	f.advanceTo(t, CleanUp)
	f.settled(t)
	var armed atomic.Bool
	armed.Store(true)
	f.m.seams.copyWrite = func(_ context.Context, pk, rk string) {
		if pk == victim[0] && rk == victim[1] && armed.CompareAndSwap(true, false) {
			act(f, pk, rk)
		}
	}
	if _, err := f.m.RunAll(f.b.Ctx, KindCleanUp); err != nil {
		t.Fatal(err)
	}
	if armed.Load() {
		t.Fatal("the clean-up never reached the window")
	}
	old, _ := f.rows(t, f.src.Name())
	if len(old) != 0 {
		t.Errorf("%d old entities left after the clean-up", len(old))
	}
	for _, k := range keys {
		if k == victim {
			continue
		}
		if v, err := f.m.Get(f.b.Ctx, k[0], k[1]); err != nil || v.Seq != 1 {
			t.Errorf("Get(%s, %s) = Seq %d, %v; want 1", k[0], k[1], v.Seq, err)
		}
	}
	return f, victim
}

// TestDeleteWhileCleanUpFinishesTheEntityNeverComesBack: the application deletes an
// entity (acknowledged) between the clean-up's reads of it and its copy write (a
// replace of the stale copy, or an insert of the missing one); the entity stays deleted
// in the new layout, through Done.
func TestDeleteWhileCleanUpFinishesTheEntityNeverComesBack(t *testing.T) {
	t.Parallel()
	for _, missing := range []bool{false, true} {
		t.Run(map[bool]string{false: "stale copy", true: "missing copy"}[missing], func(t *testing.T) {
			t.Parallel()
			f, k := cleanUpWindowTest(t, missing, func(f *fix, pk, rk string) {
				if err := f.m.Delete(f.b.Ctx, pk, rk, nil); err != nil {
					t.Error(err)
				}
			})
			if _, err := f.m.Get(f.b.Ctx, k[0], k[1]); !errors.Is(err, errs.ErrNotFound) {
				t.Errorf("Get of the deleted entity at CleanUp = %v, want ErrNotFound", err)
			}
			f.advanceTo(t, Done)
			if _, err := f.m.Get(f.b.Ctx, k[0], k[1]); !errors.Is(err, errs.ErrNotFound) {
				t.Errorf("Get of the deleted entity at Done = %v, want ErrNotFound", err)
			}
			if _, copies := f.rows(t, f.tgt.Name()); len(copies) != 11 {
				t.Errorf("%d copies at Done, want 11", len(copies))
			}
		})
	}
}

// TestWriteWhileCleanUpFinishesTheEntityIsKept: the application updates the entity
// (acknowledged) in the same window; the clean-up never replaces it by the old
// entity's version, and a Get reads the write, at CleanUp and at Done.
func TestWriteWhileCleanUpFinishesTheEntityIsKept(t *testing.T) {
	t.Parallel()
	for _, missing := range []bool{false, true} {
		t.Run(map[bool]string{false: "stale copy", true: "missing copy"}[missing], func(t *testing.T) {
			t.Parallel()
			f, k := cleanUpWindowTest(t, missing, func(f *fix, pk, rk string) {
				if err := f.m.Upsert(f.b.Ctx, &Employee{Department: pk, EmployeeID: rk, Seq: 99}); err != nil {
					t.Error(err)
				}
			})
			if v, err := f.m.Get(f.b.Ctx, k[0], k[1]); err != nil || v.Seq != 99 {
				t.Errorf("Get at CleanUp = Seq %d, %v; want 99", v.Seq, err)
			}
			f.advanceTo(t, Done)
			if v, err := f.m.Get(f.b.Ctx, k[0], k[1]); err != nil || v.Seq != 99 {
				t.Errorf("Get at Done = Seq %d, %v; want 99", v.Seq, err)
			}
		})
	}
}
