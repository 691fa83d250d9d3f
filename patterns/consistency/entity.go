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
	"github.com/tablepatterns/tablepatterns/patterns/internal/rangejob"
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
	if err := rangejob.Addressable(rangejob.Key{PartitionKey: j.PartitionKey, RowKey: j.RowKey}); err != nil {
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

// checkSourceRead checks the source read of moveOnce's step 2 (e, err) and reports
// whether the entity is gone (a 404 for the entity). A missing table is not a missing
// entity (the table as addressed, Options.Companions' spelling, does not exist), and an
// entity without an ETag cannot be deleted conditionally. Other errors come back as
// they are.
func (a *Archiver) checkSourceRead(src *repo.Table[codec.Entity], job ArchiveEntityJob, e *codec.Entity, err error) (gone bool, _ error) {
	if archive.IsTableNotFound(err) {
		return false, fmt.Errorf("consistency: the source table %s (addressed as %s) does not exist: %w", job.Source, src.Name(), err)
	}
	if errors.Is(err, errs.ErrNotFound) {
		return true, nil
	}
	if err != nil {
		return false, err
	}
	if e.ETag == "" {
		return false, fmt.Errorf("consistency: the source entity came back without an ETag")
	}
	return false, a.after("archive-entity", "read")
}

// sourceGone is the outcome of a move whose source entity is not there (step 2): already
// archived when the copy read in step 1, or one written since (the target is read
// again), exists; else missing.
func (a *Archiver) sourceGone(ctx context.Context, job ArchiveEntityJob, tgt copyState) (Outcome, error) {
	if tgt.exists {
		return a.alreadyArchived(ctx, job)
	}
	tgt, err := a.readTarget(ctx, job)
	if err != nil {
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

// deletedMeanwhile is the outcome of a delete (step 4) that found the source gone (a
// concurrent run moved it, or the application deleted it): moved only if the target
// holds the very version that was there, else the move starts over.
func (a *Archiver) deletedMeanwhile(ctx context.Context, job ArchiveEntityJob, version string) (Outcome, error) {
	now, err := a.readTarget(ctx, job)
	if err != nil {
		return "", err
	}
	if now.sourceETag != version {
		return "", errRestart
	}
	return OutcomeMoved, nil
}

// sendDelete sends del, the delete of step 4, as one delete step of the companion
// protocol when there are removals (withCompanions: Before hooks and the transaction
// within the shortest Within, then After hooks). The delete's own failure comes back as
// it is (404: gone, once confirmGone found it so; 412: changed); a companion action that
// fails because its copy changed or went (412, 404, 409) is a *companionRefused, and a
// deadline that passed starts the move over: the transaction is atomic, so nothing of
// it landed.
func (a *Archiver) sendDelete(ctx context.Context, src *repo.Table[codec.Entity], job ArchiveEntityJob, version string, rs []Removal, del func(context.Context) error) error {
	if err := a.after("archive-entity", "copied"); err != nil {
		return err
	}
	send := func(ctx context.Context) error {
		err := del(ctx)
		if errors.Is(err, errs.ErrDeleteMisaddressed) {
			return misaddressedRefusal(err, version)
		}
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
	var err error
	if len(rs) == 0 {
		err = send(ctx)
	} else {
		err = a.withCompanions(ctx, "archive-entity", job.Source, []removing{{pk: job.PartitionKey, rk: job.RowKey, rs: rs}}, send)
	}
	if err != nil {
		return err
	}
	return a.after("archive-entity", "deleted")
}
