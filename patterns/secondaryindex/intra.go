package secondaryindex

import (
	"context"
	"errors"
	"fmt"

	"github.com/tablepatterns/tablepatterns/repo"
	"github.com/tablepatterns/tablepatterns/retry"
)

// The intra-partition secondary index, as the guide writes it: every copy of an entity
// lives in its partition, so every write is one entity group transaction. Reads are in
// intra_read.go; a refused or unproven transaction is decided in intra_outcome.go.

// stepKind says what an action of a write does to one copy.
type stepKind int

const (
	stepPrimary stepKind = iota // the primary copy
	stepPut                     // insert a copy under a new key
	stepKeep                    // rewrite a copy whose key did not change
	stepDrop                    // delete a copy whose key changed or whose entity goes
)

// step is what one action of a plan does.
type step struct {
	ix    int
	kind  stepKind
	rk    string
	guard bool // conditional on the caller's ETag
}

// plan is one transaction of a write and what each of its actions is.
type plan struct {
	acts  []repo.Action
	steps []step
	del   bool // the plan deletes the entity
}

func (p *plan) add(a repo.Action, s step) {
	p.acts = append(p.acts, a)
	p.steps = append(p.steps, s)
}

// Insert stores v: its primary copy and one copy per secondary index where v has a
// value, all in one entity group transaction, so that either every copy is written or
// none. On success v's ETag field holds the primary copy's ETag.
//
// Errors: errs.ErrAlreadyExists (an entity with v's primary value exists),
// *UniqueViolationError (a unique index already holds one of v's values; nothing written),
// errs.ErrInvalidInput (a value that cannot be part of a key, a key or entity over a limit;
// nothing sent), errs.ErrTransient, *repo.Error.
func (x *Intra[T]) Insert(ctx context.Context, v *T) error {
	pk, ks, err := x.keysOf(v)
	if err != nil {
		return err
	}
	p, err := x.insertPlan(v, pk, ks)
	if err != nil {
		return err
	}
	etags, err := repo.SubmitOrSplit(ctx, p.acts...)
	if err := x.insertOutcome(err, p, v, pk); err != nil {
		return err
	}
	x.c.SetETag(v, etags[0])
	return nil
}

func (x *Intra[T]) insertPlan(v *T, pk string, ks []string) (*plan, error) {
	p := &plan{}
	for i, rk := range ks {
		if rk == "" {
			continue
		}
		e, err := x.copyOf(v, pk, i, rk)
		if err != nil {
			return nil, err
		}
		switch {
		case i == 0:
			p.add(x.dyn.InsertAction(e), step{kind: stepPrimary, rk: rk})
		case x.all[i].AllowDuplicates:
			// The key holds the primary value: no other entity can own it.
			p.add(x.dyn.UpsertAction(e, nil), step{ix: i, kind: stepKeep, rk: rk})
		default:
			p.add(x.dyn.InsertAction(e), step{ix: i, kind: stepPut, rk: rk})
		}
	}
	return p, nil
}

// Update replaces the entity with v's primary value by v, in one entity group transaction
// that rewrites every copy: a copy whose value changed (a new email) is deleted and the
// new one inserted, so no reader ever sees the old and the new value at once, or neither.
// Copies whose value is unchanged are replaced in place.
//
// The update is a read (the stored primary copy, for the old values) and a transaction
// conditional on what was read. When v carries an ETag (it was read by Get, Lookup, Find,
// Range or Prefix, or written by this Intra), the update is optimistic: it fails with
// errs.ErrPreconditionFailed if the entity changed since, whichever copy v was read from.
// Without an ETag it is last-writer-wins: a concurrent change makes it read again and
// retry with the jittered backoff. A value read from an index whose copies carry only some
// properties is refused (it would erase the others). On success v's ETag field holds the
// primary copy's new ETag.
//
// Errors: errs.ErrNotFound, errs.ErrPreconditionFailed, *UniqueViolationError (nothing
// written), errs.ErrInvalidInput (nothing sent), errs.ErrOutcomeUnknown (a transaction that
// may have landed: see the package documentation), errs.ErrTransient (also when concurrent
// writers kept winning until the retry policy gave up), *repo.Error.
func (x *Intra[T]) Update(ctx context.Context, v *T) error {
	return x.change(ctx, v, opUpdate, nil)
}

