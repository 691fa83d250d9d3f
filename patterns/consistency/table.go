package consistency

import (
	"bufio"
	"compress/gzip"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"go.uber.org/zap"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/internal/errs"
	"github.com/tablepatterns/tablepatterns/patterns/periodtable"
	"github.com/tablepatterns/tablepatterns/repo"
	"github.com/tablepatterns/tablepatterns/repo/filter"
	"github.com/tablepatterns/tablepatterns/retry"
)

// ManifestFormat names the layout of a table export, recorded in its manifest.
const ManifestFormat = "tablepatterns/table-export/v1"

// The errors that make a table job a permanent failure: the worker handlers move such a
// message to the poison queue at once (queueworker.Cancel) instead of retrying it.
var (
	// ErrNotSealed: the table may still be written (its period has not ended more than
	// the grace period ago, and the job does not declare it sealed). Nothing was sent.
	ErrNotSealed = errors.New("consistency: the table is not sealed (it may still be written)")
	// ErrTableChanged: the table was written during its export (an entity with a
	// Timestamp at or after the export began, or a different count): a writer exists
	// although the table was declared sealed. The table is not deleted.
	ErrTableChanged = errors.New("consistency: the table changed during its export")
	// ErrArchiveCorrupt: an export does not match its manifest, or a manifest is not one
	// this package writes. Nothing is written by a restore that meets it.
	ErrArchiveCorrupt = errors.New("consistency: archive does not match its manifest")
)

// ArchiveTableJob is the payload of an archive-table message: export Table to Container
// as a new generation, verify it, and delete the table unless KeepTable.
//
// Only sealed tables are archived, tables that can no longer be written: either a
// periodtable period table (PeriodPrefix and Period name its scheme) whose period ended
// more than Options.SealGrace + Options.ClockSkew ago, or a table the operator declares
// Sealed ("I guarantee that nothing writes this table any more"). Anything else is
// refused with ErrNotSealed before any request.
type ArchiveTableJob struct {
	Table     string `json:"table"`
	Container string `json:"container"`
	KeepTable bool   `json:"keepTable,omitempty"`
	// Sealed declares that no writer will write the table any more.
	Sealed bool `json:"sealed,omitempty"`
	// PeriodPrefix and Period (periodtable.ParsePeriod: "hourly", "daily", "weekly",
	// "monthly", "every 15m0s") name the periodtable scheme the table belongs to.
	PeriodPrefix string `json:"periodPrefix,omitempty"`
	Period       string `json:"period,omitempty"`
}

// Generation values of RestoreTableJob.Generation.
const (
	// GenerationLatest restores the latest generation (the default, "").
	GenerationLatest = ""
	// GenerationAll restores every generation, oldest first, so that a later copy of an
	// entity replaces an earlier one.
	GenerationAll = "all"
)

// RestoreTableJob is the payload of a restore-table message: write the export of Table
// in Container back into Target (defaults to Table).
type RestoreTableJob struct {
	Table     string `json:"table"`
	Container string `json:"container"`
	Target    string `json:"target,omitempty"`
	// Generation chooses the export: GenerationLatest (""), GenerationAll, or the name of
	// one generation (Manifest.Generation).
	Generation string `json:"generation,omitempty"`
}

// Manifest describes one export (one generation) of a table. It is created after the
// data blob is verified, with If-None-Match: *, so its presence means the export is
// complete and it is never replaced.
type Manifest struct {
	Format     string `json:"format"`
	Table      string `json:"table"`
	Generation string `json:"generation,omitempty"`
	Entities   int64  `json:"entities"`
	Partitions int64  `json:"partitions"`
	// Bytes and SHA256 are the size and checksum of the uncompressed JSON lines.
	Bytes  int64  `json:"bytes"`
	SHA256 string `json:"sha256"`
	// DataBlob is the name of the gzip JSON-lines blob in the same container; it must be
	// DataBlobName(Table, Generation).
	DataBlob string `json:"dataBlob"`
	// Versions is the SHA-256 of the (PartitionKey, RowKey, ETag) of every entity
	// exported, in key order: the exact version of the table the export holds. A table
	// whose versions hash to it again is unchanged.
	Versions string `json:"versions,omitempty"`
	// ExportStarted is when the export began (the archiver's clock).
	ExportStarted string `json:"exportStarted,omitempty"`
	ExportedAt    string `json:"exportedAt"`
	// Sealed says why the table was archivable: "period" or "operator".
	Sealed string `json:"sealed,omitempty"`
}

