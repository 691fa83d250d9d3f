package secondaryindex

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/internal/errs"
	"github.com/tablepatterns/tablepatterns/patterns/consistency"
	"github.com/tablepatterns/tablepatterns/repo"
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
// is already gone is skipped; one that names another entity as its owner (a unique value
// taken over by hand) is left to it.
//
// Cost: one point query per secondary index in which e has a value; the transaction
// grows by one delete per copy found. The actions are built on this Intra's table: build
// it on the Archiver's clients.
//
// Errors: errs.ErrInvalidInput (see above; nothing sent), errs.ErrTransient, *repo.Error.
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
		return consistency.Removal{}, errs.Invalid("entity", "%s/%s is a copy of index %q, not an entity: archive the entity by its primary copy (%s_...)", e.PartitionKey, e.RowKey, ix.Name, x.all[0].Name)
	}
	var v T
	body, err := codec.EncodeEntity(e)
	if err == nil {
		err = x.c.DecodeContext(ctx, body, &v)
	}
	if err != nil {
		return consistency.Removal{}, errs.Invalid("entity", "%s/%s does not read as the indexed type: %v", e.PartitionKey, e.RowKey, err)
	}
	x.c.SetKeys(&v, e.PartitionKey, e.RowKey)
	pk, ks, err := x.keysOf(&v)
	if err != nil {
		return consistency.Removal{}, fmt.Errorf("secondaryindex: the stored entity %s/%s has a value that no copy key can hold: %w", e.PartitionKey, e.RowKey, err)
	}
	if pk != e.PartitionKey || ks[0] != e.RowKey {
		return consistency.Removal{}, errs.Invalid("entity", "%s/%s holds the primary value of %s/%s: its copies cannot be told from that entity's", e.PartitionKey, e.RowKey, pk, ks[0])
	}
	owner := x.all[0].valueOf(&v)
	var r consistency.Removal
	for i := 1; i < len(x.all); i++ {
		if ks[i] == "" {
			continue
		}
		cp, err := x.dyn.Get(ctx, pk, ks[i])
		if errors.Is(err, repo.ErrNotFound) {
			continue // already gone: nothing to remove
		}
		if err != nil {
			return consistency.Removal{}, err
		}
		if o := x.ownerOf(&cp); o != "" && o != owner {
			continue // another entity's copy (see ownerOf): not this move's to delete
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