// Upsert inserts v, or replaces the stored entity with its primary value
// unconditionally (last writer wins), writing every copy in one transaction as Insert and
// Update do. On success v's ETag field holds the primary copy's new ETag.
//
// Errors: *UniqueViolationError (nothing written), errs.ErrInvalidInput (nothing sent),
// errs.ErrOutcomeUnknown (a transaction that may have landed: see the package
// documentation), errs.ErrTransient, *repo.Error.
func (x *Intra[T]) Upsert(ctx context.Context, v *T) error {
	return x.change(ctx, v, opUpsert, nil)
}

// Delete removes the entity with keys pk and rk, and every copy of it, in one
// transaction. rk is the RowKey of the primary copy ("empid_000223"), or of any copy of
// the entity (the RowKey of a value read through Lookup or Find), which is read first to
// find the entity it belongs to. With opts.ETag (the ETag that the value read carries),
// the delete is conditional: errs.ErrPreconditionFailed if any copy changed since (also
// when the copy it names is gone). A row under a copy's key that is not a copy of the
// entity whose primary value it carries (stored data: forged, or moved since) deletes
// nothing: errs.ErrNotFound, or errs.ErrPreconditionFailed with opts.ETag.
//
// Errors: errs.ErrNotFound, errs.ErrPreconditionFailed, errs.ErrInvalidInput (nothing sent),
// errs.ErrOutcomeUnknown (a transaction that may have landed: see the package
// documentation), errs.ErrTransient, *repo.Error.
func (x *Intra[T]) Delete(ctx context.Context, pk, rk string, opts *repo.DeleteOptions) error {
	t, err := x.deleteTarget(ctx, pk, rk, opts)
	if err != nil {
		return err
	}
	var v T
	return x.change(ctx, &v, opDelete, t)
}

// change runs Update, Upsert and Delete: read the primary copy, plan the transaction from
// the stored and the new keys, submit it, and start over when a concurrent writer won a
// race this call did not promise to detect. t names the entity and the caller's ETag;
// nil takes them from v.
func (x *Intra[T]) change(ctx context.Context, v *T, o changeOp, t *target) error {
	if t == nil {
		var err error
		if t, err = x.writeTarget(v, o); err != nil {
			return err
		}
	}
	pk, ks, guardRK, guardETag := t.pk, t.ks, t.guardRK, t.guardETag
	missing := map[string]bool{}                                                                               // copies found already gone: not deleted again
	op := retry.Op{Name: o.String(), Resource: x.Name(), PartitionKey: pk, RowKey: ks[0], SensitiveKeys: true} // a round's error may name a copy
	return retry.Optimistic(ctx, x.retry, op, func(ctx context.Context, _ int) error {
		cur, err := x.rows.Get(ctx, pk, ks[0])
		if errors.Is(err, repo.ErrNotFound) && o == opUpsert {
			p, err := x.insertPlan(v, pk, ks)
			if err != nil {
				return err
			}
			return x.submit(ctx, p, o, v, pk, missing)
		}
		if err != nil {
			return err
		}
		_, old, err := x.keysOf(&cur)
		if err != nil {
			return fmt.Errorf("secondaryindex: the stored entity %s/%s has a value that cannot be indexed: %w", pk, ks[0], err)
		}
		if err := x.copyOfEntity(o, pk, ks[0], old, guardRK, guardETag); err != nil {
			return err
		}
		gi, err := x.guard(&cur, o, pk, old, guardRK, guardETag)
		if err != nil {
			return err
		}
		p, err := x.changePlan(v, pk, ks, old, x.c.ETag(&cur), gi, guardETag, o, missing)
		if err != nil {
			return err
		}
		return x.submit(ctx, p, o, v, pk, missing)
	})
}

