package secondaryindex

import (
	"context"
	"errors"

	"github.com/tablepatterns/tablepatterns/queueworker"
	"github.com/tablepatterns/tablepatterns/repo"
)

// Register registers the reconciliation handler for Kind on r, the maintenance jobs'
// handlers for BackfillKind, VerifyKind and RepairKind (see StartBackfill, StartVerify,
// StartRepair). The handler calls Reconcile; a
// message that can never succeed (keys or a stored value that cannot be indexed) is
// cancelled into the poison queue, any other failure is retried by the worker.
//
// Errors: those of queueworker.Handle (a kind already registered).
func (x *Inter[T]) Register(r *queueworker.Registry) error {
	handle := func(ctx context.Context, m *queueworker.Message[Ref]) error {
		err := x.Reconcile(ctx, m.Payload.PartitionKey, m.Payload.RowKey)
		if errors.Is(err, repo.ErrInvalidInput) {
			return queueworker.Cancel(err)
		}
		return err
	}
	if err := queueworker.Handle(r, x.opts.Kind, handle); err != nil {
		return err
	}
	return x.registerJobs(r)
}

// Reconcile makes every index copy of the primary entity (pk, rk) match what the primary
// table holds now: it writes the copies of the current values, removes the copies of
// values the entity no longer has, and removes every copy of an entity that is gone. It
// trusts nothing but the tables, so any number of calls for any entities, duplicated,
// reordered, concurrent or replayed long after, leave the copies of the last state of
// each entity. It is the message handler's body, and safe to call directly.
//
// Per index it reads the index's ref row (which copy is written, from which version of
// the primary), then the primary, and, unless the ref records that very version, runs one
// entity group transaction in the index partition: the new copy, the removal of the old
// one and the ref, conditional on the ref's ETag (or inserting the first ref). Refs are
// never deleted: an entity without a copy keeps a tombstone ref (see CollectTombstones).
// A concurrent reconciliation of the same entity therefore makes one of them start over
// from fresh reads, and the one whose primary read is newer always commits last.
//
// Errors: errs.ErrInvalidInput (bad keys or a PartitionKey inside an index's key space, nothing
// sent; or a stored value, or a partition key, that an index cannot hold: the other
// indexes are still reconciled), errs.ErrTransient (also when concurrent reconciliations
// kept winning until the retry policy gave up), *repo.Error.
func (x *Inter[T]) Reconcile(ctx context.Context, pk, rk string) (err error) {
	ctx, end := x.reconcileSpan(ctx)
	defer func() { end(err) }()
	if err := x.checkRef(pk, rk); err != nil {
		return err
	}
	return x.reconcile(ctx, pk, rk)
}
