package consistency

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"maps"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/internal/errs"
	"github.com/tablepatterns/tablepatterns/patterns/internal/archive"
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
	if err := addressable(RangeKey{j.PartitionKey, j.RowKey}); err != nil {
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
		return checkBlobName(j.Source, j.PartitionKey, j.RowKey)
	}
	return nil
}

// checkBlobName refuses the keys of an entity of table whose blob name (EntityBlobName)
// is longer than MaxBlobNameBytes: ErrInvalidInput, the one refusal of valid keys by a
// blob target.
func checkBlobName(table, pk, rk string) error {
	if n := len(EntityBlobName(table, pk, rk)); n > MaxBlobNameBytes {
		return errs.TooLarge("target blob name", "the entity's blob name is too long", n, MaxBlobNameBytes)
	}
	return nil
}

// EntityBlobName is the name of the blob an entity is archived to:
// <table>/<PartitionKey>/<RowKey>.json, one partition per virtual folder. The table name
// is in lower case (table names are case-insensitive: every spelling of one table names
// one blob). Each key is escaped byte by byte: ASCII letters, digits, '-', '_' and '~'
// are kept, every other byte (the '.' included) becomes %XX. So no key can produce a
// segment of its own choosing ("." or "..", an empty segment, a '/', a trailing dot): a
// name has exactly three segments, and the escaping is reversible (two key pairs never
// share a name). Every valid key is accepted; Validate refuses only names over
// MaxBlobNameBytes.
func EntityBlobName(table, pk, rk string) string {
	return tableFolder(table) + "/" + archive.EscapeSegment(pk) + "/" + archive.EscapeSegment(rk) + ".json"
}

// The properties (table target) and metadata names (blob target) that record which
// version of the source entity an archive copy was made from: the source's ETag, and
// its Timestamp for readers.
const (
	// SourceETagProperty holds the ETag of the source entity an archive copy in a table
	// was made from.
	SourceETagProperty = "ArchivedSourceETag"
	// SourceTimestampProperty holds the Timestamp of that source entity.
	SourceTimestampProperty = "ArchivedSourceTimestamp"
	// SourceTableProperty holds the name of the table the source entity was archived from
	// (as the job spells it). A move refuses to replace a copy that records another table
	// (two source tables archived into one target table, with the same keys in both),
	// or a row that records none (not an archive copy).
	//
	// These three names record the first hop. An entity archived again from its archive
	// (a tiered archive: Hot -> Warm -> Cold) keeps them as its own properties, and the
	// next hop records its provenance under the same names followed by its number,
	// 2, 3, ... ("ArchivedSourceETag2"): the highest number a copy holds is the hop that
	// wrote it.
	SourceTableProperty = "ArchivedSourceTable"
	// blob metadata names (lowercase: listings lowercase them; GetProperties does not).
	metaSourceETag      = "sourceetag"
	metaSourceTimestamp = "sourcetimestamp"
)

// errRestart makes a move start over from fresh reads (a concurrent run or the
// application changed the target or the source between two steps).
var errRestart = errors.New("consistency: the source or the target changed during the move: starting over")

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
// step 3 becomes: their Before hooks, then one entity group transaction of the delete
// and their actions, within the shortest Within; a companion action that fails (its copy
// changed or went) starts the move over. Their After hooks run once it landed. See the
// package documentation ("Index-aware moves").
//
// A write whose outcome is unknown (repo.ErrOutcomeUnknown) starts the move over too.
// Restarts use the jittered backoff of Options.Retry. A delete the store refuses (404)
// while the entity is there at the version read starts the move over once; refused
// again at that version, the move fails with ErrInvalidInput (permanent), the copy in
// the target and the entity in the source. So does a companion's copy whose delete in
// the transaction answers 404 twice at one version while the companion finds it there.
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

// restartable reports the failures of a move's attempt that make it start over from
// fresh reads: errRestart, a conflict (412, 409), a write whose outcome is unknown.
func restartable(err error) bool {
	return errors.Is(err, errRestart) || errors.Is(err, errs.ErrPreconditionFailed) ||
		errors.Is(err, errs.ErrAlreadyExists) || errors.Is(err, errs.ErrOutcomeUnknown)
}

