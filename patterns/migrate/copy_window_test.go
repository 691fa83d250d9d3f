package migrate

import (
	"context"
	"sync/atomic"
	"testing"
)

// windowTest runs the backfill with act run once, for one key, in the window between the
// backfill's reads of that key and its copy write, and returns that key.
func windowTest(t *testing.T, act func(f *fix, pk, rk string)) (*fix, [2]string) {
	f := setup(t, false, false)
	keys, _ := f.planned(t, 20, 2)
	f.advanceTo(t, Backfill)
	f.settled(t)
	victim := keys[7]
	var armed atomic.Bool
	armed.Store(true)
	f.m.seams.copyWrite = func(_ context.Context, pk, rk string) {
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

// TestWriterBetweenBackfillReadAndCopyWriteNeverLeavesAnOlderCopy: an application write
// through the migration lands between the backfill's reads of an entity and its copy
// write; the backfill's write fails If-Match or is found stale by its confirming read,
// and the copy ends at the writer's version.
func TestWriterBetweenBackfillReadAndCopyWriteNeverLeavesAnOlderCopy(t *testing.T) {
	t.Parallel()
	f, k := windowTest(t, func(f *fix, pk, rk string) {
		if err := f.m.Upsert(f.b.Ctx, &Employee{Department: pk, EmployeeID: rk, Seq: 99}); err != nil {
			t.Error(err)
		}
	})
	v, err := f.m.Get(f.b.Ctx, k[0], k[1])
	if err != nil || v.Seq != 99 {
		t.Fatalf("Get = Seq %d, %v; want 99", v.Seq, err)
	}
}

// TestOldWriteWithoutItsCopyBetweenBackfillReadAndCopyWriteIsCopied: a writer that
// updated the old layout and stopped before its copy step (a crash) does so in the
// window; the backfill's confirming read finds the old entity changed and copies again.
func TestOldWriteWithoutItsCopyBetweenBackfillReadAndCopyWriteIsCopied(t *testing.T) {
	t.Parallel()
	windowTest(t, func(f *fix, pk, rk string) {
		if err := f.src.Upsert(f.b.Ctx, &Employee{Department: pk, EmployeeID: rk, Seq: 99}, nil); err != nil {
			t.Error(err)
		}
	})
}

// TestDeleteBetweenBackfillReadAndCopyWriteNeverComesBack: the entity is deleted through
// the migration between the backfill's reads and its copy insert; the copy the backfill
// wrote is found orphaned by its confirming read and deleted, so the entity never comes
// back in the new layout.
func TestDeleteBetweenBackfillReadAndCopyWriteNeverComesBack(t *testing.T) {
	t.Parallel()
	f, k := windowTest(t, func(f *fix, pk, rk string) {
		if err := f.m.Delete(f.b.Ctx, pk, rk, nil); err != nil {
			t.Error(err)
		}
	})
	f.advanceTo(t, Done)
	if _, copies := f.rows(t, f.tgt.Name()); len(copies) != 19 {
		t.Errorf("%d copies at the end, want 19", len(copies))
	}
	if _, err := f.m.Get(f.b.Ctx, k[0], k[1]); err == nil {
		t.Error("the deleted entity is back")
	}
}

// TestOldDeleteWithoutItsCopyStepBetweenBackfillReadAndCopyWriteNeverComesBack: the old
// entity is deleted by a writer that stopped before its copy step, in the window.
func TestOldDeleteWithoutItsCopyStepBetweenBackfillReadAndCopyWriteNeverComesBack(t *testing.T) {
	t.Parallel()
	windowTest(t, func(f *fix, pk, rk string) {
		if err := f.src.Delete(f.b.Ctx, pk, rk, nil); err != nil {
			t.Error(err)
		}
	})
}