// TableReport is the result of a table job.
type TableReport struct {
	Outcome  Outcome
	Manifest Manifest
	// Generations are the generations a restore wrote, in order.
	Generations []string
}

// DataBlobName is the blob that holds one generation of a table's export: gzip JSON
// lines, one entity each. The empty generation is the layout of earlier versions.
func DataBlobName(table, generation string) string {
	if generation == "" {
		return table + "/entities.jsonl.gz"
	}
	return table + "/" + generation + "/entities.jsonl.gz"
}

// ManifestBlobName is the blob that holds the Manifest of one generation.
func ManifestBlobName(table, generation string) string {
	if generation == "" {
		return table + "/manifest.json"
	}
	return table + "/" + generation + "/manifest.json"
}

// generationLayout is the time part of a generation name; names sort as their exports
// began (then by their random suffix).
const generationLayout = "20060102T150405.0000000Z"

// newGeneration names a new export that begins at t: unique (a random suffix), and
// sortable by time.
func newGeneration(t time.Time) string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return t.UTC().Format(generationLayout) + "-" + hex.EncodeToString(b[:])
}

// validGeneration reports whether g is a generation name this package produces (names
// read from a listing or a job are untrusted).
func validGeneration(g string) bool {
	ts, suffix, ok := strings.Cut(g, "-")
	if !ok || len(suffix) != 8 || len(ts) != len(generationLayout) {
		return false
	}
	if _, err := hex.DecodeString(suffix); err != nil || strings.ToLower(suffix) != suffix {
		return false
	}
	_, err := time.Parse(generationLayout, ts)
	return err == nil
}

// Validate checks the job without sending anything (not whether the table is sealed now:
// see Archiver.CheckSealed).
//
// Errors: ErrInvalidInput naming the field; ErrNotSealed (with ErrInvalidInput) when
// the job names neither a period scheme nor Sealed.
func (j ArchiveTableJob) Validate() error {
	if err := codec.ValidateTableName(j.Table); err != nil {
		return err
	}
	if err := codec.ValidateContainerName(j.Container); err != nil {
		return err
	}
	if j.Sealed {
		if j.PeriodPrefix != "" || j.Period != "" {
			return errs.Invalid("sealed", "is given with a period scheme: choose one")
		}
		return nil
	}
	if j.PeriodPrefix == "" && j.Period == "" {
		return fmt.Errorf("%w: %w", ErrNotSealed, errs.Invalid("table",
			"%s is neither a periodtable period table (periodPrefix and period) nor declared sealed (sealed: you guarantee no writer)", j.Table))
	}
	_, err := j.period()
	return err
}

// period returns the periodtable table the job names.
func (j ArchiveTableJob) period() (periodtable.Table, error) {
	p, err := periodtable.ParsePeriod(j.Period)
	if err != nil {
		return periodtable.Table{}, err
	}
	scheme := periodtable.Scheme{Prefix: j.PeriodPrefix, Period: p}
	if err := scheme.Validate(); err != nil {
		return periodtable.Table{}, err
	}
	pt, ok := scheme.Parse(j.Table)
	if !ok {
		return periodtable.Table{}, errs.Invalid("table", "%s is not a table of the scheme %s%s", j.Table, j.PeriodPrefix, p)
	}
	return pt, nil
}

// CheckSealed reports whether the job's table is sealed now, by the archiver's clock
// (see ArchiveTableJob), without sending anything: a CLI checks it before it enqueues.
//
// Errors: ErrInvalidInput, and ErrNotSealed (which also matches ErrInvalidInput).
func (a *Archiver) CheckSealed(j ArchiveTableJob) error {
	if err := j.Validate(); err != nil {
		return err
	}
	_, err := a.checkSealed(j)
	return err
}

