package migrate

import (
	"context"
	"sync/atomic"
	"testing"
	"time"
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
	f.advanceTo(t, CutOver)
	f.settled(t)
	ctx := f.b.Ctx
	if _, err := f.m.Advance(ctx); err != nil {
		t.Fatal(err)
	}
	st, err := f.m.load(ctx)
	if err != nil || st.Stage != CleanUp {
		t.Fatalf("stage %s, %v; want CleanUp", st.Stage, err)
	}
	o := f.m.opts
	cutOverEnds := st.Since.Add(o.Refresh + o.WriteTimeout + o.ClockSkew) // CutOver's last deadline
	untilTime(ctx, t, cutOverEnds.Add(-o.WriteTimeout/4))
	// A worker process: its own view of the record, read first when its chunk enters.
	worker := f.newMigration(t, "hash-departments", f.m.control.Name())
	victim := keys[5]
	var wrote atomic.Bool
	var landed time.Time
	worker.seams.stateRead = func() {
		if wrote.CompareAndSwap(false, true) {
			// After the page scan, before the chunk's stage view.
			if err := f.src.Upsert(context.Background(), &Employee{Department: victim[0], EmployeeID: victim[1], Name: "late", Seq: 77}, nil); err != nil {
				t.Error(err)
			}
			landed = time.Now()
			// A reader now: the old layout's version is newer than the copy's.
			if v, err := f.m.Get(context.Background(), victim[0], victim[1]); err != nil || v.Seq != 77 {
				t.Errorf("Get after the old write = Seq %d, %v; want 77", v.Seq, err)
			}
		}
	}
	jobs, err := worker.Jobs(KindCleanUp)
	if err != nil {
		t.Fatal(err)
	}
	_, _, jerr := worker.RunJob(ctx, jobs[0])
	if !wrote.Load() {
		t.Fatal("the job never read its stage view after the scan: the window was not reached")
	}
	t.Logf("the old write landed %v before CutOver's rules ended; the job: %v", cutOverEnds.Sub(landed), jerr)
	if v, err := f.m.Get(ctx, victim[0], victim[1]); err != nil || v.Seq != 77 {
		t.Errorf("Get after the clean-up job = Seq %d, %v; a reader saw Seq 77 before: a step back", v.Seq, err)
	}
	for round := 0; round < 3; round++ {
		st, err := f.m.Advance(ctx)
		if err != nil {
			t.Fatalf("Advance from %s: %v", st.Stage, err)
		}
		if st.Stage == Done {
			break
		}
	}
	if old, _ := f.rows(t, f.src.Name()); len(old) != 0 {
		t.Errorf("%d old entities left at the end", len(old))
	}
	if v, err := f.m.Get(ctx, victim[0], victim[1]); err != nil || v.Seq != 77 {
		t.Errorf("Get = Seq %d, %v; want 77, the old layout's last version", v.Seq, err)
	}
}
