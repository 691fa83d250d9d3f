package consistency

import (
	"context"
	"errors"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/internal/errs"
	"github.com/tablepatterns/tablepatterns/patterns/internal/archive"
	"github.com/tablepatterns/tablepatterns/repo"
	"github.com/tablepatterns/tablepatterns/retry"
)

// ArchiveEntity runs one archive-entity job. It moves the entity so that concurrent
// duplicates, replays and reorders of the job all end with the newest version of the
// entity archived once and the source gone:
//
//  1. read the target's copy (its ETag and the source version it records), THEN the
//     source entity (its ETag). Because the target is read first, a source that still
//     holds a version different from the one the target records holds a newer one;
//  2. unless the target already records that source version, write the copy
//     conditionally: insert when the target had none, replace If-Match the target's ETag
//     otherwise (a concurrent run that wrote in between makes it start over);
//  3. delete the source If-Match the ETag read in 1 (412: it changed, start over). A 404
//     counts as moved only when the source is really gone (one Get looks: a store can
//     answer 404 for an entity that is there) and the target holds the version read in
//     1; otherwise the move starts over and finds what happened.
//
// When the source table has companions (Options.Companions), each is asked for its
// Removal after step 1, before anything is written (a refusal stops the move there), and
// step 3 becomes: their Before functions, then one entity group transaction of the delete
// and their actions, within the shortest Within; a companion action that fails (its copy
// changed or went) starts the move over. Their After functions run once it landed. See the
// package documentation ("Index-aware moves").
//
// A write whose outcome is unknown (repo.ErrOutcomeUnknown) starts the move over too.
// Restarts use the jittered backoff of Options.Retry. A delete the store refuses (404)
// while the entity is there at the version read starts the move over once; refused
// again at that version, the move fails with ErrInvalidInput (permanent), the copy in
// the target and the entity in the source. So does a companion's copy whose delete in
// the transaction answers 404 twice at one version while the companion finds it there,
// and a delete the store misaddresses twice (repo.ErrDeleteMisaddressed, whatever its
// status; see entity_misaddressed.go).
//
// Errors: ErrInvalidInput (nothing sent, or a delete the store keeps refusing),
// ErrTransient, *repo.Error. OutcomeMissing is not an error.
func (a *Archiver) ArchiveEntity(ctx context.Context, job ArchiveEntityJob) (Outcome, error) {
	if err := job.Validate(); err != nil {
		return "", err
	}
	if err := a.allowed(job.Source, job.TargetTable, job.TargetContainer); err != nil {
		return "", err
	}
	// The companions' transaction actions name the table as Options.Companions spells it
	// (checked before anything is written: checkRemoval).
	src, err := a.table(a.companionSpelling(job.Source))
	if err != nil {
		return "", err
	}
	op := retry.Op{Name: "archive entity", Resource: job.Source, PartitionKey: job.PartitionKey, RowKey: job.RowKey, Retryable: restartable}
	var refused refusals
	return retry.DoValue(ctx, a.opts.Retry, op, func(ctx context.Context, _ int) (Outcome, error) {
		out, err := a.moveOnce(ctx, src, job)
		return out, refused.check(err)
	})
}

