package tablearchive

// The export of a sealed table, the algorithm of hot/cold separation: scan the table
// into a data blob under a new generation's name, check it, create the generation's
// manifest (If-None-Match), then drop the table after the latest generation. ArchiveTable
// (table.go) runs it; the checks that harden it are in siblings (verifyExport,
// checkNoNewWrites, touchData).

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"go.uber.org/zap"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/internal/errs"
	"github.com/tablepatterns/tablepatterns/repo"
	"github.com/tablepatterns/tablepatterns/retry"
)

// exportGeneration runs steps 4 and 5 of ArchiveTable. It returns the manifest, the
// versions of the entities written since the export's start minus ClockSkew, and the
// data blob's ETag after its last touch. A data blob left by an export that fails after
// its upload is deleted (best effort; see SweepAbortedExports for the ones a crash
// leaves).
func (a *Archiver) exportGeneration(ctx context.Context, t *repo.Table[codec.Entity], job ArchiveTableJob, seal sealState) (Manifest, recentSet, azcore.ETag, error) {
	started := a.now().UTC()
	gen := newGeneration(started)
	x := exportState{since: started.Add(-a.opts.ClockSkew), recent: recentSet{}, seal: seal}
	// 1. Scan the table into a data blob under the new generation's name.
	m, uploaded, err := a.export(ctx, t, job, gen, &x)
	if err != nil {
		return Manifest{}, nil, "", err
	}
	m.ExportStarted = started.Format(time.RFC3339Nano)
	m.Sealed = seal.why
	written := false
	defer func() {
		if !written {
			a.dropAbortedData(job.Container, m.DataBlob)
		}
	}()
	// 2. Read the blob back against the manifest, and scan the table's keys and ETags
	// again: the same hash, or the table changed since the scan of step 1.
	etag, gens, checked, err := a.verifyExport(ctx, t, job, m, uploaded, seal)
	if err != nil {
		return Manifest{}, nil, "", err
	}
	// 3. Create the manifest (If-None-Match), ordered after every generation listed
	// before that check.
	key := nextKey(checked, gens)
	if key.After(a.keyLimit()) {
		return Manifest{}, nil, "", fmt.Errorf("tablearchive: table %s: CheckedAt %s would be later than the clock allows: not written", job.Table, key.Format(time.RFC3339Nano))
	}
	m.CheckedAt = key.Format(time.RFC3339Nano)
	// A new ETag and Last-Modified just before the manifest: a sweep that listed the
	// blob earlier cannot delete it any more (its delete is If-Match what it listed),
	// and one whose delete came first makes this fail: no manifest without data.
	if etag, err = a.touchData(ctx, job.Container, m.DataBlob, etag); err != nil {
		return Manifest{}, nil, "", err
	}
	written = true // from the first attempt on the manifest may exist: its data stays
	if err := a.writeManifest(ctx, job.Container, m); err != nil {
		return Manifest{}, nil, "", err
	}
	a.opts.Logger.Info("table exported", zap.String("table", job.Table), zap.String("generation", gen), zap.Int64("entities", m.Entities))
	return m, x.recent, etag, nil
}

// deleteAfter is step 6 of ArchiveTable: the table is deleted after m, whose data blobs
// refs were checked against it (with the ETags of that content), if nothing was written
// since checkFrom - ClockSkew but the versions in recent, m is the latest generation,
// and its data is unchanged. done is false when another generation became the latest,
// or the data changed, before the delete.
func (a *Archiver) deleteAfter(ctx context.Context, t *repo.Table[codec.Entity], job ArchiveTableJob, m Manifest, refs []dataRef, checkFrom time.Time, recent recentSet) (TableReport, bool, error) {
	if err := a.checkNoNewWrites(ctx, t, checkFrom, recent); err != nil {
		return TableReport{}, true, err
	}
	// The table is deleted after the latest generation only: restore (latest, or all
	// merged in order) must end with what the table held.
	gens, err := a.listGenerations(ctx, job.Container, job.Table)
	if err != nil {
		return TableReport{}, true, err
	}
	if len(gens) == 0 || gens[len(gens)-1].m != m {
		return TableReport{}, false, nil
	}
	// The data must still be there, unchanged since it was checked: touching it (If-Match)
	// also defeats a sweep that listed it earlier (its delete is If-Match what it listed).
	for _, r := range refs {
		if _, err := a.touchData(ctx, job.Container, r.name, r.etag); errors.Is(err, errs.ErrNotFound) {
			return TableReport{}, true, fmt.Errorf("tablearchive: table %s: a data blob of generation %s is gone after its check: table not deleted (a rerun exports it again): %w",
				job.Table, m.Generation, err)
		} else if errors.Is(err, errs.ErrPreconditionFailed) {
			a.opts.Logger.Warn("the data blob changed after its check: checking again", zap.String("table", job.Table), zap.String("generation", m.Generation))
			return TableReport{}, false, nil
		} else if err != nil {
			return TableReport{}, true, err
		}
	}
	// Drop the table: its rows now live in the generation.
	if err := t.DeleteTable(ctx); err != nil && !errors.Is(err, errs.ErrNotFound) {
		return TableReport{}, true, err
	}
	return TableReport{Outcome: OutcomeMoved, Manifest: m}, true, nil
}

