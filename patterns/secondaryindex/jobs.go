package secondaryindex

import (
	"context"

	"github.com/tablepatterns/tablepatterns/patterns/internal/maintain"
	"github.com/tablepatterns/tablepatterns/queueworker"
)

// VerifyKind returns the message kind of this index set's verify jobs: Kind followed by
// ".verify" ("secondaryindex.reconcile.Employees.verify" by default).
func (x *Inter[T]) VerifyKind() string { return x.opts.Kind + ".verify" }

// RepairKind returns the message kind of this index set's repair jobs: Kind followed by
// ".repair".
func (x *Inter[T]) RepairKind() string { return x.opts.Kind + ".repair" }

// StartVerify enqueues one verify job per partition (every partition of the primary
// table when none is given; see Partitions) for the workers that Register set up. Each
// job runs Verify on its partition, writes nothing, and logs one line on the primary
// table's logger ("index verify") with the counts and the samples as keys (drift kind,
// index, the entity's PartitionKey and RowKey; no indexed value). A duplicated job logs
// its line twice.
//
// Errors: errs.ErrInvalidInput (a bad partition key; nothing sent), those of Partitions
// and of queueworker.Enqueue.
func (x *Inter[T]) StartVerify(ctx context.Context, partitions ...string) error {
	return x.jobs().Start(ctx, x.VerifyKind(), partitions, x.Partitions)
}

// StartRepair enqueues one repair job per partition (every partition when none is
// given) for the workers that Register set up. Each job runs Repair on its partition and
// logs its report as a verify job does ("index repair", with repaired set). Repair is
// idempotent and safe concurrently with itself and the application's writes, so
// duplicated and concurrent jobs are harmless.
//
// Errors: as StartVerify.
func (x *Inter[T]) StartRepair(ctx context.Context, partitions ...string) error {
	return x.jobs().Start(ctx, x.RepairKind(), partitions, x.Partitions)
}

// registerJobs registers the handlers of the backfill, verify and repair jobs (see
// Register).
func (x *Inter[T]) registerJobs(r *queueworker.Registry) error { return x.jobs().Register(r) }

// jobs describes the maintenance jobs of this Inter for the shared plumbing.
func (x *Inter[T]) jobs() *maintain.Jobs {
	return &maintain.Jobs{
		Backfill: x.BackfillKind(), Verify: x.VerifyKind(), Repair: x.RepairKind(),
		Queue: x.queue, Logger: x.primary.Logger(),
		Check:             func(pk string) error { return x.checkRef(pk, "") },
		BackfillPartition: maintain.BackfillFunc(x.BackfillPartition, resumeAt, Checkpoint.reached),
		VerifyPartition:   maintain.ReportFunc(x.Verify, (*Report).summary),
		RepairPartition:   maintain.ReportFunc(x.Repair, (*Report).summary),
	}
}

// VerifyKind returns the message kind of this Intra's verify jobs:
// "secondaryindex.verify." followed by the table's name.
func (x *Intra[T]) VerifyKind() string { return "secondaryindex.verify." + x.rows.Name() }

// RepairKind returns the message kind of this Intra's repair jobs:
// "secondaryindex.repair." followed by the table's name.
func (x *Intra[T]) RepairKind() string { return "secondaryindex.repair." + x.rows.Name() }

// StartVerify enqueues one verify job per partition (every partition when none is given)
// on IntraOptions.Queue, for the workers that Register set up. See Inter.StartVerify.
//
// Errors: errs.ErrInvalidInput (no IntraOptions.Queue, a bad partition key; nothing
// sent), those of Partitions and of queueworker.Enqueue.
func (x *Intra[T]) StartVerify(ctx context.Context, partitions ...string) error {
	return x.jobs().Start(ctx, x.VerifyKind(), partitions, x.Partitions)
}

// StartRepair enqueues one repair job per partition (every partition when none is given)
// on IntraOptions.Queue, for the workers that Register set up. See Inter.StartRepair.
//
// Errors: as StartVerify.
func (x *Intra[T]) StartRepair(ctx context.Context, partitions ...string) error {
	return x.jobs().Start(ctx, x.RepairKind(), partitions, x.Partitions)
}

// Register registers the handlers of this Intra's maintenance jobs on r: BackfillKind,
// VerifyKind and RepairKind (see StartBackfill, StartVerify, StartRepair). A backfill job
// enqueues its continuation on IntraOptions.Queue. A job whose payload does not validate
// (it is read from a queue: untrusted) is cancelled into the poison queue before any
// request.
//
// Errors: errs.ErrInvalidInput (no IntraOptions.Queue), those of queueworker.Handle.
func (x *Intra[T]) Register(r *queueworker.Registry) error {
	return x.jobs().Register(r)
}

// jobs describes the maintenance jobs of this Intra for the shared plumbing.
func (x *Intra[T]) jobs() *maintain.Jobs {
	return &maintain.Jobs{
		Backfill: x.BackfillKind(), Verify: x.VerifyKind(), Repair: x.RepairKind(),
		Queue: x.queue, QueueOption: "IntraOptions.Queue", Logger: x.rows.Logger(),
		BackfillPartition: maintain.BackfillFunc(x.BackfillPartition, resumeAt, Checkpoint.reached),
		VerifyPartition:   maintain.ReportFunc(x.Verify, (*Report).summary),
		RepairPartition:   maintain.ReportFunc(x.Repair, (*Report).summary),
	}
}

// resumeAt is the options of a backfill job's call: from its resume point, up to limit
// entities.
func resumeAt(after string, limit int) *BackfillOptions {
	return &BackfillOptions{After: after, Limit: limit}
}

// reached is where a backfill stands: its resume point and whether it is done.
func (cp Checkpoint) reached() (string, bool) { return cp.After, cp.Done }

// summary is r as a job logs it: counts, and samples as keys (the copy's key, which
// holds the indexed value, is left out).
func (r *Report) summary() maintain.Summary {
	s := maintain.Summary{Entities: r.Entities, Copies: r.Copies, Missing: r.Missing, Stale: r.Stale,
		Orphan: r.Orphan, Conflict: r.Conflict, Unindexable: r.Unindexable, Repaired: r.Repaired}
	for _, smp := range r.Samples {
		s.Samples = append(s.Samples, maintain.SampleKeys{Drift: string(smp.Drift), Index: smp.Index,
			PartitionKey: smp.PartitionKey, RowKey: smp.RowKey})
	}
	return s
}