// checkSealed refuses a table that may still be written, by the archiver's clock.
func (a *Archiver) checkSealed(j ArchiveTableJob) (string, error) {
	if j.Sealed {
		return "operator", nil
	}
	pt, err := j.period()
	if err != nil {
		return "", err
	}
	from := pt.End.Add(a.opts.SealGrace + a.opts.ClockSkew)
	if now().Before(from) {
		return "", fmt.Errorf("%w: %w", ErrNotSealed, errs.Invalid("table",
			"the period of %s ends at %s; it is archived from %s on (grace %v, clock skew %v)",
			j.Table, pt.End.UTC().Format(time.RFC3339), from.UTC().Format(time.RFC3339), a.opts.SealGrace, a.opts.ClockSkew))
	}
	return "period", nil
}

// Validate checks the job without sending anything.
//
// Errors: ErrInvalidInput naming the field.
func (j RestoreTableJob) Validate() error {
	if err := codec.ValidateTableName(j.Table); err != nil {
		return err
	}
	if j.Target != "" {
		if err := codec.ValidateTableName(j.Target); err != nil {
			return err
		}
	}
	if j.Generation != GenerationLatest && j.Generation != GenerationAll && !validGeneration(j.Generation) {
		return errs.Invalid("generation", "%q: want empty (latest), %q, or a generation name", j.Generation, GenerationAll)
	}
	return codec.ValidateContainerName(j.Container)
}

// ArchiveTable exports a sealed table (see ArchiveTableJob) as a new, immutable
// generation, checks that it did not change, and deletes it (unless KeepTable):
//
//  1. refuse a table that is not sealed (ErrNotSealed, nothing sent);
//  2. if the table is gone: OutcomeAlreadyArchived when a generation exists, else
//     OutcomeMissing;
//  3. if the latest generation already holds the table exactly as it is (a run that
//     stopped after its manifest: the versions of the table hash to its Versions), go
//     to 6 (that scan is the last check);
//  4. stream every entity into a data blob under a new generation's name, hashing the
//     (PartitionKey, RowKey, ETag) of each and keeping the ETags of the entities whose
//     Timestamp is at or after the export's start minus ClockSkew; read the blob back
//     and check it;
//  5. scan the table's keys and ETags again: the same hash (any insert, update or
//     delete since the export read it changes it); then create the manifest with
//     If-None-Match: *;
//  6. immediately before DeleteTable, query the entities with a Timestamp at or after
//     the export's start minus ClockSkew: each must be one the export holds, with the
//     same ETag.
//
// A changed table is ErrTableChanged: nothing is deleted, and the generation written
// (if any) stays, complete and correct for what it holds. A table re-created after its
// archive is archived as a new generation beside the earlier ones, never over it.
// The remaining window: an insert or update accepted between the query of 6 (the scan
// of 3 on a rerun) and the delete is lost with the table, as is one whose Timestamp is
// more than ClockSkew behind the archiver's clock; a delete during the export leaves
// the deleted entity in the archive. Sealed tables have no writers, so none is expected.
//
// Errors: ErrInvalidInput and ErrNotSealed (nothing sent), ErrTableChanged,
// ErrArchiveCorrupt, ErrTransient, *repo.Error.
func (a *Archiver) ArchiveTable(ctx context.Context, job ArchiveTableJob) (TableReport, error) {
	if err := job.Validate(); err != nil {
		return TableReport{}, err
	}
	if err := a.allowed(job.Table, "", job.Container); err != nil {
		return TableReport{}, err
	}
	why, err := a.checkSealed(job)
	if err != nil {
		return TableReport{}, err
	}
	t, err := a.table(job.Table)
	if err != nil {
		return TableReport{}, err
	}
	exists, err := t.Exists(ctx)
	if err != nil {
		return TableReport{}, err
	}
	latest, err := a.latestManifest(ctx, job.Container, job.Table)
	if err != nil && !errors.Is(err, errs.ErrNotFound) {
		return TableReport{}, err
	}
	haveLatest := err == nil
	if !exists {
		if !haveLatest {
			return TableReport{Outcome: OutcomeMissing}, nil
		}
		return TableReport{Outcome: OutcomeAlreadyArchived, Manifest: latest}, nil
	}
	m, fresh := latest, false
	// The last check before the delete looks for writes since checkFrom (less ClockSkew):
	// each must be one the archive holds (recent). On a rerun whose latest generation
	// already holds the table, that is the start of the rescan that proved it: the rescan
	// alone would leave a window as long as the scan.
	var recent map[string]string
	var checkFrom time.Time
	held := false
	if haveLatest && latest.Versions != "" {
		checkFrom = now().UTC()
		recent = map[string]string{}
		held = a.checkVersions(ctx, t, latest, checkFrom.Add(-a.opts.ClockSkew), recent) == nil
	}
	if !held {
		if err := a.createContainer(ctx, job.Container); err != nil {
			return TableReport{}, err
		}
		if m, recent, err = a.exportGeneration(ctx, t, job, why); err != nil {
			return TableReport{}, err
		}
		checkFrom, _ = time.Parse(time.RFC3339Nano, m.ExportStarted)
		fresh = true
	}
	if job.KeepTable {
		out := OutcomeMoved
		if !fresh {
			out = OutcomeAlreadyArchived
		}
		return TableReport{Outcome: out, Manifest: m}, nil
	}
	if err := a.after("archive-table", "before-delete"); err != nil {
		return TableReport{}, err
	}
	if err := a.checkNoNewWrites(ctx, t, checkFrom, recent); err != nil {
		return TableReport{}, err
	}
	if err := t.DeleteTable(ctx); err != nil && !errors.Is(err, errs.ErrNotFound) {
		return TableReport{}, err
	}
	a.opts.Logger.Info("table archived", zap.String("table", job.Table), zap.String("container", job.Container),
		zap.String("generation", m.Generation), zap.Int64("entities", m.Entities), zap.Int64("bytes", m.Bytes), zap.Bool("tableDeleted", true))
	return TableReport{Outcome: OutcomeMoved, Manifest: m}, nil
}

