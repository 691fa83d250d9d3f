package indexentity

import (
	"context"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/patterns/consistency"
	"github.com/tablepatterns/tablepatterns/patterns/internal/maintain"
)

// Removal tells an archive move (package consistency, where the index is a Companion of
// its table) what removing the entity e from the table means to the index: e's id taken
// out of its value's index entity (an update, or a delete when it was the last id of
// the page), conditional on the page's ETag, to commit in one entity group transaction
// with the delete of e, as Delete does. The entry is removed, not moved: the archive
// holds the entity, and the index lists only the entities of the table. A page that
// changed meanwhile (another entity of the value written) fails the transaction and the
// move starts over from fresh reads.
//
// e is stored data and checked as such: keys in the index's KeyRange (an index entity
// itself), an entity that does not decode as T, and a value no index key can hold are
// refused with errs.ErrInvalidInput. An entity without a value, or not listed, has
// nothing to remove.
//
// Cost: one range query of the value's index entities; the transaction grows by one
// action. The actions are built on this index's table: build it on the Archiver's
// clients.
//
// Errors: errs.ErrInvalidInput (nothing sent), errs.ErrTransient, *repo.Error, and for
// a type with encrypted fields the key holder's own failure (not the data's: the move
// fails and reruns).
func (ix *SamePartition[T]) Removal(ctx context.Context, e *codec.Entity) (consistency.Removal, error) {
	v, err := maintain.Decode(ctx, ix.codec, e)
	if err != nil {
		return consistency.Removal{}, err
	}
	if err := ix.checkKeys(e.PartitionKey, e.RowKey); err != nil {
		return consistency.Removal{}, err
	}
	value := ix.value(&v)
	if value == "" {
		return consistency.Removal{}, nil
	}
	acts, err := ix.planRemove(ctx, e.PartitionKey, value, e.RowKey)
	if err != nil {
		return consistency.Removal{}, err
	}
	return consistency.Removal{Actions: acts}, nil
}

// Removal tells an archive move (package consistency, where the index is a Companion of
// its table) what removing the entity e means to the index. The lists live where no
// transaction with e's delete reaches, so they are cleaned through the worker, by the
// protocol of Delete: Before enqueues a Change announcing e deleted (naming its value),
// and Within bounds that enqueue and the delete to Settle/2. The handler removes e's key
// from the value's list once it finds e gone; a move that restarts or never deletes
// leaves a message that settles and changes nothing. The entry is removed, not moved.
//
// e is stored data and checked as such: keys the index refuses, an entity that does not
// decode as T, and a value the Store cannot index are refused with errs.ErrInvalidInput.
// An entity without a value has nothing listed and needs no message.
//
// Cost: one enqueue; the worker's reconciliation of e.
//
// Errors: errs.ErrInvalidInput (nothing sent), the key holder's failure as above.
// Removal itself sends nothing.
func (ix *Eventual[T]) Removal(ctx context.Context, e *codec.Entity) (consistency.Removal, error) {
	v, err := maintain.Decode(ctx, ix.codec, e)
	if err != nil {
		return consistency.Removal{}, err
	}
	k := Key{e.PartitionKey, e.RowKey}
	if err := ix.checkKey(k); err != nil {
		return consistency.Removal{}, err
	}
	value := ix.value(&v)
	if value == "" {
		return consistency.Removal{}, nil
	}
	if err := ix.store.Check(value); err != nil {
		return consistency.Removal{}, err
	}
	c := Change{PartitionKey: k.PartitionKey, RowKey: k.RowKey, Deleted: true, Old: []string{value}}
	return consistency.Removal{
		Within: ix.settle.Settle() / 2,
		Before: func(ctx context.Context) error { return ix.enqueue(ctx, c) },
	}, nil
}
