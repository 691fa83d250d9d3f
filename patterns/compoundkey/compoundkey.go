package compoundkey

import (
	"context"
	"iter"

	"github.com/tablepatterns/tablepatterns/internal/errs"
	"github.com/tablepatterns/tablepatterns/repo"
	"github.com/tablepatterns/tablepatterns/repo/filter"
)

// Key returns the RowKey of the given parts: Key("000123", "2012") is
// "empid_000123_2012".
//
// Errors: errs.ErrInvalidInput for the wrong number of parts, or a part the encoding cannot
// hold (with the readable encoding: one containing "_" or a character keys cannot hold).
func (l Layout) Key(parts ...string) (string, error) {
	if len(parts) != l.parts {
		return "", errs.Invalid("parts", "the layout has %d parts, got %d", l.parts, len(parts))
	}
	return l.c.Join(l.all(parts)...)
}

// Parse returns the parts of a RowKey made by Key.
//
// Errors: errs.ErrInvalidInput when rk does not follow the layout (another prefix, another
// number of parts, a malformed escape).
func (l Layout) Parse(rk string) ([]string, error) {
	ps, err := l.c.Split(rk)
	if err != nil {
		return nil, err
	}
	if l.prefix != "" {
		if ps[0] != l.prefix {
			return nil, errs.Invalid("RowKey", "%q does not start with the layout's prefix %q", rk, l.prefix)
		}
		ps = ps[1:]
	}
	if len(ps) != l.parts {
		return nil, errs.Invalid("RowKey", "%q has %d parts, the layout %d", rk, len(ps), l.parts)
	}
	return ps, nil
}

// Range returns the RowKey bounds [lo, hi) of every key of the layout whose first parts
// are leading, for "RowKey ge lo and RowKey lt hi": Range("000123") selects every review
// of employee 000123 ("empid_000123_2012", "empid_000123_2013"), and neither
// "empid_000123" (the employee itself, another layout) nor "empid_0001234_2012". With no
// leading part it selects every key that starts with the prefix.
//
// Errors: errs.ErrInvalidInput when leading has as many parts as the layout or more (read one
// key with a point query), or holds a part the encoding cannot hold.
func (l Layout) Range(leading ...string) (lo, hi string, err error) {
	if len(leading) >= l.parts {
		return "", "", errs.Invalid("leading parts", "a range fixes fewer parts than the layout's %d, got %d: read one key with Get", l.parts, len(leading))
	}
	all := l.all(leading)
	if len(all) == 0 {
		return "", "", nil // no prefix, no leading part: the whole partition
	}
	return l.c.Range(all...)
}

// Insert stores v (see repo.Table.Insert).
//
// Errors: errs.ErrInvalidInput (a RowKey that does not follow the layout; nothing sent), and
// those of repo.Table.Insert.
func (t *Table[T]) Insert(ctx context.Context, v *T) error {
	if err := t.check(v); err != nil {
		return err
	}
	return t.rows.Insert(ctx, v)
}

// Upsert inserts or replaces v (see repo.Table.Upsert).
//
// Errors: errs.ErrInvalidInput (a RowKey that does not follow the layout; nothing sent), and
// those of repo.Table.Upsert.
func (t *Table[T]) Upsert(ctx context.Context, v *T, opts *repo.UpsertOptions) error {
	if err := t.check(v); err != nil {
		return err
	}
	return t.rows.Upsert(ctx, v, opts)
}

// Update updates v, conditional on its ETag (see repo.Table.Update).
//
// Errors: errs.ErrInvalidInput (a RowKey that does not follow the layout; nothing sent), and
// those of repo.Table.Update.
func (t *Table[T]) Update(ctx context.Context, v *T, opts *repo.UpdateOptions) error {
	if err := t.check(v); err != nil {
		return err
	}
	return t.rows.Update(ctx, v, opts)
}

