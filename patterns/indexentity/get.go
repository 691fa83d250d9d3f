package indexentity

import "context"

// Get reads the entity with keys pk and rk, with one point query on the primary table
// (the index plays no part), as every pattern of this module reads by keys. Keys inside
// the index entities' own key space are refused, as Delete refuses them: no entity of T
// lives there.
//
// Errors: errs.ErrInvalidInput (nothing sent), errs.ErrNotFound, errs.ErrTransient,
// *repo.Error.
func (ix *SamePartition[T]) Get(ctx context.Context, pk, rk string) (T, error) {
	if err := ix.checkKeys(pk, rk); err != nil {
		var zero T
		return zero, err
	}
	return ix.primary.Get(ctx, pk, rk)
}

// Get reads the entity with keys pk and rk, with one point query on the primary table
// (the index plays no part), as every pattern of this module reads by keys. When the
// index entities share the primary's table, keys inside their partitions are refused, as
// every write refuses them.
//
// Errors: errs.ErrInvalidInput (nothing sent), errs.ErrNotFound, errs.ErrTransient,
// *repo.Error.
func (ix *Eventual[T]) Get(ctx context.Context, pk, rk string) (T, error) {
	if err := ix.checkKey(Key{pk, rk}); err != nil {
		var zero T
		return zero, err
	}
	return ix.primary.Get(ctx, pk, rk)
}
