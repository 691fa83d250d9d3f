package consistency

import (
	"testing"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/codes"

	"github.com/tablepatterns/tablepatterns/internal/telemetry"
	"github.com/tablepatterns/tablepatterns/internal/telemetry/telemetrytest"
	"github.com/tablepatterns/tablepatterns/internal/testenv"
)

// An archive-table job enqueued inside the caller's span: enqueue under the caller,
// process under enqueue, consistency.archive_table under process with the table, the
// container, the outcome and the number of entities. An archive-entity job that finds
// nothing records outcome "missing" on its span; the worker's process span, whose message
// is cancelled into the poison queue, has the error status.
func TestArchiveJobSpans(t *testing.T) {
	t.Parallel()
	telemetrytest.Install()
	b := setup(t, "")
	signIns(t, b, b.current, 40)
	container := testenv.ContainerName(t)
	w, c := newWorker(t, b, testenv.QueueName(t), b.a)

	ctx, root := otel.Tracer("test").Start(b.ctx, "test.operator")
	if err := EnqueueArchiveTable(ctx, c, ArchiveTableJob{Table: b.current.Name(), Container: container, Sealed: true}); err != nil {
		t.Fatal(err)
	}
	if err := EnqueueArchiveEntity(ctx, c, b.job("Sales", "ghost")); err != nil {
		t.Fatal(err)
	}
	root.End()
	drain(t, w)

	jobs := telemetrytest.Find("consistency.archive_table", telemetry.KeyTable.String(b.current.Name()))
	if len(jobs) != 1 {
		t.Fatalf("%d archive_table spans, want 1", len(jobs))
	}
	job := jobs[0]
	if !telemetrytest.HasAll(job.Attributes, telemetry.KeyContainer.String(container),
		telemetry.KeyOutcome.String(string(OutcomeMoved)), telemetry.KeyCount.Int64(40)) {
		t.Errorf("archive_table attributes %v", job.Attributes)
	}
	process, ok := telemetrytest.ByID(job.Parent)
	if !ok || process.Name != "queueworker.process" {
		t.Fatalf("archive_table's parent is %q (found %v), want queueworker.process", process.Name, ok)
	}
	enqueue, ok := telemetrytest.ByID(process.Parent)
	if !ok || enqueue.Name != "queueworker.enqueue" || enqueue.Parent.SpanID() != root.SpanContext().SpanID() {
		t.Fatalf("process's parent is %q (found %v), want the enqueue span under the operator's span", enqueue.Name, ok)
	}

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