// Delete deletes the entity of partition pk whose RowKey the layout builds from parts,
// conditional on opts.ETag when set (nil: unconditional, as repo.Table.Delete).
//
// Errors: errs.ErrInvalidInput (the parts; nothing sent), and those of repo.Table.Delete
// (errs.ErrNotFound, errs.ErrPreconditionFailed, ...).
func (t *Table[T]) Delete(ctx context.Context, pk string, parts []string, opts *repo.DeleteOptions) error {
	rk, err := t.layout.Key(parts...)
	if err != nil {
		return err
	}
	return t.rows.Delete(ctx, pk, rk, opts)
}

// Get reads the entity of partition pk whose RowKey the layout builds from parts, with
// one point query. The parts are the entity's RowKey, so they stand where every other
// pattern takes rk.
//
// Errors: errs.ErrInvalidInput (the parts; nothing sent), and those of repo.Table.Get
// (errs.ErrNotFound, ...).
func (t *Table[T]) Get(ctx context.Context, pk string, parts []string) (T, error) {
	rk, err := t.layout.Key(parts...)
	if err != nil {
		var zero T
		return zero, err
	}
	return t.rows.Get(ctx, pk, rk)
}

// List returns the entities of partition pk whose first parts are leading, in key order,
// with one range query per 1,000 entities and $select of T's properties: the guide's
//
//	$filter=(PartitionKey eq 'Sales') and (RowKey ge 'empid_000123_') and (RowKey lt 'empid_000123`')
//	&$select=RowKey,ManagerRating,PeerRating,Comments
//
// (the guide's own bounds, 'empid_000123' and 'empid_000124', would also return the
// employee entity itself). Rows of the range that do not follow the layout, such as
// entities of another layout sharing the prefix, are skipped.
//
// Errors (yielded): errs.ErrInvalidInput (see Layout.Range; nothing sent), and those of
// repo.Table.Query.
func (t *Table[T]) List(ctx context.Context, pk string, leading ...string) iter.Seq2[T, error] {
	lo, hi, err := t.layout.Range(leading...)
	if err != nil {
		return func(yield func(T, error) bool) {
			var zero T
			yield(zero, err)
		}
	}
	rows := t.view.Query(ctx, repo.Query{Filter: filter.RowKeyRange(pk, lo, hi)})
	return func(yield func(T, error) bool) {
		for v, err := range rows {
			if err == nil {
				if _, rk := t.rows.Codec().Keys(&v); !t.follows(rk) {
					continue
				}
			}
			if !yield(v, err) {
				return
			}
		}
	}
}

// InsertAction returns an insert of v for repo.Submit, to store it in one transaction
// with related entities of its partition (the employee it reviews). The RowKey is checked
// first.
//
// Errors: errs.ErrInvalidInput (a RowKey that does not follow the layout).
func (t *Table[T]) InsertAction(v *T) (repo.Action, error) {
	if err := t.check(v); err != nil {
		return repo.Action{}, err
	}
	return t.rows.InsertAction(v), nil
}

// UpsertAction returns an upsert of v for repo.Submit; see InsertAction.
//
// Errors: errs.ErrInvalidInput (a RowKey that does not follow the layout).
func (t *Table[T]) UpsertAction(v *T, opts *repo.UpsertOptions) (repo.Action, error) {
	if err := t.check(v); err != nil {
		return repo.Action{}, err
	}
	return t.rows.UpsertAction(v, opts), nil
}

// DeleteAction returns a delete of the entity of partition pk with the given parts for
// repo.Submit, conditional on opts.ETag when set.
//
// Errors: errs.ErrInvalidInput (the parts).
func (t *Table[T]) DeleteAction(pk string, parts []string, opts *repo.DeleteOptions) (repo.Action, error) {
	rk, err := t.layout.Key(parts...)
	if err != nil {
		return repo.Action{}, err
	}
	return t.rows.DeleteAction(pk, rk, opts), nil
}
