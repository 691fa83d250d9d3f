package compoundkey

import (
	"fmt"

	"github.com/tablepatterns/tablepatterns/internal/errs"
	"github.com/tablepatterns/tablepatterns/repo"
)

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

// follows reports whether rk is a key of the layout: List skips the rows of its range that
// are not (another layout sharing the prefix).
func (t *Table[T]) follows(rk string) bool {
	_, err := t.layout.Parse(rk)
	return err == nil
}
