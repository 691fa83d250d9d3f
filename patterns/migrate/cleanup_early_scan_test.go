package migrate

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tablepatterns/tablepatterns/errs"
)

// untilTime waits until the clock reaches at: a point of the stages' schedule.
func untilTime(ctx context.Context, t *testing.T, at time.Time) {
	t.Helper()
	tm := time.NewTimer(time.Until(at))
	defer tm.Stop()
	select {
	case <-tm.C:
	case <-ctx.Done():
		t.Fatal(ctx.Err())
	}
}

// earlyCleanUpScan records CleanUp (from a settled CutOver) and runs a worker's clean-up
// job whose page scan falls in the last quarter of WriteTimeout before CleanUp settles:
// its chunk's stage view then waits until CleanUp has settled and acts under its rules.
// act runs once after the page scan and before the chunk's stage view, while CutOver's
// rules still hold for writers (it is given how long they still hold). It returns the
// job's error.
func (f *fix) earlyCleanUpScan(t *testing.T, act func(left time.Duration)) error {
	t.Helper()
	_, err := f.earlyScan(t, CutOver, act)
	return err
}

// earlyScan advances from the settled stage before (running its work) to the next stage
// and runs the next stage's first job in a worker as earlyCleanUpScan describes; it
// returns the job's report and error.
func (f *fix) earlyScan(t *testing.T, before Stage, act func(left time.Duration)) (Report, error) {
	t.Helper()
	ctx := f.b.Ctx
	f.advanceTo(t, before)
	f.settled(t)
	if _, err := f.m.Advance(ctx); err != nil {
		t.Fatal(err)
	}
	st, err := f.m.load(ctx)
	if err != nil || st.Stage != next[before] {
		t.Fatalf("stage %s, %v; want %s", st.Stage, err, next[before])
	}
	o := f.m.opts
	rulesEnd := st.Since.Add(o.Refresh + o.WriteTimeout + o.ClockSkew) // the last deadline of before's rules
	untilTime(ctx, t, rulesEnd.Add(-o.WriteTimeout/4))
	// A worker process: its own view of the record, read first when its chunk enters.
	worker := f.newMigration(t, "hash-departments", f.m.control.Name())
	var done atomic.Bool
	worker.seams.stateRead = func() {
		if done.CompareAndSwap(false, true) {
			act(time.Until(rulesEnd))
		}
	}
	jobs, err := worker.Jobs(jobOf[st.Stage])
	if err != nil {
		t.Fatal(err)
	}
	_, rep, jerr := worker.RunJob(ctx, jobs[0])
	if !done.Load() {
		t.Fatal("the job never read its stage view after the scan: the window was not reached")
	}
	return rep, jerr
}

// advanceToDone advances until Done and fails with the error that stops it.
func (f *fix) advanceToDone(t *testing.T) {
	t.Helper()
	for range 3 {
		st, err := f.m.Advance(f.b.Ctx)
		if err != nil {
			t.Fatalf("Advance from %s: %v", st.Stage, err)
		}
		if st.Stage == Done {
			return
		}
	}
}

// TestCutOverOldWriteAfterAnEarlyCleanUpScanIsCopiedAndCleanUpFinishes: CleanUp was just
// recorded; a worker's clean-up job scans its page in the last quarter of WriteTimeout
// before CleanUp settles (its chunk's stage view then waits until it has settled, and
// acts under CleanUp's rules). After the scan, and before CutOver's rules end, a writer
// under CutOver's rules lands its old write and stops before its copy step (its deadline
// passed, or it died): an unacknowledged write the clean-up must copy (doc.go: the next
// stage's job, "reading the old layout again, copies" it). The chunk takes the scan's
// version for the current one since CleanUp has settled, detaches the copy of the version
// before, and its delete If-Match that version fails. A reader that read the write before
// the job must never read the version before it after, and the migration must still end
// at Done with the old layout empty and the new layout holding the old layout's last
// version.
func TestCutOverOldWriteAfterAnEarlyCleanUpScanIsCopiedAndCleanUpFinishes(t *testing.T) {
	t.Parallel()
	f := setup(t, false, false)
	keys, _ := f.planned(t, 20, 1)
	victim := keys[5]
	jerr := f.earlyCleanUpScan(t, func(left time.Duration) {
		if err := f.src.Upsert(context.Background(), &Employee{Department: victim[0], EmployeeID: victim[1], Name: "late", Seq: 77}, nil); err != nil {
			t.Error(err)
		}
		t.Logf("the old write landed %v before CutOver's rules ended", left)
		// A reader now: the old layout's version is newer than the copy's.
		if v, err := f.m.Get(context.Background(), victim[0], victim[1]); err != nil || v.Seq != 77 {
			t.Errorf("Get after the old write = Seq %d, %v; want 77", v.Seq, err)
		}
	})
	t.Logf("the clean-up job: %v", jerr)
	if v, err := f.m.Get(f.b.Ctx, victim[0], victim[1]); err != nil || v.Seq != 77 {
		t.Errorf("Get after the clean-up job = Seq %d, %v; a reader saw Seq 77 before: a step back", v.Seq, err)
	}
	f.advanceToDone(t)
	if old, _ := f.rows(t, f.src.Name()); len(old) != 0 {
		t.Errorf("%d old entities left at the end", len(old))
	}
	if v, err := f.m.Get(f.b.Ctx, victim[0], victim[1]); err != nil || v.Seq != 77 {
		t.Errorf("Get = Seq %d, %v; want 77, the old layout's last version", v.Seq, err)
	}
}