// copyState is what the target holds: whether a copy exists, its own ETag, and the
// source ETag and source table it records ("" when unknown). inTable marks a copy read
// from a target table, which must record its source table (a blob's name holds it).
type copyState struct {
	exists      bool
	inTable     bool
	etag        string
	sourceETag  string
	sourceTable string
}

// tableCopyState is the state of the archive copy e, read from target, a table. What it
// reads is untrusted: a recorded version that is not a string counts as unknown, which
// only means the copy is rewritten from the source; a recorded table that is not a
// string makes the row foreign.
// A copy without an ETag is refused: the replace of it would be unconditional
// (If-Match: *) and could overwrite a newer copy written since the read.
func tableCopyState(target string, e *codec.Entity) (copyState, error) {
	if e.ETag == "" {
		return copyState{}, fmt.Errorf("consistency: an archive copy in %s came back without an ETag", target)
	}
	s, t := copyProvenance(e.Properties)
	return copyState{exists: true, inTable: true, etag: e.ETag, sourceETag: s, sourceTable: t}, nil
}

// foreign reports a copy that records another source table than table (the copy of
// another table's entity with the same keys), or a row of a target table that records
// none (not an archive copy): a move of table must not replace either.
func (c copyState) foreign(table string) bool {
	if !c.exists || !c.inTable && c.sourceTable == "" {
		return false
	}
	return !strings.EqualFold(c.sourceTable, table)
}

// foreignCopy is the refusal of a move whose target holds another table's copy under the
// same keys: permanent (ErrInvalidInput), nothing written.
func foreignCopy(target, source, pk, rk, other string) error {
	if other == "" {
		return errs.Invalid("targetTable", "the row (%s, %s) in %s records no source table: it is not an archive copy of %s, and a move does not replace it", pk, rk, target, source)
	}
	return errs.Invalid("targetTable", "the copy of (%s, %s) in %s was archived from table %s, not from %s: archive each source table to its own target table", pk, rk, target, other, source)
}

// checkRemoval checks, before anything is written, that the delete of the entity at
// (pk, rk) and its companions' actions can commit in one entity group transaction
// (repo.CheckTransaction: count, one table as spelled, one partition, one action per row,
// size), and returns the transaction's actions, the delete first. A refusal is
// permanent (ErrInvalidInput): a forged or misconfigured companion answer must not leave
// the entity both archived and in the table.
func checkRemoval(table string, del repo.Action, pk, rk string, rs []Removal) ([]repo.Action, error) {
	acts := []repo.Action{del}
	for _, r := range rs {
		acts = append(acts, r.Actions...)
	}
	if len(acts) == 1 {
		return acts, nil
	}
	if err := repo.CheckTransaction(acts...); err != nil {
		return nil, fmt.Errorf("consistency: the delete of (%s, %s) of %s and its companions' actions (%d in all) cannot commit in one transaction: %w", pk, rk, table, len(acts), err)
	}
	return acts, nil
}

