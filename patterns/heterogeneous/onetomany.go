package heterogeneous

import (
	"context"
	"errors"
	"fmt"

	"github.com/tablepatterns/tablepatterns/internal/errs"
	"github.com/tablepatterns/tablepatterns/repo"
	"github.com/tablepatterns/tablepatterns/repo/filter"
	"github.com/tablepatterns/tablepatterns/retry"
)

// This file is the guide's one-to-many relationship in one partition as code: a child and
// its parent's count written together in one entity group transaction, conditional on
// what was read, read again and retried when another writer won the race (Add, Delete);
// both read back with one query (Load); the count repaired from the children (Recount).
// Every entity is written with its type (write.go) and read into its type (table.go).

// Add inserts child and increments its parent's count in one entity group transaction:
// read the parent, add one, write both, conditional on the parent's ETag. When another
// writer changed the parent in between (the transaction fails with 412 and nothing is
// written), it reads the parent again and retries with the jittered backoff. On success
// child's ETag field holds its new ETag.
//
// When repo cannot prove the outcome of the transaction (errs.ErrOutcomeUnknown: a lost
// response, then a retry that met a conflict), Add reads the parent again: still at the
// version it read, nothing landed and Add starts over; otherwise Add returns the error
// wrapping errs.ErrOutcomeUnknown (never errs.ErrAlreadyExists), whether the child is
// there or not: another writer may have removed this call's child since, and inserting it
// again would undo that Delete. Turn on repo.Options.TrackWrites to have repo tell
// exactly.
//
// Errors: errs.ErrNotFound (no parent in the child's partition), errs.ErrAlreadyExists
// (the child exists; nothing written), errs.ErrOutcomeUnknown (see above),
// *TypeMismatchError (the parent's keys hold another type), errs.ErrInvalidInput (nothing
// sent), errs.ErrTransient (also when concurrent writers kept winning until the retry
// policy gave up), *errs.ServiceError.
func (r *OneToMany[P, C, N]) Add(ctx context.Context, child *C) error {
	_, c, err := entityOf(r.t, child)
	if err != nil {
		return err
	}
	pk, rk := c.Keys(child)
	prk, err := r.parentKey(pk)
	if err != nil {
		return err
	}
	if rk == prk {
		return errs.Invalid("RowKey", "the child %q has the parent's key", rk)
	}
	return retry.Optimistic(ctx, r.t.conflict, r.op("add child", pk, rk), func(ctx context.Context, _ int) error {
		p, err := Get[P](ctx, r.t, pk, prk)
		if err != nil {
			return r.noParent(err, pk, prk)
		}
		*r.count(&p)++
		return r.submit(ctx, InsertAction(r.t, child), UpdateAction(r.t, &p, nil))
	})
}

// Delete deletes the child (pk, rk) and decrements its parent's count in one entity group
// transaction, conditional on the ETags of both as read just before; it starts over when
// either changed in between. With opts.ETag set the delete is also conditional on the
// child's ETag: errs.ErrPreconditionFailed once the child changed since it was read. When repo cannot prove the outcome of the transaction
// (errs.ErrOutcomeUnknown), Delete reads the child and the parent again: either still at
// the version it read, nothing landed and Delete starts over; otherwise it returns the
// error wrapping errs.ErrOutcomeUnknown, whether the child is there or not: a child found
// may have been added again by another writer since, and deleting it would undo that Add.
//
// Errors: errs.ErrNotFound (no such child, or no parent), errs.ErrPreconditionFailed
// (opts.ETag given and the child changed), errs.ErrOutcomeUnknown (see
// above), *TypeMismatchError (the entity is not a C), errs.ErrInvalidInput (nothing sent),
// errs.ErrTransient, *errs.ServiceError.
func (r *OneToMany[P, C, N]) Delete(ctx context.Context, pk, rk string, opts *repo.DeleteOptions) error {
	prk, err := r.parentKey(pk)
	if err != nil {
		return err
	}
	if rk == prk {
		return errs.Invalid("RowKey", "%q is the parent's key, not a child's", rk)
	}
	cc, err := registered[C](r.t)
	if err != nil {
		return err
	}
	return retry.Optimistic(ctx, r.t.conflict, r.op("remove child", pk, rk), func(ctx context.Context, _ int) error {
		child, err := Get[C](ctx, r.t, pk, rk) // makes sure it is a child, and gives its ETag
		if err != nil {
			return err
		}
		if opts != nil && opts.ETag != "" && opts.ETag != cc.ETag(&child) {
			return errs.Precondition("remove child", r.t.Name(), pk, rk, "the child changed since it was read (opts.ETag)")
		}
		p, err := Get[P](ctx, r.t, pk, prk)
		if err != nil {
			return r.noParent(err, pk, prk)
		}
		*r.count(&p)--
		return r.submit(ctx, r.t.DeleteAction(pk, rk, &repo.DeleteOptions{ETag: cc.ETag(&child)}), UpdateAction(r.t, &p, nil))
	})
}