// moveOnce is one attempt of the move, the guide's four steps in its order: read the
// target, read the source, write the copy conditionally, delete the source If-Match.
// Any conflict comes back for ArchiveEntity to start over from fresh reads.
func (a *Archiver) moveOnce(ctx context.Context, src *repo.Table[codec.Entity], job ArchiveEntityJob) (Outcome, error) {
	// 1. Read the target: the copy's ETag and the source version it records.
	tgt, err := a.readTarget(ctx, job)
	if err != nil {
		return "", err
	}
	if tgt.foreign(job.Source) {
		return "", foreignCopy(job.TargetTable, job.Source, job.PartitionKey, job.RowKey, tgt.sourceTable)
	}

	// 2. Read the source. Read after the target, a version other than the one the copy
	// records is a newer one.
	e, err := src.Get(ctx, job.PartitionKey, job.RowKey)
	gone, err := a.checkSourceRead(src, job, &e, err)
	if gone {
		return a.sourceGone(ctx, job, tgt)
	}
	if err != nil {
		return "", err
	}
	version := e.ETag
	// The companions answer before anything is written: a refusal leaves the move
	// undone rather than half done.
	removals, acts, err := a.removalActions(ctx, src, job, &e)
	if err != nil {
		return "", err
	}

	// 3. Write the copy, unless it already records this version: insert where there was
	// none, replace If-Match the copy's ETag otherwise.
	if tgt.sourceETag != version {
		if err := a.writeTarget(ctx, job, &e, tgt); err != nil {
			return "", err
		}
	}

	// 4. Delete the source If-Match the version read in step 2.
	err = a.deleteSource(ctx, src, job, version, acts, removals)
	if errors.Is(err, errs.ErrNotFound) && !errors.Is(err, errMoveStepFailed) {
		return a.deletedMeanwhile(ctx, job, version)
	}
	if err != nil {
		return "", err // ErrPreconditionFailed, ErrOutcomeUnknown, errRestart: start over
	}
	return OutcomeMoved, nil
}

// readTarget reads the archive copy's state. What it reads is untrusted: a recorded
// version that is not a string (table) or not hex (blob) counts as unknown, which only
// means the copy is rewritten from the source.
func (a *Archiver) readTarget(ctx context.Context, job ArchiveEntityJob) (copyState, error) {
	if job.TargetTable != "" {
		dst, err := a.table(job.TargetTable)
		if err != nil {
			return copyState{}, err
		}
		e, err := dst.Get(ctx, job.PartitionKey, job.RowKey)
		if errors.Is(err, errs.ErrNotFound) {
			return copyState{}, nil
		}
		if err != nil {
			return copyState{}, err
		}
		return tableCopyState(job.TargetTable, &e)
	}
	return a.blobState(ctx, job, EntityBlobName(job.Source, job.PartitionKey, job.RowKey))
}

// writeTarget writes the archive copy of e conditionally on the target state read before
// the source: insert if there was none, replace If-Match otherwise. A conflict
// (ErrAlreadyExists, ErrPreconditionFailed) makes the move start over.
func (a *Archiver) writeTarget(ctx context.Context, job ArchiveEntityJob, e *codec.Entity, tgt copyState) error {
	cp := archiveCopy(e, job.Source, job.TargetTable != "")
	if job.TargetTable != "" {
		dst, err := a.table(job.TargetTable)
		if err != nil {
			return err
		}
		write := func() error {
			if !tgt.exists {
				return dst.Insert(ctx, cp)
			}
			cp.ETag = tgt.etag
			return dst.Update(ctx, cp, nil) // If-Match the target's ETag
		}
		err = write()
		if errors.Is(err, errs.ErrNotFound) && !tgt.exists && archive.IsTableNotFound(err) {
			if err = dst.CreateIfNotExists(ctx); err == nil {
				err = write()
			}
		} else if errors.Is(err, errs.ErrNotFound) {
			return errRestart // the copy we meant to replace is gone
		}
		return err
	}
	body, err := codec.EncodeEntity(cp)
	if err != nil {
		return err
	}
	return a.uploadCopy(ctx, job, e, body, tgt)
}

// deleteSource deletes the source entity If-Match version: one delete, or, with
// companions, one entity group transaction of acts (the delete first, then their
// actions, checked by checkRemoval). sendDelete runs it under the companions' protocol
// and tells a 404 that proves the entity gone from one that does not.
func (a *Archiver) deleteSource(ctx context.Context, src *repo.Table[codec.Entity], job ArchiveEntityJob, version string, acts []repo.Action, rs []Removal) error {
	return a.sendDelete(ctx, src, job, version, rs, func(ctx context.Context) error {
		if len(acts) == 1 {
			return src.Delete(ctx, job.PartitionKey, job.RowKey, &repo.DeleteOptions{ETag: version})
		}
		_, err := repo.Submit(ctx, acts...)
		return err
	})
}
