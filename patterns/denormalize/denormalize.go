package denormalize

import (
	"context"
	"errors"

	"github.com/tablepatterns/tablepatterns/internal/errs"
	"github.com/tablepatterns/tablepatterns/internal/fanout"
	"github.com/tablepatterns/tablepatterns/repo"
	"github.com/tablepatterns/tablepatterns/retry"
)

// This file is the guide's denormalization pattern as code: a target (the department)
// keeps a copy of its source's details (its manager's), and every write keeps the two
// consistent. Each function is one attempt, run again by its caller (write.go) after a
// conflict; every request it sends is in requests.go.
//
//   - putTarget: read the target, read the source (after its link header, InPartition),
//     copy the details into the target, and write the target with its link: one entity
//     group transaction (InPartition), or a message and then the target (AcrossPartitions);
//   - deleteTarget: the target and its link, the same way;
//   - updateSource: read the source and where it is copied, and write the source with
//     every copy in one transaction (InPartition), or a message and then the source, the
//     worker refreshing the copies (AcrossPartitions, worker.go).
//
// A write whose outcome repo cannot prove is decided at one point each, by outcome.go.

// putTarget is one attempt of PutTarget: d gets a fresh copy of ref's details (ok: d
// names a source) and is written with its link; callerETag is the ETag the caller set.
func (r *Relation[S, D]) putTarget(ctx context.Context, d *D, k, ref Key, ok bool, callerETag string) error {
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
		// The source's link header is read BEFORE the source: an UpdateSource that commits
		// after this read changes the header and makes the transaction below fail (and this
		// attempt start over); one that committed before it is seen by the source read that
		// follows. Read the other way round, an UpdateSource committing between the two
		// reads would leave this write's old copy in place.
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
	if r.mode == AcrossPartitions {
		return r.putAcross(ctx, d, k, ref, ok, exists, oldRef, oldOK, callerETag)
	}
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
	if oldOK && (!ok || oldRef != ref) { // d leaves the source it copied
		rm, err := r.unlinkActions(ctx, oldRef, k)
		if err != nil {
			return err
		}
		actions = append(actions, rm...)
	}
	err = r.submit(ctx, actions...)
	if errors.Is(err, repo.ErrOutcomeUnknown) {
		return r.targetOutcome(ctx, err, k, read)
	}
	if actionConflict(err, 1) || (callerETag == "" && actionConflict(err, 0)) {
		return retry.Again(err)
	}
	return err
}

// putAcross writes d after a message that lets the worker maintain its links, both within
// one Settle/2 deadline.
func (r *Relation[S, D]) putAcross(ctx context.Context, d *D, k, ref Key, ok, exists bool, oldRef Key, oldOK bool, callerETag string) error {
	wctx, cancel := r.writeCtx(ctx)
	defer cancel()
	if ok || oldOK {
		c := TargetChange{PartitionKey: k.PartitionKey, RowKey: k.RowKey}
		if ok {
			c.Ref = &ref
		}
		if oldOK && (!ok || oldRef != ref) {
			c.Old = []Key{oldRef}
		}
		if err := r.enqueueTarget(wctx, c); err != nil {
			return err
		}
	}
	read := r.tcodec.ETag(d) // the version the write replaces ("" for a new target)
	err := r.writeTarget(wctx, d, exists)
	if errors.Is(err, repo.ErrOutcomeUnknown) {
		return r.targetOutcome(ctx, err, k, read)
	}
	if callerETag == "" && isConflict(err) {
		return retry.Again(err)
	}
	return err
}

// deleteTarget is one attempt of DeleteTarget; want is the caller's ETag ("" for any).
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
		err := r.submit(ctx, actions...)
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
	err = r.removeTarget(wctx, k, del)
	if errors.Is(err, repo.ErrOutcomeUnknown) {
		return r.targetOutcome(ctx, err, k, etag)
	}
	if want == "" && isConflict(err) {
		return retry.Again(err)
	}
	return err
}

// updateSource is one attempt of UpdateSource: s and its copies are written together.
func (r *Relation[S, D]) updateSource(ctx context.Context, s *S, src Key, callerETag string) error {
	cur, err := r.sources.Get(ctx, src.PartitionKey, src.RowKey)
	if err != nil {
		return err
	}
	if callerETag != "" && r.scodec.ETag(&cur) != callerETag {
		return preconditionFailed("update source", r.sources.Name(), src)
	}
	r.scodec.SetETag(s, r.scodec.ETag(&cur))
	read := r.scodec.ETag(s)
	if r.mode == AcrossPartitions {
		// Always a message, even for a source without links: a ReconcileTarget may link a
		// target and copy the old source between any read of the links and the write
		// below, and only a message handled after the write refreshes that copy.
		wctx, cancel := r.writeCtx(ctx)
		defer cancel()
		if err := r.enqueueSource(wctx, SourceChange{PartitionKey: src.PartitionKey, RowKey: src.RowKey, Fingerprint: r.fingerprint(s)}); err != nil {
			return err
		}
		err = r.writeSource(wctx, s)
		if errors.Is(err, repo.ErrOutcomeUnknown) {
			return r.sourceOutcome(ctx, err, src, read)
		}
		if callerETag == "" && isConflict(err) {
			return retry.Again(err)
		}
		return err
	}
	hdr, links, err := r.readLinks(ctx, src)
	if err != nil {
		return err
	}
	if len(links)+2 > repo.MaxTransactionActions {
		return errs.TooLarge("source copies", "the source and its copies no longer fit one transaction", len(links)+2, repo.MaxTransactionActions)
	}
	copies := make([]*D, len(links))
	err = fanout.Do(ctx, len(links), r.conc, func(ctx context.Context, i int) error {
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
	err = r.submit(ctx, actions...)
	if errors.Is(err, repo.ErrOutcomeUnknown) {
		return r.sourceOutcome(ctx, err, src, read)
	}
	if actionConflict(err, 1) || (callerETag == "" && actionConflict(err, 0)) {
		return retry.Again(err)
	}
	return err
}
