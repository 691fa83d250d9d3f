package indexentity

import (
	"context"

	"github.com/tablepatterns/tablepatterns/patterns/internal/maintain"
	"github.com/tablepatterns/tablepatterns/queueworker"
)

// jobKind builds the message kinds of an index, "indexentity.<what>.<table>.<name>": the
// table's name, which has no dot, keeps apart two indexes named alike on two tables (one
// worker can register both, and two workers sharing a queue never take each other's
// messages).
func jobKind(what, table, name string) string {
	return "indexentity." + what + "." + table + "." + name
}

// VerifyKind returns the kind of this index's verify jobs,
// "indexentity.verify.<table>.<name>".
func (ix *SamePartition[T]) VerifyKind() string { return jobKind("verify", ix.primary.Name(), ix.name) }

// RepairKind returns the kind of this index's repair jobs,
// "indexentity.repair.<table>.<name>".
func (ix *SamePartition[T]) RepairKind() string { return jobKind("repair", ix.primary.Name(), ix.name) }

// StartVerify enqueues one verify job per partition (every partition when none is given)
// on SamePartitionOptions.Queue, for the workers that Register set up. Each job runs
// Verify on its partition, writes nothing, and logs one line on the table's logger
// ("index verify") with the counts and the samples as keys (drift kind, the entity's
// PartitionKey and RowKey; no value). A duplicated job logs its line twice.
//
// Errors: errs.ErrInvalidInput (no queue, a bad partition key; nothing sent), those of
// Partitions and of queueworker.Enqueue.
func (ix *SamePartition[T]) StartVerify(ctx context.Context, partitions ...string) error {
	return ix.jobs().Start(ctx, ix.VerifyKind(), partitions, ix.Partitions)
}

// StartRepair enqueues one repair job per partition (every partition when none is given)
// on SamePartitionOptions.Queue, for the workers that Register set up. Each job runs
// Repair on its partition and logs its report ("index repair", with repaired set).
// Repair is idempotent and every write conditional on what it read, so duplicated and
// concurrent jobs are harmless.
//
// Errors: as StartVerify.
func (ix *SamePartition[T]) StartRepair(ctx context.Context, partitions ...string) error {
	return ix.jobs().Start(ctx, ix.RepairKind(), partitions, ix.Partitions)
}

// Register registers the handlers of this index's maintenance jobs on r: BackfillKind,
// VerifyKind and RepairKind (see StartBackfill, StartVerify, StartRepair). A backfill job
// enqueues its continuation on SamePartitionOptions.Queue. A job whose payload does not
// validate (it is read from a queue: untrusted) is cancelled into the poison queue
// before any request.
//
// Errors: errs.ErrInvalidInput (no SamePartitionOptions.Queue, or a kind is taken).
func (ix *SamePartition[T]) Register(r *queueworker.Registry) error {
	return ix.jobs().Register(r)
}

// jobs describes the maintenance jobs of this index for the shared plumbing.
func (ix *SamePartition[T]) jobs() *maintain.Jobs {
	return &maintain.Jobs{
		Backfill: ix.BackfillKind(), Verify: ix.VerifyKind(), Repair: ix.RepairKind(),
		Queue: ix.queue, QueueOption: "SamePartitionOptions.Queue", Logger: ix.primary.Logger(),
		Check:             func(pk string) error { return checkKey(Key{pk, ""}) },
		BackfillPartition: maintain.BackfillFunc(ix.BackfillPartition, resumeAt, Checkpoint.reached),
		VerifyPartition:   maintain.ReportFunc(ix.Verify, (*Report).summary),
		RepairPartition:   maintain.ReportFunc(ix.Repair, (*Report).summary),
	}
}

// VerifyKind returns the kind of this index's verify jobs,
// "indexentity.verify.<table>.<name>".
func (ix *Eventual[T]) VerifyKind() string { return jobKind("verify", ix.primary.Name(), ix.name) }

// RepairKind returns the kind of this index's repair jobs,
// "indexentity.repair.<table>.<name>".
func (ix *Eventual[T]) RepairKind() string { return jobKind("repair", ix.primary.Name(), ix.name) }

// StartVerify enqueues one verify job per partition (every partition when none is given)
// on the index's queue, for the workers Register set up. See SamePartition.StartVerify;
// run it when the queue holds no change messages of the index, or read drift as "repair
// would look at these" (see Verify).
//
// Errors: errs.ErrInvalidInput (a bad partition key; nothing sent), those of Partitions
// and of queueworker.Enqueue.
func (ix *Eventual[T]) StartVerify(ctx context.Context, partitions ...string) error {
	return ix.jobs().Start(ctx, ix.VerifyKind(), partitions, ix.Partitions)
}

// StartRepair enqueues one repair job per partition (every partition when none is given)
// on the index's queue, for the workers Register set up. Each job runs Repair (through
// Reconcile, the live path: idempotent and safe concurrently with the change messages)
// and logs its report.
//
// Errors: as StartVerify.
func (ix *Eventual[T]) StartRepair(ctx context.Context, partitions ...string) error {
	return ix.jobs().Start(ctx, ix.RepairKind(), partitions, ix.Partitions)
}

// jobs describes the maintenance jobs of this index for the shared plumbing.
func (ix *Eventual[T]) jobs() *maintain.Jobs {
	return &maintain.Jobs{
		Backfill: ix.BackfillKind(), Verify: ix.VerifyKind(), Repair: ix.RepairKind(),
		Queue: ix.queue, Logger: ix.primary.Logger(),
		Check:             func(pk string) error { return ix.checkKey(Key{pk, "x"}) },
		BackfillPartition: maintain.BackfillFunc(ix.BackfillPartition, resumeAt, Checkpoint.reached),
		VerifyPartition:   maintain.ReportFunc(ix.Verify, (*Report).summary),
		RepairPartition:   maintain.ReportFunc(ix.Repair, (*Report).summary),
	}
}

// summary is r as a job logs it: counts, and samples as keys (the value a sample names
// is data: left out).
func (r *Report) summary() maintain.Summary {
	s := maintain.Summary{Entities: r.Entities, Copies: r.Entries, Missing: r.Missing, Stale: r.Stale,
		Orphan: r.Orphan, Repaired: r.Repaired}
	for _, smp := range r.Samples {
		s.Samples = append(s.Samples, maintain.SampleKeys{Drift: string(smp.Drift),
			PartitionKey: smp.Key.PartitionKey, RowKey: smp.Key.RowKey})
	}
	return s
}

// resumeAt is the options of a backfill job's call: from its resume point, up to limit
// entities.
func resumeAt(after string, limit int) *BackfillOptions {
	return &BackfillOptions{After: after, Limit: limit}
}

// reached is where a backfill stands: its resume point and whether it is done.
func (cp Checkpoint) reached() (string, bool) { return cp.After, cp.Done }
