package migrate

import (
	"errors"
	"testing"

	"github.com/tablepatterns/tablepatterns/queueworker"
)

// TestSchemaDowngradeJobBeforeTheAbortIsCancelledNotSnoozed: an abort's job acts only
// once the record says Aborting; one delivered before, when the migration may never be
// aborted, is cancelled into the poison queue (doc.go), not snoozed, where it would
// come back for as long as the migration lives and forever after Done.
func TestSchemaDowngradeJobBeforeTheAbortIsCancelledNotSnoozed(t *testing.T) {
	t.Parallel()
	f := setupStaged(t, false, 0)
	f.planned(t, 6, 2)
	jobs, err := f.s.Jobs(KindSchemaDowngrade)
	if err != nil {
		t.Fatal(err)
	}
	msg := &queueworker.Message[Job]{Kind: KindSchemaDowngrade, Payload: jobs[0]}
	for _, stage := range []Stage{Backfill, Done} {
		f.advanceTo(t, stage)
		if _, err := f.s.WaitSettled(f.b.Ctx); err != nil {
			t.Fatal(err)
		}
		var ce *queueworker.CancelError
		if err := f.s.handle(f.b.Ctx, msg); !errors.As(err, &ce) {
			t.Errorf("a downgrade job at %s: %v, want it cancelled", stage, err)
		}
	}
}