func (a *Archiver) moveOnce(ctx context.Context, src *repo.Table[codec.Entity], job ArchiveEntityJob) (Outcome, error) {
	tgt, err := a.readTarget(ctx, job)
	if err != nil {
		return "", err
	}
	if tgt.foreign(job.Source) {
		return "", foreignCopy(job.TargetTable, job.Source, job.PartitionKey, job.RowKey, tgt.sourceTable)
	}
	e, err := src.Get(ctx, job.PartitionKey, job.RowKey)
	if archive.IsTableNotFound(err) {
		// Not a missing entity: the table as addressed (Options.Companions' spelling, and
		// entity requests are case-sensitive on some servers) does not exist.
		return "", fmt.Errorf("consistency: the source table %s (addressed as %s) does not exist: %w", job.Source, src.Name(), err)
	}
	if errors.Is(err, errs.ErrNotFound) {
		if tgt.exists {
			return a.alreadyArchived(ctx, job)
		}
		// The target may have been written after our read of it: look again.
		if tgt, err = a.readTarget(ctx, job); err != nil {
			return "", err
		}
		if tgt.foreign(job.Source) {
			return "", foreignCopy(job.TargetTable, job.Source, job.PartitionKey, job.RowKey, tgt.sourceTable)
		}
		if tgt.exists {
			return a.alreadyArchived(ctx, job)
		}
		return OutcomeMissing, nil
	}
	if err != nil {
		return "", err
	}
	if e.ETag == "" {
		return "", fmt.Errorf("consistency: the source entity came back without an ETag")
	}
	if err := a.after("archive-entity", "read"); err != nil {
		return "", err
	}
	version := e.ETag
	// Ask the companions before writing anything: a refusal (an entity whose copies
	// cannot be found) leaves the move undone rather than half done.
	removals, err := a.removals(ctx, job.Source, &e)
	if err != nil {
		return "", err
	}
	acts, err := checkRemoval(job.Source, src.DeleteAction(job.PartitionKey, job.RowKey, &repo.DeleteOptions{ETag: version}), job.PartitionKey, job.RowKey, removals)
	if err != nil {
		return "", err
	}
	if tgt.sourceETag != version {
		// The source holds a newer version than the target's copy (see ArchiveEntity).
		if err := a.writeTarget(ctx, job, &e, tgt); err != nil {
			return "", err
		}
	}
	if err := a.after("archive-entity", "copied"); err != nil {
		return "", err
	}
	err = a.deleteSource(ctx, src, job, version, acts, removals)
	if errors.Is(err, errMoveStepFailed) {
		return "", err // gone, but the only step that removes its copies failed: run again
	}
	if errors.Is(err, errs.ErrNotFound) {
		// Gone: a concurrent run moved it, or the application deleted it. Moved only if
		// the target holds the very version that was there.
		now, err := a.readTarget(ctx, job)
		if err != nil {
			return "", err
		}
		if now.sourceETag != version {
			return "", errRestart
		}
		return OutcomeMoved, nil
	}
	if err != nil {
		return "", err // ErrPreconditionFailed, ErrOutcomeUnknown, errRestart: start over
	}
	return OutcomeMoved, a.after("archive-entity", "deleted")
}

// deleteSource deletes the source entity If-Match version. Without removals it is one
// delete, as it always was. With them it is one entity group transaction of acts (the
// delete and their actions, checked by checkRemoval), sent under their protocol (withCompanions: Before hooks and the
// transaction within the shortest Within, then After hooks). The delete's own failure
// comes back as it is (404: gone; 412: changed); a companion action that fails because
// its copy changed or went (412, 404, 409), and a deadline that passed, make the move
// start over from fresh reads (errRestart): the transaction is atomic, so nothing of it
// landed.
func (a *Archiver) deleteSource(ctx context.Context, src *repo.Table[codec.Entity], job ArchiveEntityJob, version string, acts []repo.Action, rs []Removal) error {
	send := func(ctx context.Context) error {
		if len(acts) == 1 {
			// The plain delete (no companion action): one request, not a transaction.
			err := src.Delete(ctx, job.PartitionKey, job.RowKey, &repo.DeleteOptions{ETag: version})
			return confirmGone(ctx, src, job.PartitionKey, job.RowKey, version, err)
		}
		_, err := repo.Submit(ctx, acts...)
		var ae *repo.ActionError
		if err != nil && !errors.Is(err, errs.ErrOutcomeUnknown) && errors.As(err, &ae) && ae.Index > 0 &&
			(errors.Is(err, errs.ErrPreconditionFailed) || errors.Is(err, errs.ErrNotFound) || errors.Is(err, errs.ErrAlreadyExists)) {
			return &companionRefused{action: ae.Index, status: ae.StatusCode, code: ae.Code, row: ae.RowKey, version: version}
		}
		if errors.Is(err, errs.ErrOutcomeUnknown) {
			return err
		}
		return confirmGone(ctx, src, job.PartitionKey, job.RowKey, version, err)
	}
	if len(rs) == 0 {
		return send(ctx) // acts is the delete alone (checkRemoval)
	}
	es := []removing{{pk: job.PartitionKey, rk: job.RowKey, rs: rs}}
	return a.withCompanions(ctx, "archive-entity", job.Source, es, send)
}

