package consistency

import (
	"context"

	"github.com/tablepatterns/tablepatterns/internal/telemetry"
)

// The spans of the move jobs run by the worker (Register): consistency.archive_entity and
// consistency.archive_range (started by handleRange: one delivery, its page or the whole
// range, and the enqueue of its continuation), children of the worker's
// queueworker.process span. They carry the tables and container, the outcome (entity
// jobs) and the number of entities a range delivery moved (tablepatterns.count); never
// keys.

func (a *Archiver) tracedArchiveEntity(ctx context.Context, job ArchiveEntityJob) (out Outcome, err error) {
	ctx, span := telemetry.Start(ctx, "consistency.archive_entity", telemetry.KeyTable.String(job.Source),
		telemetry.KeyTargetTable.String(job.TargetTable), telemetry.KeyContainer.String(job.TargetContainer))
	defer func() {
		span.SetAttributes(telemetry.KeyOutcome.String(string(out)))
		telemetry.End(span, err)
	}()
	return a.ArchiveEntity(ctx, job)
}
