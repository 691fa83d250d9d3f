package secondaryindex

import (
	"context"
	"fmt"
	"strings"

	"github.com/tablepatterns/tablepatterns/internal/errs"
	"github.com/tablepatterns/tablepatterns/repo"
)

// Insert inserts v into the primary table and has its copies written by the worker:
// see the package documentation for the three steps and why each is safe to interrupt.
// On success v's ETag field holds the primary's new ETag.
//
// Errors: those of repo.Table.Insert (errs.ErrAlreadyExists, errs.ErrInvalidInput with nothing sent,
// also for a value that cannot be indexed), and those of queueworker.Enqueue.
func (x *Inter[T]) Insert(ctx context.Context, v *T) error {
	pk, rk, err := x.check(v)
	if err != nil {
		return err
	}
	return x.tracedWrite(ctx, pk, rk, func(ctx context.Context) error { return x.primary.Insert(ctx, v) })
}

// Update replaces the primary entity by v and has its copies reconciled by the worker.
// When v carries an ETag the update is conditional on it (errs.ErrPreconditionFailed if
// the entity changed since it was read); without one it is last-writer-wins. A value read
// without Verify through an index whose copies carry only some properties is refused, as
// Intra refuses it (it would erase the others; see ReadOptions). On success v's ETag field
// holds the new ETag.
//
// Errors: those of repo.Table.Update and queueworker.Enqueue; errs.ErrInvalidInput (nothing
// sent) also for a value that cannot be indexed or that was read from a partial copy.
func (x *Inter[T]) Update(ctx context.Context, v *T) error {
	pk, rk, err := x.check(v)
	if err != nil {
		return err
	}
	if name, ok := strings.CutPrefix(x.c.ETag(v), partialMark); ok {
		return errs.Invalid(fmt.Sprintf("index %q", name), "the value was read from a copy that carries only some properties; read the whole entity with Get (or Find with Verify) before updating it")
	}
	return x.tracedWrite(ctx, pk, rk, func(ctx context.Context) error { return x.primary.Update(ctx, v, nil) })
}

// Upsert inserts v or replaces the stored primary entity unconditionally (last writer
// wins) and has its copies reconciled by the worker.
//
// Errors: those of repo.Table.Upsert and queueworker.Enqueue; errs.ErrInvalidInput (nothing
// sent) also for a value that cannot be indexed.
func (x *Inter[T]) Upsert(ctx context.Context, v *T) error {
	pk, rk, err := x.check(v)
	if err != nil {
		return err
	}
	return x.tracedWrite(ctx, pk, rk, func(ctx context.Context) error { return x.primary.Upsert(ctx, v, nil) })
}

// Delete deletes the primary entity with keys pk and rk and has its copies removed by the
// worker. With opts.ETag set (the primary's ETag, as Get and a verified read return it)
// the delete is conditional on it: errs.ErrPreconditionFailed if the entity changed
// since. nil opts, or the mark that a value read without Verify through a partial copy
// carries instead of an ETag (see ReadOptions), deletes unconditionally, as for any
// unverified hit.
//
// Errors: errs.ErrInvalidInput (bad keys, or a PartitionKey inside an index's key space,
// see the package documentation; nothing sent), and those of repo.Table.Delete and
// queueworker.Enqueue.
func (x *Inter[T]) Delete(ctx context.Context, pk, rk string, opts *repo.DeleteOptions) error {
	if err := x.checkRef(pk, rk); err != nil {
		return err
	}
	var etag string
	if opts != nil && !strings.HasPrefix(opts.ETag, partialMark) {
		etag = opts.ETag
	}
	del := &repo.DeleteOptions{ETag: etag}
	return x.tracedWrite(ctx, pk, rk, func(ctx context.Context) error { return x.primary.Delete(ctx, pk, rk, del) })
}