// export streams every entity of t into the data blob of generation gen and returns the
// manifest. The blob is created with If-None-Match: *, so nothing is ever overwritten.
func (a *Archiver) export(ctx context.Context, t *repo.Table[codec.Entity], job ArchiveTableJob, gen string, x *exportState) (Manifest, azcore.ETag, error) {
	m := Manifest{Format: ManifestFormat, Table: job.Table, Generation: gen, DataBlob: DataBlobName(job.Table, gen)}
	etag, err := a.upload(ctx, t, repo.Query{FullMetadata: true}, job.Container, &m, x)
	if err != nil {
		return Manifest{}, "", err
	}
	return m, etag, nil
}

// upload streams the entities q selects from t into the data blob m.DataBlob (created
// with If-None-Match: *), filling m's counts, checksums, Versions and ExportedAt, and
// returns the blob's ETag.
func (a *Archiver) upload(ctx context.Context, t *repo.Table[codec.Entity], q repo.Query, container string, m *Manifest, x *exportState) (azcore.ETag, error) {
	x.versions = sha256.New()
	pr, pw := io.Pipe()
	written := make(chan error, 1)
	go func() {
		err := a.writeLines(ctx, t, q, pw, m, x)
		pw.CloseWithError(err)
		written <- err
	}()
	resp, err := a.blobs().UploadStream(ctx, container, m.DataBlob, pr, &azblob.UploadStreamOptions{
		AccessConditions: &blob.AccessConditions{ModifiedAccessConditions: &blob.ModifiedAccessConditions{IfNoneMatch: ptrTo(azcore.ETagAny)}},
	})
	if err != nil {
		pr.CloseWithError(err) // unblocks the writer if the upload stopped early
	}
	if werr := <-written; werr != nil {
		return "", werr
	}
	if err != nil {
		return "", errs.Wrap(err, "upload table export", container, "", "")
	}
	m.ExportedAt = a.now().UTC().Format("2006-01-02T15:04:05.0000000Z")
	m.Versions = hex.EncodeToString(x.versions.Sum(nil))
	var etag azcore.ETag
	if resp.ETag != nil {
		etag = *resp.ETag
	}
	return etag, nil
}

// writeManifest creates the manifest of m's generation with If-None-Match: *. A 409 on a
// retry after a lost response is success when the stored manifest is ours.
func (a *Archiver) writeManifest(ctx context.Context, container string, m Manifest) error {
	body, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	name := ManifestBlobName(m.Table, m.Generation)
	opts := &azblob.UploadBufferOptions{AccessConditions: &blob.AccessConditions{ModifiedAccessConditions: &blob.ModifiedAccessConditions{IfNoneMatch: ptrTo(azcore.ETagAny)}}}
	err = retry.Do(ctx, a.opts.Retry, retry.Op{Name: "upload manifest", Resource: container}, func(ctx context.Context, _ int) error {
		_, err := a.blobs().UploadBuffer(ctx, container, name, body, opts)
		return errs.Wrap(err, "upload manifest", container, "", "")
	})
	if errors.Is(err, errs.ErrAlreadyExists) {
		// Generation names are unique to one export: only our own earlier attempt can
		// have created it. Check that it holds what we wrote.
		stored, rerr := a.readManifest(ctx, container, m.Table, m.Generation)
		if rerr == nil && stored == m {
			return nil
		}
		return fmt.Errorf("tablearchive: manifest %s/%s exists and differs: %w", container, name, err)
	}
	return err
}
