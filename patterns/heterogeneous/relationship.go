package heterogeneous

import (
	"errors"
	"fmt"
	"reflect"

	"github.com/tablepatterns/tablepatterns/internal/errs"
	"github.com/tablepatterns/tablepatterns/repo"
	"github.com/tablepatterns/tablepatterns/retry"
)

// Count is the type of a parent's child count: an Edm.Int32 or Edm.Int64 field.
type Count interface{ ~int32 | ~int64 }

// OneToMany is the guide's one-to-many relationship with both entity types in one
// partition (the design guide's "One-to-many relationships", first approach): a parent
// of type P (the department) and its children of type C (the employees), the parent
// holding the number of its children (EmployeeCount), kept exact by writing each child
// together with its parent in one entity group transaction. A OneToMany is safe for concurrent use.
type OneToMany[P, C any, N Count] struct {
	t      *Table
	parent func(pk string) string
	count  func(p *P) *N
	seams  seams // set by tests only
}

// NewOneToMany returns the relationship between the parents P and children C of t: the
// parent of partition pk has the RowKey parentRowKey(pk), and count points at its child
// count field. P and C must be registered in t. It sends nothing.
//
// Errors: errs.ErrInvalidInput (a nil argument, P or C not registered, P and C the same type).
func NewOneToMany[P, C any, N Count](t *Table, parentRowKey func(pk string) string, count func(p *P) *N) (*OneToMany[P, C, N], error) {
	if t == nil || parentRowKey == nil || count == nil {
		return nil, errs.Invalid("one-to-many", "the table, parentRowKey and count are required")
	}
	if _, err := registered[P](t); err != nil {
		return nil, err
	}
	if _, err := registered[C](t); err != nil {
		return nil, err
	}
	if reflect.TypeFor[P]() == reflect.TypeFor[C]() {
		return nil, errs.Invalid("one-to-many", "parent and child are both %s", typeName[P]())
	}
	return &OneToMany[P, C, N]{t: t, parent: parentRowKey, count: count}, nil
}

func (r *OneToMany[P, C, N]) parentKey(pk string) (string, error) {
	if pk == "" {
		return "", errs.Invalid("PartitionKey", "is empty: the partition names the parent")
	}
	return r.parent(pk), nil
}

// op names a loop of retry.Optimistic: an attempt whose transaction met a concurrent change
// of the parent returns retry.Again and starts over from a fresh read.
func (r *OneToMany[P, C, N]) op(name, pk, rk string) retry.Op {
	return retry.Op{Name: name, Resource: r.t.name, PartitionKey: pk, RowKey: rk}
}

func (r *OneToMany[P, C, N]) noParent(err error, pk, prk string) error {
	if errors.Is(err, repo.ErrNotFound) {
		return fmt.Errorf("heterogeneous: partition %q has no parent %q: %w", pk, prk, err)
	}
	return err
}
