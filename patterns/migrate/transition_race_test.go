package migrate

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/tablepatterns/tablepatterns/errs"
)

// TestAbortDuringAdvancesVerifyPassWinsAndLeavesTheOldLayout: one process Advances from
// Verify (its verify pass repairing a stale copy) while another Aborts, the abort landing
// inside the verify pass, between its reads of an entity and its copy write. The record
// moves once, to Aborting from Verify; the Advance's transition to CutOver is refused
// (ErrPreconditionFailed) or its pass stops at the new stage (ErrWrongStage), never
// recorded; the abort then leaves the old layout complete and current, and no copy.
func TestAbortDuringAdvancesVerifyPassWinsAndLeavesTheOldLayout(t *testing.T) {
	t.Parallel()
	f := setup(t, false, false)
	keys, md := f.planned(t, 12, 3)
	f.advanceTo(t, Verify)
	f.settled(t)
	victim := keys[4]
	if err := f.src.Upsert(f.b.Ctx, &Employee{Department: victim[0], EmployeeID: victim[1], Seq: 8}, nil); err != nil {
		t.Fatal(err)
	}
	md.set(victim[0], victim[1], 8)
	other := f.newMigration(t, f.m.spec.Name, f.m.spec.Control)
	var armed atomic.Bool
	armed.Store(true)
	f.m.seams.copyWrite = func(_ context.Context, pk, rk string) {
		if pk == victim[0] && rk == victim[1] && armed.CompareAndSwap(true, false) {
			if st, err := other.Abort(f.b.Ctx); err != nil || st.Stage != Aborting {
				t.Errorf("Abort inside the verify pass = %s, %v", st.Stage, err)
			}
		}
	}
	_, err := f.m.Advance(f.b.Ctx)
	if armed.Load() {
		t.Fatal("the verify pass never reached the window")
	}
	if !errors.Is(err, errs.ErrPreconditionFailed) && !errors.Is(err, ErrWrongStage) {
		t.Fatalf("Advance across the abort = %v; want ErrPreconditionFailed or ErrWrongStage", err)
	}
	st, err := f.m.load(f.b.Ctx)
	if err != nil || st.Stage != Aborting || st.Previous != Verify {
		t.Fatalf("record after the race = %s from %s, %v; want aborting from verify", st.Stage, st.Previous, err)
	}
	f.m.seams.copyWrite = nil
	f.advanceTo(t, Aborted)
	f.mustHoldOldOnly(t, md)
}

// TestTwoTransitionsFromOneRecordMoveItOnce: two processes that read the same record
// (two operators' Advance, or an Advance and an Abort) transition it at once; exactly one
// moves it, the other is refused (ErrPreconditionFailed) and the record holds the
// winner's stage, reached from DualWrite.
func TestTwoTransitionsFromOneRecordMoveItOnce(t *testing.T) {
	t.Parallel()
	f := setup(t, false, false)
	f.planned(t, 4, 2)
	f.advanceTo(t, DualWrite)
	for _, to := range [][2]Stage{{Backfill, Backfill}, {Backfill, Aborting}} {
		procs := []*Migration[Employee, EmployeeV2]{f.m, f.newMigration(t, f.m.spec.Name, f.m.spec.Control)}
		read := make([]State, len(procs))
		for i, p := range procs {
			st, err := p.load(f.b.Ctx)
			if err != nil || st.Stage != DualWrite {
				t.Fatalf("record = %s, %v; want dualwrite", st.Stage, err)
			}
			read[i] = st
		}
		errsOf := make([]error, len(procs))
		var wg sync.WaitGroup
		for i, p := range procs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, errsOf[i] = p.transition(f.b.Ctx, read[i], to[i])
			}()
		}
		wg.Wait()
		winner := -1
		for i, err := range errsOf {
			switch {
			case err == nil && winner >= 0:
				t.Errorf("%v: both transitions succeeded", to)
			case err == nil:
				winner = i
			case !errors.Is(err, errs.ErrPreconditionFailed):
				t.Errorf("%v: transition = %v, want nil or ErrPreconditionFailed", to, err)
			}
		}
		if winner < 0 {
			t.Fatalf("%v: no transition succeeded: %v", to, errsOf)
		}
		st, err := f.m.load(f.b.Ctx)
		if err != nil || st.Stage != to[winner] || st.Previous != DualWrite {
			t.Fatalf("%v: record = %s from %s, %v; want %s from dualwrite", to, st.Stage, st.Previous, err, to[winner])
		}
		if st.Stage == Aborting {
			return
		}
		// Back to DualWrite for the next pair: a record as an operator would not write
		// it, only to rerun the race.
		r := record{PartitionKey: f.m.recordKey(), RowKey: recordRowKey, ETag: st.etag, Name: f.m.spec.Name, Kind: kindRekey,
			Target: st.Target, Stage: string(DualWrite), Previous: string(Planned)}
		if err := f.m.control.Update(f.b.Ctx, &r, nil); err != nil {
			t.Fatal(err)
		}
	}
}