// exportGeneration runs steps 4 and 5 of ArchiveTable. It returns the manifest and the
// ETags of the entities written since the export's start minus ClockSkew.
func (a *Archiver) exportGeneration(ctx context.Context, t *repo.Table[codec.Entity], job ArchiveTableJob, why string) (Manifest, map[string]string, error) {
	started := now().UTC()
	gen := newGeneration(started)
	x := exportState{since: started.Add(-a.opts.ClockSkew), recent: map[string]string{}}
	m, err := a.export(ctx, t, job, gen, &x)
	if err != nil {
		return Manifest{}, nil, err
	}
	m.ExportStarted = started.Format(time.RFC3339Nano)
	m.Sealed = why
	if err := a.after("archive-table", "exported"); err != nil {
		return Manifest{}, nil, err
	}
	if _, err := a.verifyData(ctx, job.Container, m); err != nil {
		return Manifest{}, nil, err
	}
	if err := a.checkVersions(ctx, t, m, time.Time{}, nil); err != nil {
		return Manifest{}, nil, err
	}
	if err := a.after("archive-table", "checked"); err != nil {
		return Manifest{}, nil, err
	}
	if err := a.writeManifest(ctx, job.Container, m); err != nil {
		return Manifest{}, nil, err
	}
	if err := a.after("archive-table", "manifest"); err != nil {
		return Manifest{}, nil, err
	}
	a.opts.Logger.Info("table exported", zap.String("table", job.Table), zap.String("generation", gen), zap.Int64("entities", m.Entities))
	return m, x.recent, nil
}

// exportState is what an export remembers besides the manifest.
type exportState struct {
	versions hash.Hash
	since    time.Time
	recent   map[string]string // PartitionKey+"\x00"+RowKey -> ETag, Timestamp >= since
}

// addVersion adds one entity's version to a versions hash. Keys hold no U+0000, so the
// encoding is unambiguous.
func addVersion(h hash.Hash, pk, rk, etag string) {
	_, _ = io.WriteString(h, pk)
	_, _ = h.Write([]byte{0})
	_, _ = io.WriteString(h, rk)
	_, _ = h.Write([]byte{0})
	_, _ = io.WriteString(h, etag)
	_, _ = h.Write([]byte{'\n'})
}