// submit runs a child action and the parent's update as one entity group transaction,
// and turns a lost race into a retry: the parent (or the child being removed) changed
// since it was read, or the parent was deleted and maybe recreated. A transaction whose
// outcome repo could not prove is decided in outcome.go. A child's delete goes apart only
// on a store that cannot delete its key in a transaction (see the package documentation).
func (r *OneToMany[P, C, N]) submit(ctx context.Context, child, parent Action) error {
	err := r.t.submit(ctx, repo.SubmitOrSplit, []Action{child, parent})
	if err, decided := r.decideUnknown(ctx, err, child, parent); decided {
		return err
	}
	var ae *repo.ActionError
	if errors.As(err, &ae) {
		switch {
		case errors.Is(err, repo.ErrPreconditionFailed):
			return retry.Again(err) // the parent (or the child being removed) changed
		case ae.Index == 1 && errors.Is(err, repo.ErrNotFound):
			return retry.Again(err) // the parent was deleted and maybe recreated: read again
		}
	}
	return err
}

// Load reads the parent of partition pk and its children with one query of the partition,
// each entity decoded into its own type (entities of other types are ignored).
//
// Errors: errs.ErrNotFound (no parent in the partition), errs.ErrInvalidInput (nothing sent),
// and those of Table.Query.
func (r *OneToMany[P, C, N]) Load(ctx context.Context, pk string) (*P, []*C, error) {
	prk, err := r.parentKey(pk)
	if err != nil {
		return nil, nil, err
	}
	pc, err := registered[P](r.t)
	if err != nil {
		return nil, nil, err
	}
	var parent *P
	var children []*C
	for v, err := range r.t.Query(ctx, repo.Query{Filter: filter.PartitionKey(pk)}) {
		if err != nil {
			return nil, nil, err
		}
		switch v := v.(type) {
		case *P:
			if _, rk := pc.Keys(v); rk == prk {
				parent = v
			}
		case *C:
			children = append(children, v)
		}
	}
	if parent == nil {
		return nil, nil, &errs.ServiceError{Op: "load", Resource: r.t.name, PartitionKey: pk, RowKey: prk, Kind: repo.ErrNotFound,
			Err: fmt.Errorf("partition %q has no parent", pk)}
	}
	return parent, children, nil
}

// Recount sets the parent's count to the number of children actually stored, for
// partitions written around this type (imports, other programs). It counts with one
// query of the children's keys, then updates the parent conditional on the ETag read
// before counting: a child added or removed meanwhile changes the parent, and the count
// starts over. It returns the count.
//
// Errors: errs.ErrNotFound (no parent), errs.ErrInvalidInput (nothing sent),
// errs.ErrTransient, *errs.ServiceError.
func (r *OneToMany[P, C, N]) Recount(ctx context.Context, pk string) (N, error) {
	prk, err := r.parentKey(pk)
	if err != nil {
		return 0, err
	}
	var n N
	err = retry.Optimistic(ctx, r.t.conflict, r.op("recount", pk, prk), func(ctx context.Context, _ int) error {
		p, err := Get[P](ctx, r.t, pk, prk)
		if err != nil {
			return r.noParent(err, pk, prk)
		}
		n = 0
		for _, err := range QueryOf[C](ctx, r.t, repo.Query{Filter: filter.PartitionKey(pk), Select: []string{"RowKey"}}) {
			if err != nil {
				return err
			}
			n++
		}
		if *r.count(&p) == n {
			return nil
		}
		*r.count(&p) = n
		err = Update(ctx, r.t, &p, nil)
		if errors.Is(err, repo.ErrPreconditionFailed) || errors.Is(err, repo.ErrOutcomeUnknown) {
			// Changed meanwhile, or an update that may have landed: count again (the
			// count is derived from the children, so counting again is always right).
			return retry.Again(err)
		}
		return err
	})
	return n, err
}