// confirmGone looks at the source when the delete of (pk, rk) answered 404 (err), before
// the move takes the 404 for "gone" (a move reports moved, companions run their After
// hooks): a store can answer 404 for an entity that is there (Azurite, for a delete in a
// $batch of a key with U+2028 or U+2029, addresses another row). One Get, on that rare
// path only: the entity still there makes the move start over (an errRestart, a
// *refusedDelete when it is there at version, the one the delete was conditioned on:
// nothing of the transaction landed); gone, err comes back as it is. Other errors pass
// unchanged.
func confirmGone(ctx context.Context, src *repo.Table[codec.Entity], pk, rk, version string, err error) error {
	if !errors.Is(err, errs.ErrNotFound) || archive.IsTableNotFound(err) {
		return err
	}
	switch etag, there, gerr := stillThere(ctx, src, pk, rk); {
	case gerr != nil:
		return gerr
	case there && etag == version:
		return &refusedDelete{etag: etag}
	case there:
		return fmt.Errorf("%w: the delete answered 404 while another version of the entity is there", errRestart)
	}
	return err
}

// stillThere reads the source entity (pk, rk) again after the store refused its delete,
// the one check both moves make before they take a refusal for "gone": its ETag and
// true when it is there, false when it is gone (404), or the read's error.
func stillThere(ctx context.Context, src *repo.Table[codec.Entity], pk, rk string) (etag string, there bool, err error) {
	got, err := src.Get(ctx, pk, rk)
	switch {
	case err == nil:
		return got.ETag, true, nil
	case errors.Is(err, errs.ErrNotFound):
		return "", false, nil
	}
	return "", false, err
}