// checkVersions scans t's keys and ETags and compares them with m.Versions. With recent
// non-nil it also records the ETags of the entities whose Timestamp is at or after since,
// for checkNoNewWrites.
func (a *Archiver) checkVersions(ctx context.Context, t *repo.Table[codec.Entity], m Manifest, since time.Time, recent map[string]string) error {
	h := sha256.New()
	var n int64
	for e, err := range t.Query(ctx, repo.Query{Select: []string{"PartitionKey", "RowKey", "Timestamp"}}) {
		if err != nil {
			return err
		}
		addVersion(h, e.PartitionKey, e.RowKey, e.ETag)
		if recent != nil && !e.Timestamp.Before(since) {
			recent[e.PartitionKey+"\x00"+e.RowKey] = e.ETag
		}
		n++
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != m.Versions {
		return fmt.Errorf("%w: table %s (%d entities) is not the version its export %s read (%d entities): not deleted, and not retried: something writes this table although it was declared sealed",
			ErrTableChanged, m.Table, n, m.Generation, m.Entities)
	}
	return nil
}

// checkNoNewWrites queries the entities with a Timestamp at or after started - ClockSkew:
// each must be in recent (exported) with the same ETag.
func (a *Archiver) checkNoNewWrites(ctx context.Context, t *repo.Table[codec.Entity], started time.Time, recent map[string]string) error {
	if started.IsZero() {
		return fmt.Errorf("%w: no export start recorded", ErrArchiveCorrupt)
	}
	since := started.Add(-a.opts.ClockSkew)
	for e, err := range t.Query(ctx, repo.Query{Filter: filter.Ge("Timestamp", since), Select: []string{"PartitionKey", "RowKey", "Timestamp"}}) {
		if err != nil {
			return err
		}
		if etag, ok := recent[e.PartitionKey+"\x00"+e.RowKey]; ok && etag == e.ETag {
			continue
		}
		return fmt.Errorf("%w: table %s: entity (%s, %s) was written at %s, after the export began (%s, clock skew %v): not deleted, and not retried: something writes this table although it was declared sealed",
			ErrTableChanged, t.Name(), e.PartitionKey, e.RowKey, e.Timestamp.UTC().Format(time.RFC3339Nano), started.UTC().Format(time.RFC3339Nano), a.opts.ClockSkew)
	}
	return nil
}

// export streams every entity of t into the data blob of generation gen and returns the
// manifest. The blob is created with If-None-Match: *, so nothing is ever overwritten.
func (a *Archiver) export(ctx context.Context, t *repo.Table[codec.Entity], job ArchiveTableJob, gen string, x *exportState) (Manifest, error) {
	m := Manifest{Format: ManifestFormat, Table: job.Table, Generation: gen, DataBlob: DataBlobName(job.Table, gen)}
	x.versions = sha256.New()
	pr, pw := io.Pipe()
	written := make(chan error, 1)
	go func() {
		err := a.writeLines(ctx, t, pw, &m, x)
		pw.CloseWithError(err)
		written <- err
	}()
	_, err := a.blobs().UploadStream(ctx, job.Container, m.DataBlob, pr, &azblob.UploadStreamOptions{
		AccessConditions: &blob.AccessConditions{ModifiedAccessConditions: &blob.ModifiedAccessConditions{IfNoneMatch: ptrTo(azcore.ETagAny)}},
	})
	if err != nil {
		pr.CloseWithError(err) // unblocks the writer if the upload stopped early
	}
	if werr := <-written; werr != nil {
		return Manifest{}, werr
	}
	if err != nil {
		return Manifest{}, errs.Wrap(err, "upload table export", job.Container, "", "")
	}
	m.ExportedAt = now().UTC().Format("2006-01-02T15:04:05.0000000Z")
	m.Versions = hex.EncodeToString(x.versions.Sum(nil))
	return m, nil
}

// writeLines writes t's entities as gzip JSON lines to w, filling m's counts and checksum.
// The upload reads from the other end of the pipe, so m is complete when the upload ends.
func (a *Archiver) writeLines(ctx context.Context, t *repo.Table[codec.Entity], w io.Writer, m *Manifest, x *exportState) error {
	zw := gzip.NewWriter(w)
	sum := sha256.New()
	out := io.MultiWriter(zw, sum)
	lastPK := ""
	pr := a.startProgress(KindArchiveTable, m.Table, m.Generation, 0)
	for e, err := range t.Query(ctx, repo.Query{FullMetadata: true}) {
		if err != nil {
			return err
		}
		if e.ETag == "" {
			return fmt.Errorf("consistency: table %s returned an entity without an ETag", t.Name())
		}
		addVersion(x.versions, e.PartitionKey, e.RowKey, e.ETag)
		if !e.Timestamp.Before(x.since) {
			x.recent[e.PartitionKey+"\x00"+e.RowKey] = e.ETag
		}
		e.ETag = ""
		line, err := codec.EncodeEntity(&e)
		if err != nil {
			return err
		}
		line = append(line, '\n')
		if _, err := out.Write(line); err != nil {
			return err
		}
		m.Entities++
		m.Bytes += int64(len(line))
		if m.Entities == 1 || e.PartitionKey != lastPK {
			m.Partitions++
			lastPK = e.PartitionKey
		}
		if m.Entities%int64(a.opts.ProgressEvery) == 0 {
			a.opts.Logger.Info("exporting table", zap.String("table", m.Table), zap.Int64("entities", m.Entities))
		}
		pr.report(m.Entities, false)
	}
	pr.report(m.Entities, true)
	if err := zw.Close(); err != nil {
		return err
	}
	m.SHA256 = hex.EncodeToString(sum.Sum(nil))
	return nil
}

// readLines streams the data blob of m (If-Match etag when etag is set), checks it
// against m, and calls fn for each entity (fn may be nil to only verify). It returns the
// data blob's ETag. A blob that does not match m is ErrArchiveCorrupt.
func (a *Archiver) readLines(ctx context.Context, container string, m Manifest, etag azcore.ETag, fn func(*codec.Entity) error) (azcore.ETag, error) {
	var opts *azblob.DownloadStreamOptions
	if etag != "" {
		opts = &azblob.DownloadStreamOptions{AccessConditions: &blob.AccessConditions{ModifiedAccessConditions: &blob.ModifiedAccessConditions{IfMatch: &etag}}}
	}
	resp, err := a.blobs().DownloadStream(ctx, container, m.DataBlob, opts)
	if err != nil {
		err = errs.Wrap(err, "download table export", container, "", "")
		if etag != "" && errors.Is(err, errs.ErrPreconditionFailed) {
			return "", fmt.Errorf("%w: %s/%s changed after it was verified: %w", ErrArchiveCorrupt, container, m.DataBlob, err)
		}
		return "", err
	}
	defer resp.Body.Close()
	var got azcore.ETag
	if resp.ETag != nil {
		got = *resp.ETag
	}
	zr, err := gzip.NewReader(resp.Body)
	if err != nil {
		return "", fmt.Errorf("%w: export %s/%s is not gzip: %v", ErrArchiveCorrupt, container, m.DataBlob, err)
	}
	var sum hash.Hash = sha256.New()
	sc := bufio.NewScanner(io.TeeReader(zr, sum))
	sc.Buffer(make([]byte, 0, 64<<10), 4<<20) // an entity is at most 1 MiB, its JSON a few
	var n, size int64
	for sc.Scan() {
		n++
		size += int64(len(sc.Bytes())) + 1
		if n > m.Entities || size > m.Bytes {
			break // longer than its manifest: corrupt, and fn must not see more
		}
		if fn == nil {
			continue
		}
		e, err := codec.DecodeEntity(sc.Bytes())
		if err != nil {
			return "", fmt.Errorf("%w: export %s/%s line %d: %v", ErrArchiveCorrupt, container, m.DataBlob, n, err)
		}
		if err := fn(e); err != nil {
			return "", err
		}
	}
	if err := sc.Err(); err != nil {
		if ctx.Err() != nil {
			return "", ctx.Err()
		}
		return "", fmt.Errorf("%w: reading export %s/%s: %v", ErrArchiveCorrupt, container, m.DataBlob, err)
	}
	if got := hex.EncodeToString(sum.Sum(nil)); n != m.Entities || size != m.Bytes || got != m.SHA256 {
		return "", fmt.Errorf("%w: export %s/%s: %d entities, %d bytes, sha256 %s; the manifest says %d, %d, %s",
			ErrArchiveCorrupt, container, m.DataBlob, n, size, got, m.Entities, m.Bytes, m.SHA256)
	}
	return got, nil
}

// verifyData reads m's data blob whole and checks it against m; it returns its ETag.
func (a *Archiver) verifyData(ctx context.Context, container string, m Manifest) (azcore.ETag, error) {
	return a.readLines(ctx, container, m, "", nil)
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
		return fmt.Errorf("consistency: manifest %s/%s exists and differs: %w", container, name, err)
	}
	return err
}

