package denormalize

import (
	"context"
	"errors"

	"go.opentelemetry.io/otel/attribute"

	"github.com/tablepatterns/tablepatterns/internal/errs"
	"github.com/tablepatterns/tablepatterns/internal/fanout"
	"github.com/tablepatterns/tablepatterns/internal/telemetry"
	"github.com/tablepatterns/tablepatterns/repo"
	"github.com/tablepatterns/tablepatterns/retry"
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
	ctx, span := telemetry.Start(ctx, "denormalize.put_target", telemetry.KeyTable.String(r.targets.Name()), attribute.String("tablepatterns.relation", r.name))
	defer func() { telemetry.End(span, err) }()
	k, ref, ok, err := r.checkTarget(d)
	if err != nil {
		return err
	}
	callerETag := r.tcodec.ETag(d)
	err = r.loop(ctx, "put target", k, func(ctx context.Context) error {
		old, exists, err := r.getTarget(ctx, k)
		if err != nil {
			return err
		}
		if callerETag != "" && (!exists || r.tcodec.ETag(&old) != callerETag) {
			return preconditionFailed("put target", r.targets.Name(), k)
		}
		var oldRef Key
		oldOK := false
		if exists {
			oldRef, oldOK = r.ref(&old)
		}
		r.tcodec.SetETag(d, r.tcodec.ETag(&old)) // "" when d is new
		var hdr *linkRow
		var links []linkRow
		if ok && r.mode == InPartition {
			// The source's link header is read BEFORE the source: an UpdateSource that
			// commits after this read changes the header and makes the transaction below
			// fail (and this attempt start over); one that committed before it is seen by
			// the source read that follows. Read the other way round, an UpdateSource
			// committing between the two reads would leave this write's old copy in place
			// (issue 15, defect 3).
			if hdr, links, err = r.readLinks(ctx, ref); err != nil {
				return err
			}
		}
		if ok {
			s, err := r.getSource(ctx, ref)
			if err != nil {
				return err
			}
			r.copyFn(d, &s)
		}
		if r.mode == InPartition {
			return r.putInPartition(ctx, d, k, ref, ok, exists, oldRef, oldOK, callerETag, hdr, links)
		}
		return r.putAcross(ctx, d, k, ref, ok, exists, oldRef, oldOK, callerETag)
	})
	if err != nil {
		r.tcodec.SetETag(d, callerETag)
	}
	return err
}

func (r *Relation[S, D]) writeTargetAction(d *D, exists bool) repo.Action {
	if exists {
		return r.targets.UpdateAction(d, nil)
	}
	return r.targets.InsertAction(d)
}

// putInPartition writes d with its link in one transaction; hdr and links are the link
// header and links of ref as read before the source (see PutTarget).
func (r *Relation[S, D]) putInPartition(ctx context.Context, d *D, k, ref Key, ok, exists bool, oldRef Key, oldOK bool, callerETag string, hdr *linkRow, links []linkRow) error {
	read := r.tcodec.ETag(d) // the version the write replaces ("" for a new target)
	actions := []repo.Action{r.writeTargetAction(d, exists)}
	if ok {
		linked := false
		for i := range links {
			linked = linked || targetOf(&links[i]) == k
		}
		count := int32(len(links))
		if !linked {
			count++
			if int(count) > r.maxCopies {
				return errs.TooLarge("source copies", "one transaction must be able to update the source and every copy in its partition (Options.MaxCopies)", int(count), r.maxCopies)
			}
			rk, _ := r.linkKey(ref, k)
			actions = append(actions, r.links.InsertAction(&linkRow{PartitionKey: ref.PartitionKey, RowKey: rk, TargetPartitionKey: k.PartitionKey, TargetRowKey: k.RowKey}))
		}
		actions = append(actions, r.headerAction(ref, hdr, count))
	}
	if oldOK && (!ok || oldRef != ref) {
		rm, err := r.unlinkActions(ctx, oldRef, k)
		if err != nil {
			return err
		}
		actions = append(actions, rm...)
	}
	if err := r.step(ctx, "transaction"); err != nil {
		return err
	}
	// An old link goes apart only on a store that cannot delete its key in a transaction
	// (Azurite, for U+2028 or U+2029; see the package documentation).
	_, err := repo.SubmitOrSplit(ctx, actions...)
	if errors.Is(err, repo.ErrOutcomeUnknown) {
		return r.targetOutcome(ctx, err, k, read)
	}
	if actionConflict(err, 1) || (callerETag == "" && actionConflict(err, 0)) {
		return retry.Again(err)
	}
	return err
}

