package compoundkey

import (
	"context"
	"fmt"
	"iter"

	"github.com/tablepatterns/tablepatterns/codec/keys"
	"github.com/tablepatterns/tablepatterns/internal/errs"
	"github.com/tablepatterns/tablepatterns/repo"
	"github.com/tablepatterns/tablepatterns/repo/filter"
)

// Layout is the shape of a compound RowKey: a type prefix, then a fixed number of parts
// ("empid_000123_2012" is the prefix "empid" and the parts "000123" and "2012"). It is
// built and parsed with package keys. A Layout is a small value, safe for concurrent use.
type Layout struct {
	prefix string
	parts  int
	c      keys.Compound
}

// LayoutOptions configures NewLayout. nil means the zero value.
type LayoutOptions struct {
	// Escaped selects the escaped, order-preserving encoding of package keys ('!' between
	// parts, every other troublesome character escaped) instead of the guide's readable
	// "_". Use it when parts may contain "_" or characters keys cannot hold, or differ in
	// width: the readable form keeps the order of the parts only for fixed-width parts such
	// as keys.Pad numbers (Tablestore's primary key design guide: the separator must sort below every character of the
	// parts).
	Escaped bool
}

// NewLayout returns the layout prefix + parts parts, e.g. NewLayout("empid", 2, nil) for
// the guide's "empid_000123_2012". prefix may be empty (no type prefix).
//
// Errors: errs.ErrInvalidInput when parts is below 1 or prefix cannot be part of such a key
// (it contains the separator or a character keys cannot hold).
func NewLayout(prefix string, parts int, opts *LayoutOptions) (Layout, error) {
	l := Layout{prefix: prefix, parts: parts}
	if opts == nil || !opts.Escaped {
		l.c = keys.MustNew("_")
	}
	if parts < 1 {
		return Layout{}, errs.Invalid("parts", "a compound key needs at least 1 part, got %d", parts)
	}
	if prefix != "" {
		if _, err := l.c.Join(prefix); err != nil {
			return Layout{}, err
		}
	}
	return l, nil
}

// MustLayout is NewLayout for package-level variables initialised with constants; it
// panics on an error.
func MustLayout(prefix string, parts int, opts *LayoutOptions) Layout {
	l, err := NewLayout(prefix, parts, opts)
	if err != nil {
		panic(err)
	}
	return l
}

// Parts returns the number of parts after the prefix.
func (l Layout) Parts() int { return l.parts }

func (l Layout) all(parts []string) []string {
	if l.prefix == "" {
		return parts
	}
	return append([]string{l.prefix}, parts...)
}

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

// Table is a typed repository of the entities of one Layout, stored in the same table
// and partitions as the entities they relate to (the Azure Table storage design guide, "compound key pattern"): the
// yearly reviews of an employee next to the employee. T's RowKey field must follow the
// layout; build it with Layout.Key. A Table is safe for concurrent use.
type Table[T any] struct {
	rows   *repo.Table[T]
	view   *repo.Table[T] // $select of T's properties
	layout Layout
}

// Options configures a Table. It has no fields yet: pass nil. It is there so that every
// pattern constructor has the same shape, New(table, required..., opts), and options can
// be added without breaking callers.
type Options struct{}

// New returns the repository of t's entities of type T whose RowKeys follow layout. Its
// range queries ask the service for T's properties only ($select), so a T made of the
// review fields reads just those, even from rows that hold more. It sends nothing.
//
// Errors: errs.ErrInvalidInput if t is nil, layout is the zero Layout, or T cannot be
// projected.
func New[T any](t *repo.Table[T], layout Layout, opts *Options) (*Table[T], error) {
	if t == nil {
		return nil, errs.Invalid("table", "is nil")
	}
	if layout.parts < 1 {
		return nil, errs.Invalid("layout", "is the zero Layout: build it with NewLayout")
	}
	view, err := repo.Project[T](t)
	if err != nil {
		return nil, err
	}
	return &Table[T]{rows: t, view: view, layout: layout}, nil
}

// Table returns the underlying table.
func (t *Table[T]) Table() *repo.Table[T] { return t.rows }

// Layout returns the table's layout.
func (t *Table[T]) Layout() Layout { return t.layout }

// check refuses a value whose RowKey does not follow the layout, before any request.
func (t *Table[T]) check(v *T) error {
	if v == nil {
		return errs.Invalid("entity", "is nil")
	}
	_, rk := t.rows.Codec().Keys(v)
	if _, err := t.layout.Parse(rk); err != nil {
		return fmt.Errorf("compoundkey: build the RowKey with Layout.Key: %w", err)
	}
	return nil
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

// Delete deletes the entity of partition pk with the given parts.
//
// Errors: errs.ErrInvalidInput (the parts; nothing sent), and those of repo.Table.Delete.
func (t *Table[T]) Delete(ctx context.Context, pk string, parts ...string) error {
	rk, err := t.layout.Key(parts...)
	if err != nil {
		return err
	}
	return t.rows.Delete(ctx, pk, rk, nil)
}

// Get reads the entity of partition pk with the given parts, with one point query.
//
// Errors: errs.ErrInvalidInput (the parts; nothing sent), and those of repo.Table.Get.
func (t *Table[T]) Get(ctx context.Context, pk string, parts ...string) (T, error) {
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

func (t *Table[T]) follows(rk string) bool {
	_, err := t.layout.Parse(rk)
	return err == nil
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
// repo.Submit.
//
// Errors: errs.ErrInvalidInput (the parts).
func (t *Table[T]) DeleteAction(pk string, parts ...string) (repo.Action, error) {
	rk, err := t.layout.Key(parts...)
	if err != nil {
		return repo.Action{}, err
	}
	return t.rows.DeleteAction(pk, rk, nil), nil
}
