package consistency

import (
	"testing"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/codes"

	"github.com/tablepatterns/tablepatterns/internal/telemetry"
	"github.com/tablepatterns/tablepatterns/internal/telemetry/telemetrytest"
	"github.com/tablepatterns/tablepatterns/internal/testenv"
)

// An archive-entity job enqueued inside the caller's span that finds nothing records
// outcome "missing" on its consistency.archive_entity span; the worker's process span,
// whose message is cancelled into the poison queue, has the error status.
func TestArchiveJobSpans(t *testing.T) {
	t.Parallel()
	telemetrytest.Install()
	b := setup(t, "")
	w, c := newWorker(t, b, testenv.QueueName(t), b.a)

	ctx, root := otel.Tracer("test").Start(b.ctx, "test.operator")
	if err := EnqueueArchiveEntity(ctx, c, b.job("Sales", "ghost")); err != nil {
		t.Fatal(err)
	}
	root.End()
	drain(t, w)

	ghosts := telemetrytest.Find("consistency.archive_entity", telemetry.KeyTable.String(b.current.Name()))
	if len(ghosts) != 1 || !telemetrytest.HasAll(ghosts[0].Attributes, telemetry.KeyOutcome.String(string(OutcomeMissing))) {
		t.Fatalf("archive_entity spans %v", ghosts)
	}
	if ghosts[0].Status.Code == codes.Error {
		t.Errorf("a job that found nothing is an outcome, not an error of the job span")
	}
	if p, ok := telemetrytest.ByID(ghosts[0].Parent); !ok || p.Status.Code != codes.Error {
		t.Errorf("the process span of a cancelled message: found %v, status %v; want an error", ok, p.Status)
	}
}