// headerAction writes a source's link header with count copies: an update conditional on
// the header read, or an insert of the first one (which fails if another writer inserted
// it meanwhile).
func (r *Relation[S, D]) headerAction(src Key, hdr *linkRow, count int32) repo.Action {
	if hdr == nil {
		return r.links.InsertAction(&linkRow{PartitionKey: src.PartitionKey, RowKey: r.headerKey(src), Copies: count})
	}
	next := *hdr
	next.Copies = count
	return r.links.UpdateAction(&next, nil)
}

// unlinkActions removes the link src -> k and counts it out of src's header, conditional on
// both as read (InPartition mode).
func (r *Relation[S, D]) unlinkActions(ctx context.Context, src, k Key) ([]repo.Action, error) {
	hdr, links, err := r.readLinks(ctx, src)
	if err != nil {
		return nil, err
	}
	for i := range links {
		if targetOf(&links[i]) == k {
			return []repo.Action{
				r.links.DeleteAction(src.PartitionKey, links[i].RowKey, &repo.DeleteOptions{ETag: links[i].ETag}),
				r.headerAction(src, hdr, int32(len(links)-1)),
			}, nil
		}
	}
	return nil, nil
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
	ctx, span := telemetry.Start(ctx, "denormalize.delete_target", telemetry.KeyTable.String(r.targets.Name()), attribute.String("tablepatterns.relation", r.name))
	defer func() { telemetry.End(span, err) }()
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

// deleteTarget is one attempt of DeleteTarget.
func (r *Relation[S, D]) deleteTarget(ctx context.Context, k Key, want string) error {
	d, found, err := r.getTarget(ctx, k)
	if err != nil {
		return err
	}
	if !found {
		return &errs.ServiceError{Op: "delete target", Resource: r.targets.Name(), PartitionKey: k.PartitionKey, RowKey: k.RowKey, StatusCode: 404, Code: "ResourceNotFound", Kind: errs.ErrNotFound, Err: errors.New("no such target")}
	}
	etag := r.tcodec.ETag(&d)
	if want != "" && etag != want {
		return preconditionFailed("delete target", r.targets.Name(), k)
	}
	ref, ok := r.ref(&d)
	del := &repo.DeleteOptions{ETag: etag}
	if r.mode == InPartition {
		actions := []repo.Action{r.targets.DeleteAction(k.PartitionKey, k.RowKey, del)}
		if ok {
			rm, err := r.unlinkActions(ctx, ref, k)
			if err != nil {
				return err
			}
			actions = append(actions, rm...)
		}
		if err := r.step(ctx, "transaction"); err != nil {
			return err
		}
		// Apart only where the store cannot delete a key in a transaction (see putInPartition).
		_, err := repo.SubmitOrSplit(ctx, actions...)
		if errors.Is(err, repo.ErrOutcomeUnknown) {
			return r.targetOutcome(ctx, err, k, etag)
		}
		if actionConflict(err, 1) || (want == "" && actionConflict(err, 0)) {
			return retry.Again(err)
		}
		return err
	}
	wctx, cancel := r.writeCtx(ctx)
	defer cancel()
	if ok {
		if err := r.enqueueTarget(wctx, TargetChange{PartitionKey: k.PartitionKey, RowKey: k.RowKey, Deleted: true, Old: []Key{ref}}); err != nil {
			return err
		}
	}
	if err := r.step(wctx, "write"); err != nil {
		return err
	}
	err = r.targets.Delete(wctx, k.PartitionKey, k.RowKey, del)
	if errors.Is(err, repo.ErrOutcomeUnknown) {
		return r.targetOutcome(ctx, err, k, etag)
	}
	if want == "" && isConflict(err) {
		return retry.Again(err)
	}
	return err
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
	ctx, span := telemetry.Start(ctx, "denormalize.update_source", telemetry.KeyTable.String(r.sources.Name()), attribute.String("tablepatterns.relation", r.name))
	defer func() { telemetry.End(span, err) }()
	src, err := r.checkSource(s)
	if err != nil {
		return err
	}
	callerETag := r.scodec.ETag(s)
	err = r.loop(ctx, "update source", src, func(ctx context.Context) error {
		cur, err := r.sources.Get(ctx, src.PartitionKey, src.RowKey)
		if err != nil {
			return err
		}
		if callerETag != "" && r.scodec.ETag(&cur) != callerETag {
			return preconditionFailed("update source", r.sources.Name(), src)
		}
		r.scodec.SetETag(s, r.scodec.ETag(&cur))
		if r.mode == InPartition {
			hdr, links, err := r.readLinks(ctx, src)
			if err != nil {
				return err
			}
			return r.updateInPartition(ctx, s, src, hdr, links, callerETag)
		}
		// Always a message, even for a source without links: a ReconcileTarget may link a
		// target and copy the old source between any read of the links and the write
		// below, and only a message handled after the write refreshes that copy (issue 15,
		// defect 4).
		wctx, cancel := r.writeCtx(ctx)
		defer cancel()
		if err := r.enqueueSource(wctx, SourceChange{PartitionKey: src.PartitionKey, RowKey: src.RowKey, Fingerprint: r.fingerprint(s)}); err != nil {
			return err
		}
		if err := r.step(wctx, "write"); err != nil {
			return err
		}
		read := r.scodec.ETag(s)
		err = r.sources.Update(wctx, s, nil)
		if errors.Is(err, repo.ErrOutcomeUnknown) {
			return r.sourceOutcome(ctx, err, src, read)
		}
		if callerETag == "" && isConflict(err) {
			return retry.Again(err)
		}
		return err
	})
	if err != nil {
		r.scodec.SetETag(s, callerETag)
	}
	return err
}

func (r *Relation[S, D]) updateInPartition(ctx context.Context, s *S, src Key, hdr *linkRow, links []linkRow, callerETag string) error {
	if len(links)+2 > repo.MaxTransactionActions {
		return errs.TooLarge("source copies", "the source and its copies no longer fit one transaction", len(links)+2, repo.MaxTransactionActions)
	}
	copies := make([]*D, len(links))
	err := fanout.Do(ctx, len(links), r.conc, func(ctx context.Context, i int) error {
		d, found, err := r.getTarget(ctx, targetOf(&links[i]))
		if err != nil || !found {
			return err
		}
		if ref, ok := r.ref(&d); ok && ref == src {
			next, _ := r.copied(d, s)
			copies[i] = &next
		}
		return nil
	})
	if err != nil {
		return err
	}
	actions := []repo.Action{r.sources.UpdateAction(s, nil), r.headerAction(src, hdr, int32(len(links)))}
	for _, d := range copies {
		if d != nil {
			actions = append(actions, r.targets.UpdateAction(d, nil))
		}
	}
	if err := r.step(ctx, "transaction"); err != nil {
		return err
	}
	read := r.scodec.ETag(s)
	_, err = repo.Submit(ctx, actions...)
	if errors.Is(err, repo.ErrOutcomeUnknown) {
		return r.sourceOutcome(ctx, err, src, read)
	}
	if actionConflict(err, 1) || (callerETag == "" && actionConflict(err, 0)) {
		return retry.Again(err)
	}
	return err
}
