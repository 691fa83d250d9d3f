package secondaryindex

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/internal/errs"
	"github.com/tablepatterns/tablepatterns/patterns/consistency"
	"github.com/tablepatterns/tablepatterns/patterns/internal/maintain"
	"github.com/tablepatterns/tablepatterns/repo"
	"github.com/tablepatterns/tablepatterns/retry"
)

// Removal tells an archive move (package consistency, where Intra is a Companion of its
// table) what removing the entity e from the table means to the indexes: the deletes of
// e's copies, in e's partition, each conditional on the ETag read here, to commit in one
// entity group transaction with the delete of e. The copies are removed, not moved: the
// archive holds the entity once, and no lookup through this Intra finds it any more.
//
// e is stored data and checked as such. A row outside every index's key space is not
// this Intra's and has no copies (an empty Removal). A copy of a secondary index, a
// primary copy that does not decode as T, whose primary value does not give its own
// RowKey (forged), or whose values no copy key can hold is refused with
// errs.ErrInvalidInput: archiving it would leave copies that lookups find. A copy that
// is already gone is skipped. Whose a unique copy is, copyOwner decides (the rule
// Verify, BackfillPartition and Repair follow too; see the package documentation): a
// copy that names another entity which is live and holds the value (a value two
// entities share, taken over by hand or by Backfill) is left to it, and so is a copy
// whose owner cannot be told (it does not decode, or is a partial copy that differs from
// e's): an unknown owner is never taken for e, and such a copy, if it is in fact e's,
// stays findable until Repair removes it as an orphan. A copy that names an entity which
// is gone or holds another value names nobody: it is deleted, as is a partial copy equal
// to e's projection (also when another live entity, in a Conflict with e, has the same
// projection: Repair writes that entity's copy again after the move).
//
// Cost: one point query per secondary index in which e has a value, and one of the
// primary copy of the entity a copy names when it names another; the transaction grows
// by one delete per copy removed. The actions are built on this Intra's table: build it
// on the Archiver's clients.
//
// Errors: errs.ErrInvalidInput (see above; nothing sent), errs.ErrTransient, *repo.Error,
// and for a type with encrypted fields the key holder's own failure (e or a copy that
// could not be decrypted for want of it decides nothing: the move fails and reruns). An
// error Removal returns about a copy names the index and e's keys, never the copy's key
// (it holds the indexed value), and prints only its cause's class; errors.Is and
// errors.As reach the cause. The move's own transaction, which carries the copies'
// deletes, is the caller's: its *repo.ActionError names the failing action by index (its
// keys are in its fields, not its text).
func (x *Intra[T]) Removal(ctx context.Context, e *codec.Entity) (consistency.Removal, error) {
	if e == nil {
		return consistency.Removal{}, errs.Invalid("entity", "is nil")
	}
	name, _, ok := strings.Cut(e.RowKey, sep)
	ix := x.named[name]
	switch {
	case !ok || ix == nil:
		return consistency.Removal{}, nil // not a row of these indexes
	case ix != x.all[0]:
		// Not the RowKey: a copy's holds the indexed value.
		return consistency.Removal{}, errs.Invalid("entity", "a row of partition %s is a copy of index %q, not an entity: archive the entity by its primary copy (%s_...)", e.PartitionKey, ix.Name, x.all[0].Name)
	}
	v, err := maintain.Decode(ctx, x.c, e)
	if err != nil {
		return consistency.Removal{}, err
	}
	x.c.SetKeys(&v, e.PartitionKey, e.RowKey)
	pk, ks, err := x.keysOf(&v)
	if err != nil {
		return consistency.Removal{}, fmt.Errorf("secondaryindex: the stored entity %s/%s has a value that no copy key can hold: %w", e.PartitionKey, e.RowKey, err)
	}
	if pk != e.PartitionKey || ks[0] != e.RowKey {
		return consistency.Removal{}, errs.Invalid("entity", "%s/%s holds the primary value of %s/%s: its copies cannot be told from that entity's", e.PartitionKey, e.RowKey, pk, ks[0])
	}
	var r consistency.Removal
	for i := 1; i < len(x.all); i++ {
		if ks[i] == "" {
			continue
		}
		cp, err := x.dyn.Get(retry.WithSensitiveKeys(ctx), pk, ks[i])
		if errors.Is(err, repo.ErrNotFound) {
			continue // already gone: nothing to remove
		}
		if err != nil {
			return consistency.Removal{}, x.aboutCopy(err, "removal", i, pk, ks[0])
		}
		own, err := x.copyOwner(ctx, &cp, &v, pk, i, x.pointHolder(pk, i, ks[i]))
		if err != nil {
			return consistency.Removal{}, x.aboutCopy(err, "removal", i, pk, ks[0])
		}
		if own != ownedByEntity && own != ownerVanished {
			// Another live entity's copy, or one whose owner cannot be told: not this
			// move's to delete. A copy naming an entity that does not hold the value
			// (ownerVanished) is removed: no live entity can claim it by name, and
			// keeping it would leave e findable by its value after the move.
			continue
		}
		r.Actions = append(r.Actions, x.dyn.DeleteAction(pk, ks[i], &repo.DeleteOptions{ETag: cp.ETag}))
	}
	return r, nil
}