// guard finds which stored copy the caller's ETag belongs to: -1 when there is no ETag,
// 0 when it is the primary's, i for the copy of index i the caller read. An ETag that
// matches none of the current copies means the entity changed since it was read.
func (x *Intra[T]) guard(cur *T, o changeOp, pk string, old []string, guardRK, guardETag string) (int, error) {
	if guardETag == "" {
		return -1, nil
	}
	if guardETag == x.c.ETag(cur) {
		return 0, nil
	}
	for i := 1; i < len(old); i++ {
		if old[i] != "" && old[i] == guardRK {
			return i, nil
		}
	}
	return 0, x.stale(o, pk, old[0])
}

func (x *Intra[T]) changePlan(v *T, pk string, ks, old []string, curETag string, gi int, guardETag string, o changeOp, missing map[string]bool) (*plan, error) {
	p := &plan{del: o == opDelete}
	// The primary copy goes first: its ETag is the one v gets.
	if o == opDelete {
		p.add(x.dyn.DeleteAction(pk, ks[0], &repo.DeleteOptions{ETag: curETag}), step{kind: stepPrimary, rk: ks[0], guard: gi == 0})
	} else {
		e, err := x.copyOf(v, pk, 0, ks[0])
		if err != nil {
			return nil, err
		}
		e.ETag = curETag
		p.add(x.dyn.UpdateAction(e, nil), step{kind: stepPrimary, rk: ks[0], guard: gi == 0})
	}
	for i := 1; i < len(x.all); i++ {
		o2, n := old[i], ""
		if o != opDelete {
			n = ks[i]
		}
		g := i == gi
		if n != "" && n == o2 {
			e, err := x.copyOf(v, pk, i, n)
			if err != nil {
				return nil, err
			}
			if g {
				e.ETag = guardETag
				p.add(x.dyn.UpdateAction(e, nil), step{ix: i, kind: stepKeep, rk: n, guard: true})
			} else {
				p.add(x.dyn.UpsertAction(e, nil), step{ix: i, kind: stepKeep, rk: n})
			}
			continue
		}
		if o2 != "" && !missing[o2] {
			var d repo.DeleteOptions
			if g {
				d.ETag = guardETag
			}
			p.add(x.dyn.DeleteAction(pk, o2, &d), step{ix: i, kind: stepDrop, rk: o2, guard: g})
		}
		if n != "" {
			e, err := x.copyOf(v, pk, i, n)
			if err != nil {
				return nil, err
			}
			if x.all[i].AllowDuplicates {
				// The key holds the primary value: no other entity can own it.
				p.add(x.dyn.UpsertAction(e, nil), step{ix: i, kind: stepKeep, rk: n})
			} else {
				p.add(x.dyn.InsertAction(e), step{ix: i, kind: stepPut, rk: n})
			}
		}
	}
	return p, nil
}

// submit sends a plan as one entity group transaction and sets v's ETag. A refused
// transaction becomes the error the caller should see, or a retry when this call's own
// read was overtaken (failed); one whose outcome repo could not prove is decided from a
// fresh read (decideUnknown). A copy's delete goes apart only on a store that cannot
// delete its key in a transaction (see the package documentation, "Consistency").
func (x *Intra[T]) submit(ctx context.Context, p *plan, o changeOp, v *T, pk string, missing map[string]bool) error {
	etags, err := repo.SubmitOrSplit(ctx, p.acts...)
	err, decided := x.decideUnknown(ctx, err, p)
	if decided {
		return err
	}
	if err != nil {
		return x.failed(err, p, o, v, pk, missing)
	}
	if p.del {
		x.c.SetETag(v, "")
	} else {
		x.c.SetETag(v, etags[0])
	}
	return nil
}
