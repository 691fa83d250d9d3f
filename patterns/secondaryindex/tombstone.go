package secondaryindex

import (
	"context"
	"errors"
	"time"

	"github.com/tablepatterns/tablepatterns/repo"
	"github.com/tablepatterns/tablepatterns/repo/filter"
	"github.com/tablepatterns/tablepatterns/retry"
)

// defaultTombstoneAge is InterOptions.TombstoneAge's default.
const defaultTombstoneAge = time.Hour

// boundByTombstoneAge bounds one reconciliation attempt to half of TombstoneAge, so that
// no attempt that read a tombstone as absent (or the state before it existed) can still
// commit when CollectTombstones removes it.
func (x *Inter[T]) boundByTombstoneAge(ctx context.Context) (context.Context, context.CancelFunc) {
	if age := x.opts.TombstoneAge; age > 0 {
		return context.WithTimeout(ctx, age/2)
	}
	return ctx, func() {}
}

// CollectTombstones removes, from every index partition of the primary partition pk, the
// tombstones older than InterOptions.TombstoneAge: the refs of entities that have no copy
// in that index (deleted, or without a value), which reconciliations keep instead of
// deleting so that a slow reconciliation cannot commit a copy of a deleted entity (its
// conditional write meets the tombstone and it starts over). Each is deleted conditional
// on the ETag read, so a tombstone reconciled meanwhile stays. Run it now and then (a
// daily job per partition is plenty); it returns how many it removed.
//
// Cost: 1 range query per index (the partition's refs, 1 per 1,000) and 1 delete per
// tombstone removed.
//
// Errors: errs.ErrInvalidInput (a bad key; nothing sent), errs.ErrTransient, *repo.Error.
func (x *Inter[T]) CollectTombstones(ctx context.Context, pk string) (int, error) {
	if err := x.checkRef(pk, ""); err != nil {
		return 0, err
	}
	if x.opts.TombstoneAge < 0 {
		return 0, nil
	}
	cutoff := x.seams.now().Add(-x.opts.TombstoneAge)
	removed := 0
	var bad error
	for _, ix := range x.idx {
		part, err := ix.partition(pk)
		if err != nil {
			bad = errors.Join(bad, err) // this index holds nothing for pk
			continue
		}
		refs, err := ix.refs.Collect(ctx, repo.Query{Filter: filter.RowKeyRange(part, refPrefix, lowestCopy)})
		if err != nil {
			return removed, err
		}
		for _, ref := range refs {
			if ref.Key != "" || !ref.Timestamp.Before(cutoff) {
				continue
			}
			err := ix.refs.Delete(ctx, part, ref.RowKey, &repo.DeleteOptions{ETag: ref.ETag})
			switch {
			case err == nil:
				removed++
			case errors.Is(err, repo.ErrPreconditionFailed), errors.Is(err, repo.ErrNotFound), errors.Is(err, repo.ErrOutcomeUnknown):
				// Reconciled or collected meanwhile (or maybe by this call): leave it.
			default:
				return removed, err
			}
		}
	}
	return removed, bad
}

// overGoneTombstone reports whether a reconciliation that read ref and found the primary
// present (found) replaces a tombstone of a gone primary (no Key, SourceETag ""). Such a
// ref records the one state that can come back: "gone" has no version. A reconciliation
// of a later delete of the re-inserted entity reads that same tombstone, finds it up to
// date and writes nothing, so the ref's ETag no longer serializes it with this one, whose
// transaction, conditional on the tombstone, would still commit a copy of the deleted
// entity (TestInterSlowReconcileOfAReinsertedEntityDeletedAgainLeavesNoCopy).
func overGoneTombstone(refs []*refRow, found bool) bool {
	if !found {
		return false
	}
	for _, r := range refs {
		if r != nil && r.Key == "" && r.SourceETag == "" {
			return true
		}
	}
	return false
}

// stillPresent reads the primary (pk, rk) again after a reconciliation over a gone
// tombstone committed its copies for version etag: gone or changed since, the attempt
// starts over (retry.Again), and the fresh reads see the ref it wrote. A delete reconciled
// as "up to date" before that commit read the tombstone before it, and so happened before
// this read: this read sees it.
func (x *Inter[T]) stillPresent(ctx context.Context, pk, rk, etag string) error {
	now, err := x.primary.Get(ctx, pk, rk)
	switch {
	case errors.Is(err, repo.ErrNotFound):
		return retry.Again(errors.New("secondaryindex: the entity was deleted while its copies were written over its tombstone"))
	case err != nil:
		return err
	case x.c.ETag(&now) != etag:
		return retry.Again(errors.New("secondaryindex: the entity changed while its copies were written over its tombstone"))
	}
	return nil
}