// Generations lists the complete exports (generations with a manifest) of table in
// container, oldest first. An export of an earlier version of this package (one
// manifest per table) is the generation "" and comes first. Blob names that are not
// ones this package writes are ignored.
//
// Errors: ErrInvalidInput (nothing sent), ErrTransient, *repo.Error (ErrNotFound when the
// container does not exist).
func (a *Archiver) Generations(ctx context.Context, container, table string) ([]string, error) {
	if err := codec.ValidateTableName(table); err != nil {
		return nil, err
	}
	if err := codec.ValidateContainerName(container); err != nil {
		return nil, err
	}
	prefix := table + "/"
	var gens []string
	legacy := false
	pager := a.blobs().NewListBlobsFlatPager(container, &azblob.ListBlobsFlatOptions{Prefix: &prefix})
	for pager.More() {
		var page azblob.ListBlobsFlatResponse
		err := retry.Do(ctx, a.opts.Retry, retry.Op{Name: "list blobs", Resource: container}, func(ctx context.Context, _ int) error {
			var err error
			page, err = pager.NextPage(ctx)
			return errs.Wrap(err, "list blobs", container, "", "")
		})
		if err != nil {
			return nil, err
		}
		if page.Segment == nil {
			continue
		}
		for _, b := range page.Segment.BlobItems {
			if b == nil || b.Name == nil {
				continue
			}
			rest := strings.TrimPrefix(*b.Name, prefix)
			if rest == "manifest.json" {
				legacy = true
				continue
			}
			if g, ok := strings.CutSuffix(rest, "/manifest.json"); ok && validGeneration(g) {
				gens = append(gens, g)
			}
		}
	}
	sort.Strings(gens)
	if legacy {
		gens = append([]string{""}, gens...)
	}
	return gens, nil
}

