package indexentity

import (
	"context"
	"slices"

	"github.com/tablepatterns/tablepatterns/queueworker"
)

// enqueue stores the change message: the first step of every write that changes the index.
// The test seam may stop the write before it.
func (ix *Eventual[T]) enqueue(ctx context.Context, c Change) error {
	if err := ix.seams.at(ctx, "enqueue"); err != nil {
		return err
	}
	_, err := queueworker.Enqueue(ctx, ix.queue, ix.Kind(), "", c, nil)
	return err
}

// announce is step 1 of a write: it enqueues c, the Change the write makes (nil when the
// write changes no listed value and needs no message). The test seam may stop the write
// after it, before the entity is written.
func (ix *Eventual[T]) announce(ctx context.Context, c *Change) error {
	if c != nil {
		if err := ix.enqueue(ctx, *c); err != nil {
			return err
		}
	}
	return ix.seams.at(ctx, "write")
}

// reporter is a Store that tells whether an Add or Remove wrote (TableStore, BlobStore).
type reporter interface {
	apply(ctx context.Context, value string, k Key, add bool) (bool, error)
}

// apply runs the store's Add (add) or Remove and reports whether it wrote (or may have).
// A Store that cannot tell is asked for the list first: one more read.
// The test seam may stop the reconciliation before it ("add" or "remove").
func (ix *Eventual[T]) apply(ctx context.Context, value string, k Key, add bool) (bool, error) {
	step := "remove"
	if add {
		step = "add"
	}
	if err := ix.seams.at(ctx, step); err != nil {
		return false, err
	}
	if r, ok := ix.store.(reporter); ok {
		return r.apply(ctx, value, k, add)
	}
	ks, err := ix.store.Keys(ctx, value)
	if err != nil {
		return false, err
	}
	if slices.Contains(ks, k) == add {
		return false, nil // already as asked
	}
	if add {
		return true, ix.store.Add(ctx, value, k)
	}
	return true, ix.store.Remove(ctx, value, k)
}
