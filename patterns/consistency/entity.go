package consistency

import (
	"context"
	"errors"
	"io"
	"net/url"
	"strings"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/internal/errs"
	"github.com/tablepatterns/tablepatterns/repo"
	"github.com/tablepatterns/tablepatterns/retry"
)

// MaxBlobNameBytes is the service's limit on a blob name.
const MaxBlobNameBytes = 1024

// ArchiveEntityJob is the payload of an archive-entity message: move one entity from the
// Source table to the TargetTable, or to a blob in TargetContainer (exactly one of them).
type ArchiveEntityJob struct {
	Source          string `json:"source"`
	PartitionKey    string `json:"pk"`
	RowKey          string `json:"rk"`
	TargetTable     string `json:"targetTable,omitempty"`
	TargetContainer string `json:"targetContainer,omitempty"`
}

// Validate checks the job without sending anything.
//
// Errors: ErrInvalidInput naming the field.
func (j ArchiveEntityJob) Validate() error {
	if err := codec.ValidateTableName(j.Source); err != nil {
		return err
	}
	if j.PartitionKey == "" {
		return errs.Invalid("pk", "is empty")
	}
	if err := codec.ValidateKey("PartitionKey", j.PartitionKey); err != nil {
		return err
	}
	if err := codec.ValidateKey("RowKey", j.RowKey); err != nil {
		return err
	}
	switch {
	case (j.TargetTable == "") == (j.TargetContainer == ""):
		return errs.Invalid("target", "exactly one of targetTable and targetContainer must be set")
	case j.TargetTable != "":
		if err := codec.ValidateTableName(j.TargetTable); err != nil {
			return err
		}
		if strings.EqualFold(j.TargetTable, j.Source) {
			return errs.Invalid("targetTable", "is the source table (table names are case-insensitive)")
		}
	default:
		if err := codec.ValidateContainerName(j.TargetContainer); err != nil {
			return err
		}
		if n := len(EntityBlobName(j.Source, j.PartitionKey, j.RowKey)); n > MaxBlobNameBytes {
			return errs.TooLarge("target blob name", "the entity's blob name is too long", n, MaxBlobNameBytes)
		}
	}
	return nil
}

// EntityBlobName is the name of the blob an entity is archived to:
// <table>/<PartitionKey>/<RowKey>.json with the keys path-escaped, so that it is readable
// and one partition is one virtual folder.
func EntityBlobName(table, pk, rk string) string {
	return table + "/" + url.PathEscape(pk) + "/" + url.PathEscape(rk) + ".json"
}

// ArchiveEntity runs one archive-entity job: read the source entity, insert-or-replace it
// into the target, delete it from the source conditional on the ETag read. Every step is
// idempotent, so the job can run twice, concurrently, or again after a stop at any point
// (see the package doc). A source that changes under the job makes it start over, with
// the jittered backoff of Options.Retry.
//
// Errors: ErrInvalidInput (nothing sent), ErrTransient, *repo.Error. OutcomeMissing is not
// an error.
func (a *Archiver) ArchiveEntity(ctx context.Context, job ArchiveEntityJob) (Outcome, error) {
	if err := job.Validate(); err != nil {
		return "", err
	}
	src, err := a.table(job.Source)
	if err != nil {
		return "", err
	}
	op := retry.Op{Name: "archive entity", Resource: job.Source, PartitionKey: job.PartitionKey, RowKey: job.RowKey,
		Retryable: func(err error) bool { return errors.Is(err, errs.ErrPreconditionFailed) }}
	return retry.DoValue(ctx, a.opts.Retry, op, func(ctx context.Context, _ int) (Outcome, error) {
		return a.moveOnce(ctx, src, job)
	})
}

