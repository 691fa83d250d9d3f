package heterogeneous

import (
	"context"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/internal/errs"
	"github.com/tablepatterns/tablepatterns/repo"
)

// entityOf encodes v through the registry (so that the discriminator is written) as a
// dynamic entity carrying v's ETag.
func entityOf[T any](t *Table, v *T) (*codec.Entity, *codec.Codec[T], error) {
	c, err := registered[T](t)
	if err != nil {
		return nil, nil, err
	}
	if v == nil {
		return nil, nil, errs.Invalid("entity", "is nil")
	}
	body, err := t.reg.Encode(v)
	if err != nil {
		return nil, nil, err
	}
	e, err := codec.DecodeEntity(body)
	if err != nil {
		return nil, nil, err
	}
	e.ETag = c.ETag(v)
	return e, c, nil
}

// Insert inserts v, of a registered type T, with its discriminator. On success v's ETag
// field holds the new ETag.
//
// Errors: errs.ErrInvalidInput (T not registered, a key without the type prefix, a broken
// limit; nothing sent), and those of repo.Table.Insert.
func Insert[T any](ctx context.Context, t *Table, v *T) error {
	e, c, err := entityOf(t, v)
	if err != nil {
		return err
	}
	if err := t.dyn.Insert(ctx, e); err != nil {
		return err
	}
	c.SetETag(v, e.ETag)
	return nil
}

// Upsert inserts or replaces (or merges) v with its discriminator.
//
// Errors: errs.ErrInvalidInput (nothing sent), and those of repo.Table.Upsert.
func Upsert[T any](ctx context.Context, t *Table, v *T, opts *repo.UpsertOptions) error {
	e, c, err := entityOf(t, v)
	if err != nil {
		return err
	}
	if err := t.dyn.Upsert(ctx, e, opts); err != nil {
		return err
	}
	c.SetETag(v, e.ETag)
	return nil
}

// Update replaces (or merges) the stored entity with v, conditional on v's ETag when it
// is set (see repo.Table.Update). A Replace rewrites the discriminator with the rest.
//
// Errors: errs.ErrInvalidInput (nothing sent), and those of repo.Table.Update
// (errs.ErrPreconditionFailed, errs.ErrNotFound, ...).
func Update[T any](ctx context.Context, t *Table, v *T, opts *repo.UpdateOptions) error {
	e, c, err := entityOf(t, v)
	if err != nil {
		return err
	}
	if err := t.dyn.Update(ctx, e, opts); err != nil {
		return err
	}
	c.SetETag(v, e.ETag)
	return nil
}

// Delete deletes the entity (pk, rk), whatever its type; conditional if opts.ETag is set.
//
// Errors: as repo.Table.Delete.
func (t *Table) Delete(ctx context.Context, pk, rk string, opts *repo.DeleteOptions) error {
	return t.dyn.Delete(ctx, pk, rk, opts)
}

// Action is one write of an entity group transaction of a Table (see Submit), built by
// InsertAction, UpsertAction, UpdateAction or Table.DeleteAction. Entities of different
// types of one partition can be mixed: a new employee and its department's count.
type Action struct {
	t    *Table
	a    repo.Action
	err  error
	done func() // copies the new ETag back into the caller's value
}

func action[T any](t *Table, v *T, build func(e *codec.Entity) repo.Action) Action {
	e, c, err := entityOf(t, v)
	if err != nil {
		return Action{t: t, err: err}
	}
	return Action{t: t, a: build(e), done: func() { c.SetETag(v, e.ETag) }}
}

// InsertAction returns an insert of v for Submit.
func InsertAction[T any](t *Table, v *T) Action {
	return action(t, v, func(e *codec.Entity) repo.Action { return t.dyn.InsertAction(e) })
}

// UpsertAction returns an upsert of v for Submit.
func UpsertAction[T any](t *Table, v *T, opts *repo.UpsertOptions) Action {
	return action(t, v, func(e *codec.Entity) repo.Action { return t.dyn.UpsertAction(e, opts) })
}

// UpdateAction returns an update of v for Submit, conditional on v's ETag when it is set.
func UpdateAction[T any](t *Table, v *T, opts *repo.UpdateOptions) Action {
	return action(t, v, func(e *codec.Entity) repo.Action { return t.dyn.UpdateAction(e, opts) })
}

// DeleteAction returns a delete of the entity (pk, rk) for Submit.
func (t *Table) DeleteAction(pk, rk string, opts *repo.DeleteOptions) Action {
	return Action{t: t, a: t.dyn.DeleteAction(pk, rk, opts)}
}

// Submit runs actions as one entity group transaction (see repo.Submit): all are applied
// or none. On success the ETag field of every written value holds its new ETag.
//
// Errors: errs.ErrInvalidInput (an action that could not be built, actions of another Table,
// or a transaction repo.Submit refuses; nothing sent), *repo.ActionError (with the index
// of the failed action), *repo.MisaddressedDeleteError (a store that cannot delete a key
// holding U+2028 or U+2029 in a transaction: Azurite), errs.ErrTransient,
// *errs.ServiceError.
func (t *Table) Submit(ctx context.Context, actions ...Action) error {
	return t.submit(ctx, repo.Submit, actions)
}

// submit runs actions through send (repo.Submit, or repo.SubmitOrSplit).
func (t *Table) submit(ctx context.Context, send func(context.Context, ...repo.Action) ([]string, error), actions []Action) error {
	acts := make([]repo.Action, len(actions))
	for i, a := range actions {
		if a.t != t {
			return errs.Invalid("transaction", "action %d belongs to another table", i)
		}
		if a.err != nil {
			return errs.Invalid("transaction", "action %d: %v", i, a.err)
		}
		acts[i] = a.a
	}
	if _, err := send(ctx, acts...); err != nil {
		return err
	}
	for _, a := range actions {
		if a.done != nil {
			a.done()
		}
	}
	return nil
}
