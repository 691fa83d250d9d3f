package migrate

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/tablepatterns/tablepatterns/errs"
)

// scanWindow runs kind's job with act run once, for the victim, in the window between
// the page scan of the old layout and the read of the victim's copy. It fails when the
// job never reached the window.
func (f *fix) scanWindow(t *testing.T, kind string, victim [2]string, act func(pk, rk string)) Report {
	t.Helper()
	var armed atomic.Bool
	armed.Store(true)
	f.m.seams.scanned = func(_ context.Context, pk, rk string) {
		if pk == victim[0] && rk == victim[1] && armed.CompareAndSwap(true, false) {
			act(pk, rk)
		}
	}
	rep, err := f.m.RunAll(f.b.Ctx, kind)
	f.m.seams.scanned = nil
	if err != nil {
		t.Fatal(err)
	}
	if armed.Load() {
		t.Fatalf("the %s never reached the window", kind)
	}
	return rep
}

// TestWriteBetweenPageScanAndCopyReadEndsCurrent: an application write and an
// application delete through the migration land between the backfill's page scan and its
// read of the copy (the scan saw the version before them); every copy ends current, the
// deleted entity has none, through Done.
func TestWriteBetweenPageScanAndCopyReadEndsCurrent(t *testing.T) {
	t.Parallel()
	f := setup(t, false, false)
	keys, _ := f.planned(t, 20, 2)
	f.advanceTo(t, Backfill)
	f.settled(t)
	written, deleted := keys[7], keys[8]
	f.scanWindow(t, KindBackfill, written, func(pk, rk string) {
		if err := f.m.Upsert(f.b.Ctx, &Employee{Department: pk, EmployeeID: rk, Seq: 99}); err != nil {
			t.Error(err)
		}
		if err := f.m.Delete(f.b.Ctx, deleted[0], deleted[1], nil); err != nil {
			t.Error(err)
		}
	})
	for _, k := range keys {
		f.mustBeCurrent(t, k[0], k[1])
	}
	f.advanceTo(t, Done)
	if v, err := f.m.Get(f.b.Ctx, written[0], written[1]); err != nil || v.Seq != 99 {
		t.Errorf("Get = Seq %d, %v; want 99", v.Seq, err)
	}
	if _, err := f.m.Get(f.b.Ctx, deleted[0], deleted[1]); !errors.Is(err, errs.ErrNotFound) {
		t.Errorf("Get of the deleted entity = %v, want ErrNotFound", err)
	}
}

// TestOldWriteWithoutItsCopyBetweenPageScanAndCopyReadIsRepairedByTheNextPasses: a second
// backfill pass over current copies, where a writer that stopped after its old write
// (no copy step) updates one entity and deletes another between the page scan and the
// copy reads. The copies record the versions the scan saw, so that pass writes nothing;
// the next passes, reading the old layout again (Advance's own backfill pass, which
// copies the update, and verify, which counts the orphan), repair both, and Done holds
// the writer's version and not the deleted entity.
func TestOldWriteWithoutItsCopyBetweenPageScanAndCopyReadIsRepairedByTheNextPasses(t *testing.T) {
	t.Parallel()
	f := setup(t, false, false)
	keys, _ := f.planned(t, 20, 2)
	f.advanceTo(t, Backfill)
	f.settled(t)
	if _, err := f.m.RunAll(f.b.Ctx, KindBackfill); err != nil {
		t.Fatal(err)
	}
	written, deleted := keys[7], keys[8]
	f.scanWindow(t, KindBackfill, deleted, func(pk, rk string) {
		if err := f.src.Upsert(f.b.Ctx, &Employee{Department: written[0], EmployeeID: written[1], Seq: 99}, nil); err != nil {
			t.Error(err)
		}
		if err := f.src.Delete(f.b.Ctx, pk, rk, nil); err != nil {
			t.Error(err)
		}
	})
	if c, err := f.m.readCopy(f.b.Ctx, written[0], written[1]); err != nil || seqOf(*c.e) != 1 {
		t.Fatalf("the pass copied the write made in the window (Seq %d, %v): the window was not reached", seqOf(*c.e), err)
	}
	f.advanceTo(t, Verify)
	f.settled(t)
	rep, err := f.m.RunAll(f.b.Ctx, KindVerify)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Stale != 0 || rep.Orphans != 1 || rep.Missing != 0 {
		t.Errorf("verify counted %d stale, %d orphans, %d missing; want 0, 1, 0", rep.Stale, rep.Orphans, rep.Missing)
	}
	for _, k := range keys {
		f.mustBeCurrent(t, k[0], k[1])
	}
	f.advanceTo(t, Done)
	if v, err := f.m.Get(f.b.Ctx, written[0], written[1]); err != nil || v.Seq != 99 {
		t.Errorf("Get = Seq %d, %v; want 99", v.Seq, err)
	}
	if _, copies := f.rows(t, f.tgt.Name()); len(copies) != 19 {
		t.Errorf("%d copies at Done, want 19", len(copies))
	}
}

// TestWriteAndDeleteBetweenCleanUpScanAndCopyReadAreKept: once CleanUp began, an
// application write and delete (each finishing the entity first, then writing the new
// layout alone) land between the clean-up's page scan and its copy reads; the clean-up
// never brings the old version back nor the deleted entity, and deletes every old
// entity.
func TestWriteAndDeleteBetweenCleanUpScanAndCopyReadAreKept(t *testing.T) {
	t.Parallel()
	f := setup(t, false, false)
	keys, _ := f.planned(t, 20, 2)
	f.advanceTo(t, CleanUp)
	f.settled(t)
	written, deleted := keys[7], keys[8]
	f.scanWindow(t, KindCleanUp, written, func(pk, rk string) {
		if err := f.m.Upsert(f.b.Ctx, &Employee{Department: pk, EmployeeID: rk, Seq: 99}); err != nil {
			t.Error(err)
		}
		if err := f.m.Delete(f.b.Ctx, deleted[0], deleted[1], nil); err != nil {
			t.Error(err)
		}
	})
	if old, _ := f.rows(t, f.src.Name()); len(old) != 0 {
		t.Errorf("%d old entities left after the clean-up", len(old))
	}
	f.advanceTo(t, Done)
	if v, err := f.m.Get(f.b.Ctx, written[0], written[1]); err != nil || v.Seq != 99 {
		t.Errorf("Get = Seq %d, %v; want 99", v.Seq, err)
	}
	if _, err := f.m.Get(f.b.Ctx, deleted[0], deleted[1]); !errors.Is(err, errs.ErrNotFound) {
		t.Errorf("Get of the deleted entity = %v, want ErrNotFound", err)
	}
	if _, copies := f.rows(t, f.tgt.Name()); len(copies) != 19 {
		t.Errorf("%d copies at Done, want 19", len(copies))
	}
}
