package denormalize

import (
	"context"

	"github.com/tablepatterns/tablepatterns/repo"
)

// PutTarget inserts or replaces the target d with a fresh copy of its source's details:
// it reads the source Ref(d) names, applies Copy, and writes d and the link that records
// the copy (removing the link to the source d copied before, if it changed).
//
// InPartition: the source's links and header are read before the source, and one entity
// group transaction writes d, the new link, the source's link header (its copy count,
// conditional on its ETag, so that a concurrent UpdateSource of that source either is
// seen by the source read or makes this write start over) and, when d changes source, the
// old link and header. AcrossPartitions: a message is enqueued first, then d is written,
// both within one Settle/2 deadline; the worker maintains the links (ReconcileTarget).
//
// When d carries an ETag, the write is conditional on it (errs.ErrPreconditionFailed if d
// changed or no longer exists); without one, the stored target is replaced, retried on
// conflicts. On success d's ETag field holds the new ETag and d holds the copy. After a
// write whose outcome repo cannot prove (errs.ErrOutcomeUnknown), a fresh read decides
// (see targetOutcome): the target still at the version the write replaced, it starts
// over; otherwise (a new target, or one changed or gone since: another writer may have
// acted after this write landed) the errs.ErrOutcomeUnknown error is returned.
//
// Errors: errs.ErrInvalidInput before any request (d breaks a limit; in InPartition mode its
// source lives in another partition; a key lies in KeyRange); errs.ErrInvalidInput when
// InPartition linking would give the source more than MaxCopies copies; errs.ErrNotFound when
// the source does not exist; errs.ErrPreconditionFailed; errs.ErrOutcomeUnknown (see
// above); the errors of queueworker.Enqueue; errs.ErrTransient, *repo.Error.
func (r *Relation[S, D]) PutTarget(ctx context.Context, d *D) (err error) {
	ctx, end := r.span(ctx, "denormalize.put_target", r.targets.Name())
	defer func() { end(err) }()
	k, ref, ok, err := r.checkTarget(d)
	if err != nil {
		return err
	}
	callerETag := r.tcodec.ETag(d)
	err = r.loop(ctx, "put target", k, func(ctx context.Context) error {
		return r.putTarget(ctx, d, k, ref, ok, callerETag)
	})
	if err != nil {
		r.tcodec.SetETag(d, callerETag)
	}
	return err
}

// DeleteTarget deletes the target k and its link (in InPartition mode in the same
// transaction, counting it out of its source's header; in AcrossPartitions mode after a
// message, the worker removing the link). With opts.ETag set the delete is conditional on
// it; without, whatever is stored is deleted, retried on conflicts. After a delete whose
// outcome repo cannot prove (errs.ErrOutcomeUnknown), a fresh read decides (see
// targetOutcome): the target still at the version the delete was conditional on, it
// starts over; otherwise (gone, or put again by another writer) the errs.ErrOutcomeUnknown
// error is returned, never success, errs.ErrNotFound or errs.ErrPreconditionFailed.
//
// Errors: errs.ErrInvalidInput (nothing sent); errs.ErrNotFound; errs.ErrPreconditionFailed;
// errs.ErrOutcomeUnknown (see above); the errors of queueworker.Enqueue; errs.ErrTransient,
// *repo.Error.
func (r *Relation[S, D]) DeleteTarget(ctx context.Context, k Key, opts *repo.DeleteOptions) (err error) {
	ctx, end := r.span(ctx, "denormalize.delete_target", r.targets.Name())
	defer func() { end(err) }()
	if err := r.checkKey("target", k, r.targetsShareSourceTable()); err != nil {
		return err
	}
	var want string
	if opts != nil {
		want = opts.ETag
	}
	return r.loop(ctx, "delete target", k, func(ctx context.Context) error {
		return r.deleteTarget(ctx, k, want)
	})
}

// UpdateSource replaces the source s and refreshes every copy of it.
//
// InPartition: one entity group transaction updates s (conditional on the version read),
// its link header and every copy (each conditional on its ETag, with Copy applied): the
// source and its copies change together or not at all. AcrossPartitions: a message is
// enqueued first (also when s has no copies yet: a target may link it meanwhile), then s
// is written, both within one Settle/2 deadline; the worker refreshes the copies
// (RefreshSource).
//
// When s carries an ETag, the update is conditional on it; without one, it replaces what is
// stored, retried on conflicts. Conflicts on copies and links are always retried. On
// success s's ETag field holds the new ETag. After a write whose outcome repo cannot prove
// (errs.ErrOutcomeUnknown), a fresh read decides (see sourceOutcome): the source still at
// the version read before the write, it starts over; otherwise (changed or gone: the
// write may have landed before another writer's change) the errs.ErrOutcomeUnknown error
// is returned, never success, errs.ErrNotFound or errs.ErrPreconditionFailed.
//
// Errors: errs.ErrInvalidInput before any request (s breaks a limit, its RowKey lies in
// KeyRange); errs.ErrNotFound; errs.ErrPreconditionFailed; errs.ErrOutcomeUnknown (see
// above); errs.ErrInvalidInput when the copies found no longer fit one transaction; the
// errors of queueworker.Enqueue; errs.ErrTransient, *repo.Error.
func (r *Relation[S, D]) UpdateSource(ctx context.Context, s *S) (err error) {
	ctx, end := r.span(ctx, "denormalize.update_source", r.sources.Name())
	defer func() { end(err) }()
	src, err := r.checkSource(s)
	if err != nil {
		return err
	}
	callerETag := r.scodec.ETag(s)
	err = r.loop(ctx, "update source", src, func(ctx context.Context) error {
		return r.updateSource(ctx, s, src, callerETag)
	})
	if err != nil {
		r.scodec.SetETag(s, callerETag)
	}
	return err
}

func (r *Relation[S, D]) writeTargetAction(d *D, exists bool) repo.Action {
	if exists {
		return r.targets.UpdateAction(d, nil)
	}
	return r.targets.InsertAction(d)
}