func (a *Archiver) moveOnce(ctx context.Context, src *repo.Table[codec.Entity], job ArchiveEntityJob) (Outcome, error) {
	e, err := src.Get(ctx, job.PartitionKey, job.RowKey)
	if errors.Is(err, errs.ErrNotFound) {
		there, err := a.inTarget(ctx, job)
		if err != nil {
			return "", err
		}
		if there {
			return OutcomeAlreadyArchived, nil
		}
		return OutcomeMissing, nil
	}
	if err != nil {
		return "", err
	}
	if err := a.after("archive-entity", "read"); err != nil {
		return "", err
	}
	etag := e.ETag
	if err := a.writeTarget(ctx, job, &e); err != nil {
		return "", err
	}
	if err := a.after("archive-entity", "copied"); err != nil {
		return "", err
	}
	err = src.Delete(ctx, job.PartitionKey, job.RowKey, &repo.DeleteOptions{ETag: etag})
	if errors.Is(err, errs.ErrNotFound) {
		// A concurrent run of the same job deleted it after copying the same version.
		return OutcomeMoved, nil
	}
	if err != nil {
		return "", err // ErrPreconditionFailed restarts the move from a fresh read
	}
	return OutcomeMoved, a.after("archive-entity", "deleted")
}

func (a *Archiver) writeTarget(ctx context.Context, job ArchiveEntityJob, e *codec.Entity) error {
	e.ETag = ""
	if job.TargetTable != "" {
		dst, err := a.table(job.TargetTable)
		if err != nil {
			return err
		}
		err = dst.Upsert(ctx, e, nil)
		if errors.Is(err, errs.ErrNotFound) { // the archive table does not exist yet
			if err = dst.CreateIfNotExists(ctx); err == nil {
				err = dst.Upsert(ctx, e, nil)
			}
		}
		return err
	}
	body, err := codec.EncodeEntity(e)
	if err != nil {
		return err
	}
	name := EntityBlobName(job.Source, job.PartitionKey, job.RowKey)
	upload := func() error {
		return retry.Do(ctx, a.opts.Retry, retry.Op{Name: "upload blob", Resource: job.TargetContainer + "/" + name}, func(ctx context.Context, _ int) error {
			_, err := a.blobs().UploadBuffer(ctx, job.TargetContainer, name, body, nil)
			return errs.Wrap(err, "upload blob", job.TargetContainer, job.PartitionKey, job.RowKey)
		})
	}
	err = upload()
	if errors.Is(err, errs.ErrNotFound) {
		if err = a.createContainer(ctx, job.TargetContainer); err == nil {
			err = upload()
		}
	}
	return err
}

// inTarget reports whether the target holds the entity.
func (a *Archiver) inTarget(ctx context.Context, job ArchiveEntityJob) (bool, error) {
	if job.TargetTable != "" {
		dst, err := a.table(job.TargetTable)
		if err != nil {
			return false, err
		}
		_, err = dst.Get(ctx, job.PartitionKey, job.RowKey)
		if errors.Is(err, errs.ErrNotFound) {
			return false, nil
		}
		return err == nil, err
	}
	name := EntityBlobName(job.Source, job.PartitionKey, job.RowKey)
	err := retry.Do(ctx, a.opts.Retry, retry.Op{Name: "blob properties", Resource: job.TargetContainer + "/" + name}, func(ctx context.Context, _ int) error {
		_, err := a.blobs().ServiceClient().NewContainerClient(job.TargetContainer).NewBlobClient(name).GetProperties(ctx, nil)
		return errs.Wrap(err, "blob properties", job.TargetContainer, job.PartitionKey, job.RowKey)
	})
	if errors.Is(err, errs.ErrNotFound) {
		return false, nil
	}
	return err == nil, err
}

// ReadArchivedEntity reads an entity archived to a blob container.
//
// Errors: ErrNotFound, ErrTransient, *repo.Error, and codec's decode errors.
func (a *Archiver) ReadArchivedEntity(ctx context.Context, container, table, pk, rk string) (*codec.Entity, error) {
	name := EntityBlobName(table, pk, rk)
	var body []byte
	err := retry.Do(ctx, a.opts.Retry, retry.Op{Name: "download blob", Resource: container + "/" + name}, func(ctx context.Context, _ int) error {
		resp, err := a.blobs().DownloadStream(ctx, container, name, nil)
		if err != nil {
			return errs.Wrap(err, "download blob", container, pk, rk)
		}
		defer resp.Body.Close()
		body, err = io.ReadAll(resp.Body)
		return errs.Wrap(err, "download blob", container, pk, rk)
	})
	if err != nil {
		return nil, err
	}
	return codec.DecodeEntity(body)
}
