package tablearchive

import (
	"context"

	"github.com/tablepatterns/tablepatterns/internal/telemetry"
)

// The spans of the table jobs run by the worker (Register): consistency.archive_table
// and consistency.restore_table (one span namespace for every archive job the worker runs,
// moves and table exports alike), children of the worker's queueworker.process span. They carry the tables and
// container, the outcome and the number of entities (tablepatterns.count); never keys.

func (a *Archiver) tracedArchiveTable(ctx context.Context, job ArchiveTableJob) (rep TableReport, err error) {
	ctx, span := telemetry.Start(ctx, "consistency.archive_table", telemetry.KeyTable.String(job.Table),
		telemetry.KeyContainer.String(job.Container))
	defer func() {
		span.SetAttributes(telemetry.KeyOutcome.String(string(rep.Outcome)), telemetry.KeyCount.Int64(rep.Manifest.Entities))
		telemetry.End(span, err)
	}()
	return a.ArchiveTable(ctx, job)
}

func (a *Archiver) tracedRestoreTable(ctx context.Context, job RestoreTableJob) (rep TableReport, err error) {
	target := job.Target
	if target == "" {
		target = job.Table
	}
	ctx, span := telemetry.Start(ctx, "consistency.restore_table", telemetry.KeyTable.String(job.Table),
		telemetry.KeyTargetTable.String(target), telemetry.KeyContainer.String(job.Container))
	defer func() {
		span.SetAttributes(telemetry.KeyOutcome.String(string(rep.Outcome)), telemetry.KeyCount.Int64(rep.Manifest.Entities))
		telemetry.End(span, err)
	}()
	return a.RestoreTable(ctx, job)
}

// The spans of a sharded export: consistency.plan_shards (its count: the shards),
// consistency.export_shard and consistency.combine_shards (the entities).

func (a *Archiver) tracedPlanShards(ctx context.Context, job ArchiveTableJob, gen string) (TableReport, error) {
	return shardSpan(ctx, "consistency.plan_shards", job, func(ctx context.Context) (TableReport, error) {
		rep, err := a.archiveTable(ctx, job, gen)
		rep.Manifest.Entities = int64(rep.Manifest.Shards) // the span's count
		return rep, err
	})
}

func (a *Archiver) tracedShard(ctx context.Context, job ShardJob) (TableReport, error) {
	return shardSpan(ctx, "consistency.export_shard", job.ArchiveTableJob, func(ctx context.Context) (TableReport, error) { return a.ExportShard(ctx, job) })
}

func (a *Archiver) tracedCombine(ctx context.Context, job CombineJob) (TableReport, error) {
	return shardSpan(ctx, "consistency.combine_shards", job.ArchiveTableJob, func(ctx context.Context) (TableReport, error) { return a.CombineShards(ctx, job) })
}

// shardSpan runs one job of a sharded export in a span named name, with its table,
// container, outcome and count (the report's Manifest.Entities).
func shardSpan(ctx context.Context, name string, job ArchiveTableJob, run func(context.Context) (TableReport, error)) (rep TableReport, err error) {
	ctx, span := telemetry.Start(ctx, name, telemetry.KeyTable.String(job.Table), telemetry.KeyContainer.String(job.Container))
	defer func() {
		span.SetAttributes(telemetry.KeyOutcome.String(string(rep.Outcome)), telemetry.KeyCount.Int64(rep.Manifest.Entities))
		telemetry.End(span, err)
	}()
	return run(ctx)
}