// TestCutOverOldDeleteWithoutItsCopyStepAfterAnEarlyCleanUpScanNeverComesBack: as above,
// but the writer under CutOver's rules deletes the entity from the old layout and stops
// before its copy step (the copy of the last version stays). A reader then gets
// ErrNotFound; the clean-up must remove the copy (the copy rule: the old entity gone, the
// copy is deleted), never detach it and serve it again.
func TestCutOverOldDeleteWithoutItsCopyStepAfterAnEarlyCleanUpScanNeverComesBack(t *testing.T) {
	t.Parallel()
	f := setup(t, false, false)
	keys, _ := f.planned(t, 20, 1)
	victim := keys[5]
	jerr := f.earlyCleanUpScan(t, func(left time.Duration) {
		if err := f.src.Delete(context.Background(), victim[0], victim[1], nil); err != nil {
			t.Error(err)
		}
		t.Logf("the old delete landed %v before CutOver's rules ended", left)
		if _, err := f.m.Get(context.Background(), victim[0], victim[1]); !errors.Is(err, errs.ErrNotFound) {
			t.Errorf("Get after the old delete = %v, want ErrNotFound", err)
		}
	})
	if jerr != nil {
		t.Fatalf("the clean-up job: %v", jerr)
	}
	if v, err := f.m.Get(f.b.Ctx, victim[0], victim[1]); !errors.Is(err, errs.ErrNotFound) {
		t.Errorf("Get after the clean-up job = Seq %d, %v; a reader got ErrNotFound before: the deleted entity came back", v.Seq, err)
	}
	f.advanceToDone(t)
	if v, err := f.m.Get(f.b.Ctx, victim[0], victim[1]); !errors.Is(err, errs.ErrNotFound) {
		t.Errorf("Get at Done = Seq %d, %v; want ErrNotFound: the deleted entity came back", v.Seq, err)
	}
	if _, copies := f.rows(t, f.tgt.Name()); len(copies) != len(keys)-1 {
		t.Errorf("%d copies at Done, want %d", len(copies), len(keys)-1)
	}
}

// TestBackfillOldWriteAfterAnEarlyVerifyScanIsCountedStaleAndCopied: as above, one stage
// earlier: a worker's verify job scans its page just before Verify settles, and a writer
// under Backfill's rules lands its old write after the scan and stops before its copy
// step. Verify must count the copy stale and make it current (doc.go: verify "counts
// missing, stale and orphan copies ... and repairs each"; the stopped write is one "the
// next stage's job, reading the old layout again, copies").
func TestBackfillOldWriteAfterAnEarlyVerifyScanIsCountedStaleAndCopied(t *testing.T) {
	t.Parallel()
	f := setup(t, false, false)
	keys, _ := f.planned(t, 20, 1)
	victim := keys[5]
	rep, err := f.earlyScan(t, Backfill, func(left time.Duration) {
		if err := f.src.Upsert(context.Background(), &Employee{Department: victim[0], EmployeeID: victim[1], Name: "late", Seq: 77}, nil); err != nil {
			t.Error(err)
		}
		t.Logf("the old write landed %v before Backfill's rules ended", left)
	})
	if err != nil {
		t.Fatalf("the verify job: %v", err)
	}
	if rep.Stale != 1 {
		t.Errorf("verify counted %d stale copies, want 1 (the copy of (%s, %s))", rep.Stale, victim[0], victim[1])
	}
	f.mustBeCurrent(t, victim[0], victim[1])
}
