package tablearchive

import (
	"context"
	"fmt"
	"strings"

	"github.com/tablepatterns/tablepatterns/patterns/internal/archive"
	"github.com/tablepatterns/tablepatterns/queueworker"
)

// The message kinds of the table jobs.
const (
	KindArchiveTable = "archive-table"
	KindRestoreTable = "restore-table"
	// KindArchiveTableShard and KindCombineShards are the jobs of a sharded
	// archive-table (ArchiveTableJob.Shards > 1): one per shard, and the combine.
	KindArchiveTableShard = "archive-table-shard"
	KindCombineShards     = "archive-table-combine"
)

// Register adds the handlers of the table job kinds to r: archive-table, restore-table,
// and the shard and combine jobs of a sharded archive-table (a sharded job needs
// Options.Queue). A worker that also runs consistency's moves registers both archivers
// into one Registry. A job that finds nothing to do because the data is already where it
// should be succeeds. A job that can never succeed is cancelled into the poison queue at
// once: one that finds nothing at all (OutcomeMissing), an invalid or not allowed job, a
// table that is not sealed or changed during its export, an archive that does not match
// its manifest. Other failures return an error, so the message is delivered again.
//
// Errors: those of queueworker.Handle (a kind registered twice).
func (a *Archiver) Register(r *queueworker.Registry) error {
	if err := queueworker.Handle(r, KindArchiveTable, func(ctx context.Context, msg *queueworker.Message[ArchiveTableJob]) error {
		if err := msg.Payload.Validate(); err != nil {
			return queueworker.Cancel(err)
		}
		if msg.Payload.Shards > 1 {
			// Every delivery of this message plans the same generation.
			rep, err := a.tracedPlanShards(ctx, msg.Payload, messageGeneration(msg.InsertionTime, msg.MessageID))
			return outcomeError(rep.Outcome, err, "table "+msg.Payload.Table)
		}
		rep, err := a.tracedArchiveTable(ctx, msg.Payload)
		return outcomeError(rep.Outcome, err, "table "+msg.Payload.Table)
	}); err != nil {
		return err
	}
	if err := queueworker.Handle(r, KindArchiveTableShard, func(ctx context.Context, msg *queueworker.Message[ShardJob]) error {
		if err := msg.Payload.Validate(); err != nil {
			return queueworker.Cancel(err)
		}
		rep, err := a.tracedShard(ctx, msg.Payload)
		return outcomeError(rep.Outcome, err, fmt.Sprintf("shard %d of table %s", msg.Payload.Shard, msg.Payload.Table))
	}); err != nil {
		return err
	}
	if err := queueworker.Handle(r, KindCombineShards, func(ctx context.Context, msg *queueworker.Message[CombineJob]) error {
		if err := msg.Payload.Validate(); err != nil {
			return queueworker.Cancel(err)
		}
		rep, err := a.tracedCombine(ctx, msg.Payload)
		return outcomeError(rep.Outcome, err, "shards of table "+msg.Payload.Table)
	}); err != nil {
		return err
	}
	return queueworker.Handle(r, KindRestoreTable, func(ctx context.Context, msg *queueworker.Message[RestoreTableJob]) error {
		if err := msg.Payload.Validate(); err != nil {
			return queueworker.Cancel(err)
		}
		rep, err := a.tracedRestoreTable(ctx, msg.Payload)
		return outcomeError(rep.Outcome, err, "archive of table "+msg.Payload.Table)
	})
}

// outcomeError is what the handler of a job returns (archive.HandlerError).
func outcomeError(out Outcome, err error, what string) error {
	return archive.HandlerError(out, err, what, ErrNothingToArchive, permanent)
}

// permanent reports the errors a redelivery cannot fix.
func permanent(err error) bool {
	return archive.Permanent(err, ErrNotSealed, ErrTableChanged, ErrArchiveCorrupt)
}

// EnqueueArchiveTable enqueues an archive-table job.
//
// Errors: ErrInvalidInput (nothing sent), and those of queueworker.Enqueue.
func EnqueueArchiveTable(ctx context.Context, c *queueworker.Client, job ArchiveTableJob) error {
	if err := job.Validate(); err != nil {
		return err
	}
	_, err := queueworker.Enqueue(ctx, c, KindArchiveTable, "table|"+strings.ToLower(job.Table)+"|"+job.Container, job, nil)
	return err
}

// EnqueueRestoreTable enqueues a restore-table job.
//
// Errors: ErrInvalidInput (nothing sent), and those of queueworker.Enqueue.
func EnqueueRestoreTable(ctx context.Context, c *queueworker.Client, job RestoreTableJob) error {
	if err := job.Validate(); err != nil {
		return err
	}
	_, err := queueworker.Enqueue(ctx, c, KindRestoreTable, "restore|"+strings.ToLower(job.Table)+"|"+job.Container+"|"+strings.ToLower(job.Target)+"|"+job.Generation, job, nil)
	return err
}