// ReadManifest reads the manifest of the latest generation of table's export in
// container.
//
// Errors: ErrNotFound when there is no complete export, ErrArchiveCorrupt for a manifest
// this package did not write, ErrTransient, *repo.Error.
func (a *Archiver) ReadManifest(ctx context.Context, container, table string) (Manifest, error) {
	return a.latestManifest(ctx, container, table)
}

func (a *Archiver) latestManifest(ctx context.Context, container, table string) (Manifest, error) {
	gens, err := a.Generations(ctx, container, table)
	if err != nil {
		return Manifest{}, err
	}
	if len(gens) == 0 {
		return Manifest{}, fmt.Errorf("consistency: no export of %s in %s: %w", table, container, errs.ErrNotFound)
	}
	return a.readManifest(ctx, container, table, gens[len(gens)-1])
}

// readManifest reads and validates one generation's manifest: it is untrusted input, and
// its DataBlob must be the name this package gives that generation's data.
func (a *Archiver) readManifest(ctx context.Context, container, table, gen string) (Manifest, error) {
	var m Manifest
	name := ManifestBlobName(table, gen)
	err := retry.Do(ctx, a.opts.Retry, retry.Op{Name: "download manifest", Resource: container}, func(ctx context.Context, _ int) error {
		resp, err := a.blobs().DownloadStream(ctx, container, name, nil)
		if err != nil {
			return errs.Wrap(err, "download manifest", container, "", "")
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		if err != nil {
			return errs.Wrap(err, "download manifest", container, "", "")
		}
		m = Manifest{}
		if err := json.Unmarshal(body, &m); err != nil {
			return fmt.Errorf("%w: %s/%s: %v", ErrArchiveCorrupt, container, name, err)
		}
		return nil
	})
	if err != nil {
		return Manifest{}, err
	}
	if m.Format != ManifestFormat || m.Table != table || m.Generation != gen || m.DataBlob != DataBlobName(table, gen) ||
		m.Entities < 0 || m.Bytes < 0 || len(m.SHA256) != 64 {
		return Manifest{}, fmt.Errorf("%w: %s/%s is not a %s manifest of generation %q of table %s", ErrArchiveCorrupt, container, name, ManifestFormat, gen, table)
	}
	return m, nil
}

// restoreChunk is how many entities RestoreTable writes per BulkWrite.
const restoreChunk = 2000

// RestoreTable writes archived generations of a table back: the latest one by default,
// a chosen one, or all of them oldest first (a later copy of an entity replaces an earlier
// one). It verifies every chosen generation whole against its manifest before it writes
// anything (ErrArchiveCorrupt, a permanent failure: nothing written), then creates the
// target table (waiting out TableBeingDeleted) and writes with idempotent upserts,
// reading each data blob If-Match the ETag it verified. A rerun after a stop writes the
// same entities again. OutcomeMissing when there is no export.
//
// Errors: ErrInvalidInput (nothing sent), ErrArchiveCorrupt, ErrTransient, *repo.Error.
func (a *Archiver) RestoreTable(ctx context.Context, job RestoreTableJob) (TableReport, error) {
	if err := job.Validate(); err != nil {
		return TableReport{}, err
	}
	target := job.Target
	if target == "" {
		target = job.Table
	}
	if err := a.allowed(target, "", job.Container); err != nil {
		return TableReport{}, err
	}
	gens, err := a.Generations(ctx, job.Container, job.Table)
	if errors.Is(err, errs.ErrNotFound) {
		return TableReport{Outcome: OutcomeMissing}, nil
	}
	if err != nil {
		return TableReport{}, err
	}
	switch {
	case len(gens) == 0:
		return TableReport{Outcome: OutcomeMissing}, nil
	case job.Generation == GenerationLatest:
		gens = gens[len(gens)-1:]
	case job.Generation != GenerationAll:
		if !slices.Contains(gens, job.Generation) {
			return TableReport{Outcome: OutcomeMissing}, nil
		}
		gens = []string{job.Generation}
	}
	manifests := make([]Manifest, len(gens))
	etags := make([]azcore.ETag, len(gens))
	for i, g := range gens {
		if manifests[i], err = a.readManifest(ctx, job.Container, job.Table, g); err != nil {
			return TableReport{}, err
		}
		if etags[i], err = a.verifyData(ctx, job.Container, manifests[i]); err != nil {
			return TableReport{}, err
		}
	}
	if err := a.after("restore-table", "verified"); err != nil {
		return TableReport{}, err
	}
	t, err := a.table(target)
	if err != nil {
		return TableReport{}, err
	}
	if err := t.CreateIfNotExists(ctx); err != nil {
		return TableReport{}, err
	}
	for i, m := range manifests {
		if err := a.restoreGeneration(ctx, t, job.Container, m, etags[i]); err != nil {
			return TableReport{}, err
		}
	}
	last := manifests[len(manifests)-1]
	return TableReport{Outcome: OutcomeRestored, Manifest: last, Generations: gens}, nil
}

// restoreGeneration writes one verified generation into t.
func (a *Archiver) restoreGeneration(ctx context.Context, t *repo.Table[codec.Entity], container string, m Manifest, etag azcore.ETag) error {
	var batch []*codec.Entity
	var written int64
	pr := a.startProgress(KindRestoreTable, t.Name(), m.Generation, m.Entities)
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		if err := t.BulkWrite(ctx, batch, nil); err != nil {
			return err
		}
		written += int64(len(batch))
		batch = batch[:0]
		if err := a.after("restore-table", "chunk"); err != nil {
			return err
		}
		a.opts.Logger.Info("restoring table", zap.String("table", t.Name()), zap.String("generation", m.Generation),
			zap.Int64("entities", written), zap.Int64("of", m.Entities))
		pr.report(written, false)
		return nil
	}
	_, err := a.readLines(ctx, container, m, etag, func(e *codec.Entity) error {
		batch = append(batch, e)
		if len(batch) == restoreChunk {
			return flush()
		}
		return nil
	})
	if err == nil {
		err = flush()
	}
	if err == nil {
		pr.report(written, true)
	}
	return err
}
