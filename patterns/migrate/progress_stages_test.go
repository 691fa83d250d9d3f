package migrate

import (
	"testing"
)

// mustShowNoPass fails t unless the migration's progress is at stage with no pass.
func mustShowNoPass(t *testing.T, f *fix, stage Stage) {
	t.Helper()
	p, err := f.m.Progress(f.b.Ctx)
	if err != nil || p.Stage != stage || len(p.Kinds) != 0 || p.Skipped != 0 {
		t.Fatalf("progress %+v, %v: want %s with no pass", p, err, stage)
	}
}

// TestProgressShowsTheCurrentStagesRunAlone reads the progress of a migration through
// its stages: none before a range job ran, the backfill's while it runs, none of it once
// aborted (Aborting's run is its own: the abort job's pages alone, summed as its report),
// none at Aborted; and none at Done after a run to the end.
func TestProgressShowsTheCurrentStagesRunAlone(t *testing.T) {
	t.Parallel()
	t.Run("aborted", func(t *testing.T) {
		t.Parallel()
		f := setup(t, false, false)
		f.planned(t, 30, 3)
		mustShowNoPass(t, f, Planned)
		f.advanceTo(t, Backfill)
		f.settled(t)
		mustShowNoPass(t, f, Backfill)
		f.m.opts.PageSize = 7
		if _, err := f.m.RunAll(f.b.Ctx, KindBackfill); err != nil {
			t.Fatal(err)
		}
		kindProgress(t, f.b.Ctx, f.m.Progress, KindBackfill)
		if _, err := f.m.Abort(f.b.Ctx); err != nil {
			t.Fatal(err)
		}
		mustShowNoPass(t, f, Aborting)
		f.settled(t)
		rep, err := f.m.RunAll(f.b.Ctx, KindAbort)
		if err != nil {
			t.Fatal(err)
		}
		p, err := f.m.Progress(f.b.Ctx)
		if err != nil || p.Stage != Aborting || len(p.Kinds) != 1 {
			t.Fatalf("progress %+v, %v: want the abort's pass alone", p, err)
		}
		mustEqualReport(t, p.Kinds[0], reportCounts(rep))
		f.advanceTo(t, Aborted)
		mustShowNoPass(t, f, Aborted)
	})
	t.Run("done", func(t *testing.T) {
		t.Parallel()
		f := setup(t, false, false)
		f.planned(t, 20, 2)
		f.advanceTo(t, Done)
		mustShowNoPass(t, f, Done)
	})
}
