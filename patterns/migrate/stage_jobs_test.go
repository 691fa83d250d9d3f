package migrate

import (
	"errors"
	"testing"
)

// TestBackfillJobAfterAbortWritesNothing: a backfill job delivered late (a replay, a
// queue backlog) once the migration is aborting stops with ErrWrongStage before writing
// a copy, so an abort's sweep is never undone behind it.
func TestBackfillJobAfterAbortWritesNothing(t *testing.T) {
	t.Parallel()
	f := setup(t, false, false)
	f.planned(t, 20, 2)
	f.advanceTo(t, Backfill)
	jobs, err := f.m.Jobs(KindBackfill)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.m.Abort(f.b.Ctx); err != nil {
		t.Fatal(err)
	}
	f.settled(t)
	_, _, err = f.m.RunJob(f.b.Ctx, jobs[0])
	var se *StageError
	if !errors.Is(err, ErrWrongStage) || !errors.As(err, &se) || se.Stage != Aborting {
		t.Fatalf("a backfill job at Aborting: %v, want a StageError at aborting", err)
	}
	if _, copies := f.rows(t, f.tgt.Name()); len(copies) != 0 {
		t.Fatalf("%d copies written by a job of a stage left", len(copies))
	}
}
