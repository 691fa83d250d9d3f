package migrate

import (
	"context"
	"sync/atomic"
	"testing"
)

// confirmWindowTest runs the backfill with act run once, for one key, in the window
// between the backfill's copy write and its confirming re-read of the old entity, and
// checks every copy current (or absent with its old entity) at the end.
func confirmWindowTest(t *testing.T, act func(f *fix, pk, rk string)) (*fix, [2]string) {
	f := setup(t, false, false)
	keys, _ := f.planned(t, 20, 2)
	f.advanceTo(t, Backfill)
	f.settled(t)
	victim := keys[9]
	var armed atomic.Bool
	armed.Store(true)
	f.m.seams.copyWritten = func(_ context.Context, pk, rk string) {
		if pk == victim[0] && rk == victim[1] && armed.CompareAndSwap(true, false) {
			act(f, pk, rk)
		}
	}
	if _, err := f.m.RunAll(f.b.Ctx, KindBackfill); err != nil {
		t.Fatal(err)
	}
	if armed.Load() {
		t.Fatal("the backfill never reached the window")
	}
	for _, k := range keys {
		f.mustBeCurrent(t, k[0], k[1])
	}
	return f, victim
}

// TestOldWriteWithoutItsCopyBetweenCopyWriteAndConfirmingReadIsCopied: a writer updates
// the old entity and stops before its copy step (a crash) just after the backfill wrote
// the copy of the previous version; the confirming re-read finds the change and the copy
// ends at the writer's version.
func TestOldWriteWithoutItsCopyBetweenCopyWriteAndConfirmingReadIsCopied(t *testing.T) {
	t.Parallel()
	f, k := confirmWindowTest(t, func(f *fix, pk, rk string) {
		if err := f.src.Upsert(f.b.Ctx, &Employee{Department: pk, EmployeeID: rk, Seq: 77}, nil); err != nil {
			t.Error(err)
		}
	})
	if v, err := f.m.Get(f.b.Ctx, k[0], k[1]); err != nil || v.Seq != 77 {
		t.Fatalf("Get = Seq %d, %v; want 77", v.Seq, err)
	}
}

// TestOldDeleteWithoutItsCopyStepBetweenCopyWriteAndConfirmingReadNeverComesBack: the
// old entity is deleted by a writer that stops before its copy step, just after the
// backfill wrote its copy; the confirming re-read finds it gone and the copy is removed,
// so the entity never comes back, through Done.
func TestOldDeleteWithoutItsCopyStepBetweenCopyWriteAndConfirmingReadNeverComesBack(t *testing.T) {
	t.Parallel()
	f, k := confirmWindowTest(t, func(f *fix, pk, rk string) {
		if err := f.src.Delete(f.b.Ctx, pk, rk, nil); err != nil {
			t.Error(err)
		}
	})
	f.advanceTo(t, Done)
	if _, copies := f.rows(t, f.tgt.Name()); len(copies) != 19 {
		t.Errorf("%d copies at Done, want 19", len(copies))
	}
	if _, err := f.m.Get(f.b.Ctx, k[0], k[1]); err == nil {
		t.Error("the deleted entity is back")
	}
}