// archiveCopy is the archive copy of e: its keys and properties and, for a copy in a
// table (inTable), the source table and version it was made from, under the names of
// the move's hop (setProvenance: SourceTableProperty, SourceETagProperty,
// SourceTimestampProperty for a first archive; e's own provenance, from an earlier
// archive, is kept as it is). A blob copy records the version in its metadata instead
// (its name holds the table).
func archiveCopy(e *codec.Entity, source string, inTable bool) *codec.Entity {
	cp := &codec.Entity{PartitionKey: e.PartitionKey, RowKey: e.RowKey, Properties: make(map[string]any, len(e.Properties)+3)}
	maps.Copy(cp.Properties, e.Properties)
	if inTable {
		setProvenance(cp, e, source)
	}
	return cp
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

// uploadCopy uploads body, the encoded archive copy of e, to the blob EntityBlobName
// names, conditionally on the target state read before the source: If-None-Match * if
// there was none, If-Match its ETag otherwise (a conflict makes the move start over). It
// creates a missing container.
func (a *Archiver) uploadCopy(ctx context.Context, job ArchiveEntityJob, e *codec.Entity, body []byte, tgt copyState) error {
	name := EntityBlobName(job.Source, job.PartitionKey, job.RowKey)
	meta := map[string]*string{metaSourceETag: ptrTo(hex.EncodeToString([]byte(e.ETag)))}
	if !e.Timestamp.IsZero() {
		meta[metaSourceTimestamp] = ptrTo(e.Timestamp.UTC().Format(time.RFC3339Nano))
	}
	opts := &azblob.UploadBufferOptions{Metadata: meta, AccessConditions: &blob.AccessConditions{ModifiedAccessConditions: &blob.ModifiedAccessConditions{}}}
	if tgt.exists {
		et := azcore.ETag(tgt.etag)
		opts.AccessConditions.ModifiedAccessConditions.IfMatch = &et
	} else {
		any := azcore.ETagAny
		opts.AccessConditions.ModifiedAccessConditions.IfNoneMatch = &any
	}
	upload := func() error {
		return retry.Do(ctx, a.opts.Retry, retry.Op{Name: "upload blob", Resource: job.TargetContainer}, func(ctx context.Context, attempt int) error {
			_, err := a.blobs().UploadBuffer(ctx, job.TargetContainer, name, body, opts)
			err = blobErr(err, "upload blob", job.TargetContainer, job.PartitionKey, job.RowKey)
			if attempt > 1 && (errors.Is(err, errs.ErrAlreadyExists) || errors.Is(err, errs.ErrPreconditionFailed)) {
				// An earlier attempt may have landed: re-read and re-decide.
				return fmt.Errorf("%w: %w", errs.ErrOutcomeUnknown, err)
			}
			return err
		})
	}
	err := upload()
	if archive.IsContainerNotFound(err) {
		if err = a.createContainer(ctx, job.TargetContainer); err == nil {
			err = upload()
		}
	}
	return err
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

// blobState reads the state of the blob copy name.
func (a *Archiver) blobState(ctx context.Context, job ArchiveEntityJob, name string) (copyState, error) {
	var st copyState
	err := retry.Do(ctx, a.opts.Retry, retry.Op{Name: "blob properties", Resource: job.TargetContainer}, func(ctx context.Context, _ int) error {
		resp, err := a.blobs().ServiceClient().NewContainerClient(job.TargetContainer).NewBlobClient(name).GetProperties(ctx, nil)
		if err != nil {
			return blobErr(err, "blob properties", job.TargetContainer, job.PartitionKey, job.RowKey)
		}
		st = copyState{exists: true}
		if resp.ETag != nil {
			st.etag = string(*resp.ETag)
		}
		for k, v := range resp.Metadata {
			if strings.EqualFold(k, metaSourceETag) && v != nil {
				if b, err := hex.DecodeString(*v); err == nil {
					st.sourceETag = string(b)
				}
			}
		}
		return nil
	})
	if errors.Is(err, errs.ErrNotFound) {
		return copyState{}, nil
	}
	return st, err
}

// blobErr wraps a blob error; a 404 on a blob or container is ErrNotFound, 409 and 412
// their sentinels (errs.Wrap maps the status codes).
func blobErr(err error, op, container, pk, rk string) error {
	return errs.Wrap(err, op, container, pk, rk)
}

func ptrTo[T any](v T) *T { return &v }

// ReadArchivedEntity reads an entity archived to a blob container: the blob
// EntityBlobName names.
//
// Errors: ErrInvalidInput (nothing sent), ErrNotFound, ErrTransient, *repo.Error, and
// codec's decode errors.
func (a *Archiver) ReadArchivedEntity(ctx context.Context, container, table, pk, rk string) (*codec.Entity, error) {
	if err := codec.ValidateContainerName(container); err != nil {
		return nil, err
	}
	if err := codec.ValidateTableName(table); err != nil {
		return nil, err
	}
	if err := codec.ValidateKey("PartitionKey", pk); err != nil {
		return nil, err
	}
	if err := codec.ValidateKey("RowKey", rk); err != nil {
		return nil, err
	}
	body, err := a.downloadEntity(ctx, container, EntityBlobName(table, pk, rk), pk, rk)
	if errors.Is(err, errs.ErrNotFound) {
		err = fmt.Errorf("consistency: no archived copy of (%s, %s) of %s in %s: %w", pk, rk, table, container, errs.ErrNotFound)
	}
	if err != nil {
		return nil, err
	}
	return codec.DecodeEntity(body)
}

func (a *Archiver) downloadEntity(ctx context.Context, container, name, pk, rk string) ([]byte, error) {
	var body []byte
	err := retry.Do(ctx, a.opts.Retry, retry.Op{Name: "download blob", Resource: container}, func(ctx context.Context, _ int) error {
		resp, err := a.blobs().DownloadStream(ctx, container, name, nil)
		if err != nil {
			return errs.Wrap(err, "download blob", container, pk, rk)
		}
		defer resp.Body.Close()
		body, err = io.ReadAll(io.LimitReader(resp.Body, 8<<20)) // an entity is at most 1 MiB
		return errs.Wrap(err, "download blob", container, pk, rk)
	})
	return body, err
}
