package consistency

import (
	"context"
	"fmt"
	"strings"

	"github.com/tablepatterns/tablepatterns/patterns/internal/archive"
	"github.com/tablepatterns/tablepatterns/queueworker"
)

// KindArchiveEntity is the message kind of an archive-entity job.
const KindArchiveEntity = "archive-entity"

// Register adds the handlers of the move job kinds to r: archive-entity and
// archive-range (a range job that checkpoints needs Options.Queue). A worker that also
// exports whole tables registers a tablearchive.Archiver into the same Registry. A job
// that finds nothing to do because the data is already where it should be succeeds. A
// job that can never succeed is cancelled into the poison queue at once: one that finds
// nothing at all (OutcomeMissing), an invalid or not allowed job. Other failures return
// an error, so the message is delivered again.
//
// Errors: those of queueworker.Handle (a kind registered twice).
func (a *Archiver) Register(r *queueworker.Registry) error {
	if err := queueworker.Handle(r, KindArchiveEntity, func(ctx context.Context, msg *queueworker.Message[ArchiveEntityJob]) error {
		if err := msg.Payload.Validate(); err != nil {
			return queueworker.Cancel(err)
		}
		out, err := a.tracedArchiveEntity(ctx, msg.Payload)
		return outcomeError(out, err, fmt.Sprintf("%s(%s,%s)", msg.Payload.Source, msg.Payload.PartitionKey, msg.Payload.RowKey))
	}); err != nil {
		return err
	}
	return queueworker.Handle(r, KindArchiveRange, func(ctx context.Context, msg *queueworker.Message[ArchiveRangeJob]) error {
		if err := msg.Payload.Validate(); err != nil {
			return queueworker.Cancel(err)
		}
		return a.handleRange(ctx, msg.Payload)
	})
}

// outcomeError is what the handler of a job returns (archive.HandlerError).
func outcomeError(out Outcome, err error, what string) error {
	return archive.HandlerError(out, err, what, ErrNothingToArchive, permanent)
}

// permanent reports the errors a redelivery cannot fix.
func permanent(err error) bool { return archive.Permanent(err) }

// EnqueueArchiveEntity enqueues an archive-entity job: the first step of the eventually
// consistent move (the message is the durable intent). The message id is derived from the
// job (table names in lower case), so duplicates of one job carry the same id.
//
// Errors: ErrInvalidInput (nothing sent), and those of queueworker.Enqueue.
func EnqueueArchiveEntity(ctx context.Context, c *queueworker.Client, job ArchiveEntityJob) error {
	if err := job.Validate(); err != nil {
		return err
	}
	target := strings.ToLower(job.TargetTable) // table names are case-insensitive
	if target == "" {
		target = "blob:" + job.TargetContainer
	}
	id := fmt.Sprintf("%s|%s|%s|%s", strings.ToLower(job.Source), job.PartitionKey, job.RowKey, target)
	_, err := queueworker.Enqueue(ctx, c, KindArchiveEntity, id, job, nil)
	return err
}
