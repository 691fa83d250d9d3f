package migrate

import (
	"errors"
	"testing"

	"github.com/tablepatterns/tablepatterns/queueworker"
)

// TestAbortJobBeforeTheAbortIsCancelledNotSnoozed: an abort job acts only once the
// record says Aborting. Delivered while the migration goes on (Backfill here), it can
// never act unless someone aborts, so the worker cancels it into the poison queue (from
// where an operator requeues it after Abort), whether copies exist (it would be snoozed
// for ever) or not (it would end as done, having removed nothing); once the record says
// Aborting, not yet settled, it is snoozed until the abort settles.
func TestAbortJobBeforeTheAbortIsCancelledNotSnoozed(t *testing.T) {
	t.Parallel()
	f := setup(t, false, false)
	f.planned(t, 6, 2)
	f.advanceTo(t, Backfill)
	f.settled(t)
	jobs, err := f.m.Jobs(KindAbort)
	if err != nil {
		t.Fatal(err)
	}
	msg := &queueworker.Message[Job]{Kind: KindAbort, Payload: jobs[0]}
	for _, copies := range []bool{false, true} {
		if copies {
			if _, err := f.m.RunAll(f.b.Ctx, KindBackfill); err != nil {
				t.Fatal(err)
			}
		}
		var ce *queueworker.CancelError
		if err := f.m.handle(f.b.Ctx, msg); !errors.As(err, &ce) || !errors.Is(err, ErrWrongStage) {
			t.Errorf("an abort job at Backfill, copies %v: %v, want it cancelled with ErrWrongStage", copies, err)
		}
	}
	if _, err := f.m.Abort(f.b.Ctx); err != nil {
		t.Fatal(err)
	}
	var se *queueworker.SnoozeError
	if err := f.m.handle(f.b.Ctx, msg); !errors.As(err, &se) {
		t.Fatalf("an abort job at Aborting, not yet settled: %v, want it snoozed", err)
	}
	if st, err := f.m.load(f.b.Ctx); err != nil || st.Stage != Aborting {
		t.Fatalf("record = %s, %v; want aborting", st.Stage, err)
	}
}