// Removal tells an archive move (package consistency, where Inter is a Companion of its
// primary table) what removing the primary entity e means to the indexes. The copies live
// in other partitions, where no transaction with e's delete reaches, so they are removed
// through the worker, by the write protocol of every Inter write (see the package
// documentation): Before enqueues the reconciliation of e invisible for SafetyDelay,
// Within bounds it and the delete to SafetyDelay/2 (so that it cannot run before the
// delete lands), and After enqueues it visible at once. The reconciliation finds e gone
// and removes its copies, leaving tombstone refs; a move that restarts or never deletes
// leaves a message that finds nothing to change. With SafetyDelay off there is no Before:
// a stop between the delete and After leaves the copies until Notify or Repair.
//
// Only e's keys are used: the reconciliation finds the copies through its ref rows, not
// through e's values, so an entity whose values do not decode is archived and its copies
// removed all the same. Keys inside an index partition of the primary's table (a copy or
// a ref) are refused with errs.ErrInvalidInput.
//
// Cost: two enqueues (one with SafetyDelay off); the worker's reconciliation of e.
//
// Errors: errs.ErrInvalidInput (nothing sent). Removal itself sends nothing.
func (x *Inter[T]) Removal(ctx context.Context, e *codec.Entity) (consistency.Removal, error) {
	if e == nil {
		return consistency.Removal{}, errs.Invalid("entity", "is nil")
	}
	pk, rk := e.PartitionKey, e.RowKey
	if err := x.checkRef(pk, rk); err != nil {
		return consistency.Removal{}, err
	}
	r := consistency.Removal{After: func(ctx context.Context) error { return x.Notify(ctx, pk, rk) }}
	if x.safetyOn {
		r.Within = x.safety.Settle() / 2
		r.Before = func(ctx context.Context) error { return x.enqueue(ctx, pk, rk, x.safety.Settle()) }
	}
	return r, nil
}

// Gone makes Inter a consistency.Sweeper: a move that finds the primary entity (pk, rk)
// already gone and archived (a rerun after a stop, or after a lost response, between the
// delete and After) enqueues its reconciliation visible at once, as Notify does. With
// SafetyDelay off that is the only message that removes the copies; with it on, one more
// message that finds nothing to change once the safety message ran.
//
// Cost: one enqueue.
//
// Errors: errs.ErrInvalidInput (keys inside an index partition; nothing sent), and
// Notify's.
func (x *Inter[T]) Gone(ctx context.Context, pk, rk string) error {
	if err := x.checkRef(pk, rk); err != nil {
		return err
	}
	return x.Notify(ctx, pk, rk)
}
