package tablearchive

import (
	"compress/gzip"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"go.uber.org/zap"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/internal/errs"
	"github.com/tablepatterns/tablepatterns/patterns/internal/archive"
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
	// ErrNotSealed: the table may still be written: its period has not ended more than
	// the grace period ago and the job does not declare it sealed (nothing was sent), or
	// it holds an entity written after the claimed period ended (+ grace and clock
	// skew), or more than MaxRecentWrites entities written within ClockSkew of the
	// export (nothing deleted).
	ErrNotSealed = errors.New("tablearchive: the table is not sealed (it may still be written)")
	// ErrTableChanged: the table was written during its export (an entity with a
	// Timestamp at or after the export began, or a different count): a writer exists
	// although the table was declared sealed. The table is not deleted.
	ErrTableChanged = errors.New("tablearchive: the table changed during its export")
	// ErrArchiveCorrupt: an export does not match its manifest, or a manifest is not one
	// this package writes. Nothing is written by a restore that meets it.
	ErrArchiveCorrupt = errors.New("tablearchive: archive does not match its manifest")
)

// ArchiveTableJob is the payload of an archive-table message: export Table to Container
// as a new generation, verify it, and delete the table unless KeepTable.
//
// Only sealed tables are archived, tables that can no longer be written: either a
// periodtable period table (PeriodPrefix and Period name its scheme) whose period ended
// more than Options.SealGrace + Options.ClockSkew ago (and none of whose entities was
// written after that: checked during the export), or a table the operator declares
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
	// Shards, from 2 to MaxShards, splits the export into that many shard jobs by
	// PartitionKey ranges (see the package doc, "Sharded exports"): the job plans them,
	// worker processes export them in parallel, and a combine job writes the
	// generation's manifest and deletes the table. 0 or 1 exports the table in this job.
	// A sharded job needs Options.Queue.
	Shards int `json:"shards,omitempty"`
}

// Generation values of RestoreTableJob.Generation.
const (
	// GenerationLatest restores the latest generation (the default, "").
	GenerationLatest = ""
	// GenerationAll restores every generation, oldest first (in the order of
	// Generations), so that a later copy of an entity replaces an earlier one.
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
	// CheckedAt orders the generations of a table (RFC 3339, nanoseconds): when the
	// last check before this manifest began, the rescan of keys and ETags that proved
	// the table held exactly this export, by the archiver's clock, raised above the
	// CheckedAt of every generation of the table listed just before that check (so a
	// slower clock still orders after what it saw). A manifest without it is not one this
	// package wrote (ErrArchiveCorrupt). A generation ordered after the
	// reader's clock + ClockSkew is ignored by every listing (forged, or a clock far
	// ahead), and no CheckedAt is written beyond that bound.
	CheckedAt  string `json:"checkedAt,omitempty"`
	ExportedAt string `json:"exportedAt"`
	// Sealed says why the table was archivable: "period" or "operator".
	Sealed string `json:"sealed,omitempty"`
	// Shards is the number of shards of a sharded export (see ShardManifest), whose
	// data is in one blob per shard; DataBlob is then empty. 0: one data blob. The
	// table-wide fields (Entities, Bytes, SHA256, Versions) are those an unsharded
	// export of the same table has: the shards' lines, in shard order, are its lines.
	Shards int `json:"shards,omitempty"`
	// ShardsSHA256 binds the shard manifests to this one: the SHA-256 of every shard's
	// range, counts, checksums and data blob name, in shard order (see ShardManifest).
	ShardsSHA256 string `json:"shardsSha256,omitempty"`
}

// TableReport is the result of a table job.
type TableReport struct {
	Outcome  Outcome
	Manifest Manifest
	// Generations are the generations a restore wrote, in order.
	Generations []string
}

// DataBlobName is the blob that holds one generation of a table's export: gzip JSON
// lines, one entity each. Table names are case-insensitive, so the folder is the table
// name in lower case: every spelling of one table names one folder.
func DataBlobName(table, generation string) string {
	return tableFolder(table) + "/" + generation + "/entities.jsonl.gz"
}

// ManifestBlobName is the blob that holds the Manifest of one generation (lower-case
// folder, as DataBlobName).
func ManifestBlobName(table, generation string) string {
	return tableFolder(table) + "/" + generation + "/manifest.json"
}

// generationLayout is the time part of a generation name: when its export began, by the
// exporter's clock. It does not order generations (Manifest.CheckedAt does).
const generationLayout = "20060102T150405.0000000Z"

// newGeneration names a new export that begins at t: unique (a random suffix).
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
	if j.Shards < 0 || j.Shards > MaxShards {
		return errs.Invalid("shards", "must be 0 to %d, got %d", MaxShards, j.Shards)
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
func (a *Archiver) checkSealed(j ArchiveTableJob) (sealState, error) {
	if j.Sealed {
		return sealState{why: "operator"}, nil
	}
	pt, err := j.period()
	if err != nil {
		return sealState{}, err
	}
	from := pt.End.Add(a.opts.SealGrace + a.opts.ClockSkew)
	if a.now().Before(from) {
		return sealState{}, fmt.Errorf("%w: %w", ErrNotSealed, errs.Invalid("table",
			"the period of %s ends at %s; it is archived from %s on (grace %v, clock skew %v)",
			j.Table, pt.End.UTC().Format(time.RFC3339), from.UTC().Format(time.RFC3339), a.opts.SealGrace, a.opts.ClockSkew))
	}
	return sealState{why: "period", writtenBy: from}, nil
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
//     stopped after its manifest: a scan of every property of the table hashes to its
//     Versions and to its SHA256, size and count: the container is untrusted, and
//     Versions alone can be copied from a genuine manifest) and its data matches its
//     manifest, go to 6;
//  4. stream every entity into a data blob under a new generation's name, hashing the
//     (PartitionKey, RowKey, ETag) of each and keeping the versions of the entities
//     whose Timestamp is at or after the export's start minus ClockSkew; read the blob
//     back and check it;
//  5. list the generations; scan the table's keys and ETags again: the same hash (any
//     insert, update or delete since the export read it changes it); create the
//     manifest with If-None-Match: *, its CheckedAt the start of that scan (raised above
//     every CheckedAt listed, see Manifest.CheckedAt), after setting the data blob's
//     metadata If-Match the ETag it verified (a sweep that listed it earlier can no
//     longer delete it: see SweepAbortedExports);
//  6. immediately before DeleteTable, query the entities with a Timestamp at or after
//     the export's start (on a rerun: the start of the scan of 3) minus ClockSkew: each
//     must be one the export holds, with the same ETag; then list the generations again:
//     the one the table is deleted after must be the latest; then set the data blob's
//     metadata If-Match the ETag checked in 3 or 5: a blob gone keeps the table (an
//     error: the rerun exports again), one changed goes back to 3. If another generation
//     has become the latest (a concurrent duplicate, or another worker's clock), go back
//     to 3 (at most twice; then an error that lets the job run again later).
//
// For a period table (not Sealed), every entity's Timestamp must also be at or before
// the claimed period's end + SealGrace + ClockSkew: a later one proves that writers
// still write the table (a job naming the wrong period scheme: Daily and Weekly stamps
// look alike), and the job fails with ErrNotSealed, nothing deleted.
//
// A changed table is ErrTableChanged: nothing is deleted, and the generation written
// (if any) stays, complete and correct for what it held at its CheckedAt. A table
// re-created after its archive is archived as a new generation beside the earlier ones,
// never over it. The remaining window: an insert or update accepted between the start
// of the query of 6 and the delete (that query, then one listing of the generations) is
// lost with the table, as is one whose Timestamp is more than
// ClockSkew behind the archiver's clock; a delete during the export leaves the deleted
// entity in the archive. Sealed tables have no writers, so none is expected. More than
// MaxRecentWrites entities written within ClockSkew of the export is ErrNotSealed (the
// table is not quiet: archive it later); the check keeps 32 bytes per such entity.
//
// With job.Shards > 1 it only plans a sharded export (see the package doc, "Sharded
// exports"): OutcomeSharded once the shard jobs are enqueued on Options.Queue (nil:
// ErrInvalidInput, nothing sent); ExportShard and CombineShards do the rest. A rerun
// finding a sharded latest generation treats it as any other: every shard's data is
// read back against its shard manifest and, in shard order through one SHA-256, must
// hash to the manifest's SHA256, which the table itself hashes to in 3 (shard
// manifests alone can be forged consistently: see the package doc, "Sharded exports").
//
// Errors: ErrInvalidInput and ErrNotSealed (nothing sent), ErrNotSealed (a Timestamp
// after the claimed period), ErrTableChanged, ErrArchiveCorrupt, ErrTransient,
// *repo.Error.
func (a *Archiver) ArchiveTable(ctx context.Context, job ArchiveTableJob) (TableReport, error) {
	return a.archiveTable(ctx, job, "")
}

// archiveTable is ArchiveTable; a sharded job plans generation gen (a new one when gen
// is empty).
func (a *Archiver) archiveTable(ctx context.Context, job ArchiveTableJob, gen string) (TableReport, error) {
	if err := job.Validate(); err != nil {
		return TableReport{}, err
	}
	if err := a.allowed(job.Table, "", job.Container); err != nil {
		return TableReport{}, err
	}
	seal, err := a.checkSealed(job)
	if err != nil {
		return TableReport{}, err
	}
	if job.Shards > 1 {
		if gen == "" {
			gen = newGeneration(a.now())
		}
		return a.planShards(ctx, job, gen)
	}
	t, err := a.table(job.Table)
	if err != nil {
		return TableReport{}, err
	}
	for round := 0; round < 3; round++ {
		rep, done, err := a.archiveRound(ctx, t, job, seal)
		if archive.IsTableNotFound(err) {
			// Deleted under this run (by a concurrent duplicate, after the latest
			// generation): look again.
			a.opts.Logger.Info("the table was deleted during the job: looking again", zap.String("table", job.Table), zap.Int("round", round+1))
			continue
		}
		if err != nil || done {
			return rep, err
		}
		a.opts.Logger.Info("a later generation appeared, or the data blob changed, before the delete: checking again", zap.String("table", job.Table), zap.Int("round", round+1))
	}
	// Concurrent duplicates kept adding generations (or deleting the table under this
	// run): not a proof of a writer. A redelivery finds the table deleted by one of
	// them, or checks it again.
	return TableReport{}, fmt.Errorf("tablearchive: table %s: other generations kept appearing before the delete (concurrent exports): not deleted yet", job.Table)
}

// archiveRound runs steps 2 to 6 of ArchiveTable once; done is false when another
// generation became the latest before the delete.
func (a *Archiver) archiveRound(ctx context.Context, t *repo.Table[codec.Entity], job ArchiveTableJob, seal sealState) (TableReport, bool, error) {
	exists, err := t.Exists(ctx)
	if err != nil {
		return TableReport{}, true, err
	}
	gens, err := a.listGenerations(ctx, job.Container, job.Table)
	if err != nil && !errors.Is(err, errs.ErrNotFound) {
		return TableReport{}, true, err
	}
	var latest *generation
	if len(gens) > 0 {
		latest = &gens[len(gens)-1]
	}
	if !exists {
		if latest == nil {
			return TableReport{Outcome: OutcomeMissing}, true, nil
		}
		return TableReport{Outcome: OutcomeAlreadyArchived, Manifest: latest.m}, true, nil
	}
	// The last check before the delete looks for writes since checkFrom (less ClockSkew):
	// each must be one the archive holds (recent). On a rerun whose latest generation
	// already holds the table, that is the start of the rescan that proved it: the rescan
	// alone would leave a window as long as the scan.
	var m Manifest
	var recent recentSet
	var checkFrom time.Time
	var refs []dataRef // the data blobs this run checked, with the ETags of their content
	fresh, held := false, false
	if latest != nil && latest.m.Versions != "" {
		m = latest.m
		checkFrom = a.now().UTC()
		recent = recentSet{}
		// The table is deleted on the strength of that export, which another process
		// wrote in a container that is not this run's to trust (write access to it is
		// enough to forge a self-consistent generation): the table's own content must
		// hash to the manifest's, and the data blob to the manifest.
		vctx, verify := a.startPhase(ctx, KindArchiveTable, PhaseVerify, job.Table, m.Generation, 2*m.Entities)
		if held, err = a.holds(vctx, t, m, seal, checkFrom.Add(-a.opts.ClockSkew), recent); err != nil {
			return TableReport{}, true, err
		}
		if held {
			refs, err = a.verifyGeneration(vctx, job.Container, m)
			if err == nil {
				verify.finish()
			}
			if errors.Is(err, ErrArchiveCorrupt) {
				a.opts.Logger.Warn("the latest generation does not match its manifest: exporting the table again",
					zap.String("table", job.Table), zap.String("generation", m.Generation), errs.LogField(err))
			} else if err != nil {
				return TableReport{}, true, err
			}
			held = err == nil
		}
	}
	if !held {
		if err := a.createContainer(ctx, job.Container); err != nil {
			return TableReport{}, true, err
		}
		var etag azcore.ETag
		if m, recent, etag, err = a.exportGeneration(ctx, t, job, seal); err != nil {
			return TableReport{}, true, err
		}
		if err := a.after("archive-table", "manifest"); err != nil {
			return TableReport{}, true, err
		}
		refs = []dataRef{{name: m.DataBlob, etag: etag}}
		checkFrom, _ = time.Parse(time.RFC3339Nano, m.ExportStarted)
		fresh = true
	}
	if job.KeepTable {
		out := OutcomeMoved
		if !fresh {
			out = OutcomeAlreadyArchived
		}
		return TableReport{Outcome: out, Manifest: m}, true, nil
	}
	if err := a.after("archive-table", "before-delete"); err != nil {
		return TableReport{}, true, err
	}
	dctx, del := a.startPhase(ctx, KindArchiveTable, PhaseDelete, job.Table, m.Generation, int64(len(recent)))
	rep, done, err := a.deleteAfter(dctx, t, job, m, refs, checkFrom, recent)
	if err == nil && done {
		del.finish()
		a.opts.Logger.Info("table archived", zap.String("table", job.Table), zap.String("container", job.Container),
			zap.String("generation", m.Generation), zap.Int64("entities", m.Entities), zap.Int64("bytes", m.Bytes), zap.Bool("tableDeleted", true))
	}
	return rep, done, err
}

// MaxRecentWrites bounds how many entities written within ClockSkew of a table export's
// start (or of a rerun's rescan) ArchiveTable remembers for its check before the
// delete (32 bytes each). A table with more is not quiet: ErrNotSealed.
const MaxRecentWrites = 100_000

// recentSet holds the versions (a SHA-256 of PartitionKey, RowKey and ETag) of the
// entities written since the export began, less ClockSkew.
type recentSet map[[sha256.Size]byte]struct{}

func versionDigest(pk, rk, etag string) [sha256.Size]byte {
	h := sha256.New()
	addVersion(h, pk, rk, etag)
	var d [sha256.Size]byte
	h.Sum(d[:0])
	return d
}

// add records one version; more than max (MaxRecentWrites) is ErrNotSealed.
func (r recentSet) add(max int, table, pk, rk, etag string) error {
	r[versionDigest(pk, rk, etag)] = struct{}{}
	if len(r) > max {
		return fmt.Errorf("%w: table %s: more than %d entities were written within the clock skew of its export: it is not quiet; archive it later", ErrNotSealed, table, max)
	}
	return nil
}

// maxRecent is MaxRecentWrites (tests lower it).
func (a *Archiver) maxRecent() int {
	if a.seams.recentLimit > 0 {
		return a.seams.recentLimit
	}
	return MaxRecentWrites
}

// sealState is why a table may be archived, and for a period table the latest
// Timestamp its entities may carry.
type sealState struct {
	why       string    // "period" or "operator"
	writtenBy time.Time // zero for operator-sealed tables
}

// checkClaim refuses an entity written after the claimed period's end + SealGrace +
// ClockSkew: the period claim is wrong, writers still write the table.
func (s sealState) checkClaim(table string, e *codec.Entity) error {
	if s.writtenBy.IsZero() || !e.Timestamp.After(s.writtenBy) {
		return nil
	}
	return fmt.Errorf("%w: table %s: entity (%s, %s) was written at %s, after its period as the job claims it ended (+ grace and clock skew: %s): the table is still written (is the period scheme right?); nothing deleted",
		ErrNotSealed, table, e.PartitionKey, e.RowKey, e.Timestamp.UTC().Format(time.RFC3339Nano), s.writtenBy.UTC().Format(time.RFC3339))
}

// exportState is what an export remembers besides the manifest.
type exportState struct {
	versions hash.Hash
	since    time.Time
	recent   recentSet // Timestamp >= since
	seal     sealState
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

// tableDigest is what one scan of a table proves about it.
type tableDigest struct {
	versions string // as Manifest.Versions
	// sha256 and bytes are those of the table's export lines (content scans only), as
	// Manifest.SHA256 and Manifest.Bytes.
	sha256          string
	entities, bytes int64
}

// scanTable scans t: keys and ETags, or every property with content. Every Timestamp
// must fit the period claim of seal. With recent non-nil it also records the versions
// of the entities whose Timestamp is at or after since, for checkNoNewWrites.
func (a *Archiver) scanTable(ctx context.Context, t *repo.Table[codec.Entity], seal sealState, since time.Time, recent recentSet, content bool) (tableDigest, error) {
	q := repo.Query{Select: []string{"PartitionKey", "RowKey", "Timestamp"}}
	if content {
		q = repo.Query{FullMetadata: true} // as the export reads it
	}
	vh, ch := sha256.New(), sha256.New()
	var d tableDigest
	pr := progressIn(ctx)
	for e, err := range t.Query(ctx, q) {
		if err != nil {
			return tableDigest{}, err
		}
		pr.add(1)
		if err := seal.checkClaim(t.Name(), &e); err != nil {
			return tableDigest{}, err
		}
		addVersion(vh, e.PartitionKey, e.RowKey, e.ETag)
		if recent != nil && !e.Timestamp.Before(since) {
			if err := recent.add(a.maxRecent(), t.Name(), e.PartitionKey, e.RowKey, e.ETag); err != nil {
				return tableDigest{}, err
			}
		}
		if content {
			line, err := exportLine(&e)
			if err != nil {
				return tableDigest{}, err
			}
			_, _ = ch.Write(line)
			d.bytes += int64(len(line))
		}
		d.entities++
	}
	d.versions = hex.EncodeToString(vh.Sum(nil))
	if content {
		d.sha256 = hex.EncodeToString(ch.Sum(nil))
	}
	return d, nil
}

// checkVersions scans t's keys and ETags and compares them with m.Versions (see
// scanTable).
func (a *Archiver) checkVersions(ctx context.Context, t *repo.Table[codec.Entity], m Manifest, seal sealState, since time.Time, recent recentSet) error {
	d, err := a.scanTable(ctx, t, seal, since, recent, false)
	if err != nil {
		return err
	}
	if d.versions != m.Versions {
		return fmt.Errorf("%w: table %s (%d entities) is not the version its export %s read (%d entities): not deleted, and not retried: something writes this table although it was declared sealed",
			ErrTableChanged, m.Table, d.entities, m.Generation, m.Entities)
	}
	return nil
}

// holds reports whether the table is exactly what m describes: the same versions (keys
// and ETags) and the same export content (the SHA-256, size and count of the JSON lines
// an export of it now writes). m comes from the container and is untrusted: Versions
// alone can be copied from a genuine manifest; content a manifest did not read from
// this table does not hash to its SHA256. One scan of every property (see scanTable).
// For a sharded m, verifyGeneration then ties the shards' data to that same SHA256.
func (a *Archiver) holds(ctx context.Context, t *repo.Table[codec.Entity], m Manifest, seal sealState, since time.Time, recent recentSet) (bool, error) {
	d, err := a.scanTable(ctx, t, seal, since, recent, true)
	if err != nil {
		return false, err
	}
	if d.versions != m.Versions {
		return false, nil // changed since that export: a new generation
	}
	if d.sha256 != m.SHA256 || d.bytes != m.Bytes || d.entities != m.Entities {
		a.opts.Logger.Warn("the latest generation's manifest does not describe the table's content (forged, or written by another encoding): exporting the table again",
			zap.String("table", t.Name()), zap.String("generation", m.Generation), zap.Int64("entities", d.entities), zap.Int64("manifestEntities", m.Entities))
		return false, nil
	}
	return true, nil
}

// exportLine is the line of one entity in an export: its JSON (keys and properties, no
// ETag or Timestamp) and a newline.
func exportLine(e *codec.Entity) ([]byte, error) {
	e.ETag = ""
	line, err := codec.EncodeEntity(e)
	if err != nil {
		return nil, err
	}
	return append(line, '\n'), nil
}

// touchData sets the metadata of a data blob, If-Match etag, and returns its new ETag:
// the new ETag and Last-Modified prove it still holds what was checked, and defeat a
// sweep that listed it earlier (SweepAbortedExports deletes If-Match what it listed).
// Errors: ErrNotFound (gone), ErrPreconditionFailed (changed since etag; after a lost
// response, possibly by this touch), ErrTransient, *repo.Error.
func (a *Archiver) touchData(ctx context.Context, cont, name string, etag azcore.ETag) (azcore.ETag, error) {
	if etag == "" {
		return "", fmt.Errorf("%w: %s/%s: no ETag recorded for its check", errs.ErrPreconditionFailed, cont, name)
	}
	bc := a.blobs().ServiceClient().NewContainerClient(cont).NewBlobClient(name)
	var out azcore.ETag
	err := retry.Do(ctx, a.opts.Retry, retry.Op{Name: "touch table export", Resource: cont}, func(ctx context.Context, _ int) error {
		resp, err := bc.SetMetadata(ctx, map[string]*string{"checked": ptrTo(a.now().UTC().Format(time.RFC3339Nano))}, &blob.SetMetadataOptions{
			AccessConditions: &blob.AccessConditions{ModifiedAccessConditions: &blob.ModifiedAccessConditions{IfMatch: &etag}},
		})
		if err != nil {
			return errs.Wrap(err, "touch table export", cont, "", "")
		}
		if resp.ETag == nil || *resp.ETag == "" {
			return fmt.Errorf("tablearchive: touch of %s/%s: no ETag in the response", cont, name)
		}
		out = *resp.ETag
		return nil
	})
	return out, err
}

// checkNoNewWrites queries the entities with a Timestamp at or after started - ClockSkew:
// each must be in recent (exported) with the same ETag.
func (a *Archiver) checkNoNewWrites(ctx context.Context, t *repo.Table[codec.Entity], started time.Time, recent recentSet) error {
	if started.IsZero() {
		return fmt.Errorf("%w: no export start recorded", ErrArchiveCorrupt)
	}
	since := started.Add(-a.opts.ClockSkew)
	pr := progressIn(ctx)
	for e, err := range t.Query(ctx, repo.Query{Filter: filter.Ge("Timestamp", since), Select: []string{"PartitionKey", "RowKey", "Timestamp"}}) {
		if err != nil {
			return err
		}
		pr.add(1)
		if _, ok := recent[versionDigest(e.PartitionKey, e.RowKey, e.ETag)]; ok {
			continue
		}
		return fmt.Errorf("%w: table %s: entity (%s, %s) was written at %s, after the export began (%s, clock skew %v): not deleted, and not retried: something writes this table although it was declared sealed",
			ErrTableChanged, t.Name(), e.PartitionKey, e.RowKey, e.Timestamp.UTC().Format(time.RFC3339Nano), started.UTC().Format(time.RFC3339Nano), a.opts.ClockSkew)
	}
	return nil
}

// writeLines writes the entities q selects from t as gzip JSON lines to w, filling m's
// counts and checksum.
// The upload reads from the other end of the pipe, so m is complete when the upload ends.
func (a *Archiver) writeLines(ctx context.Context, t *repo.Table[codec.Entity], q repo.Query, w io.Writer, m *Manifest, x *exportState) error {
	zw := gzip.NewWriter(w)
	sum := sha256.New()
	out := io.MultiWriter(zw, sum)
	lastPK := ""
	pr := a.startProgress(KindArchiveTable, PhaseExport, m.Table, m.Generation, 0)
	for e, err := range t.Query(ctx, q) {
		if err != nil {
			return err
		}
		if e.ETag == "" {
			return fmt.Errorf("tablearchive: table %s returned an entity without an ETag", t.Name())
		}
		if err := x.seal.checkClaim(t.Name(), &e); err != nil {
			return err
		}
		addVersion(x.versions, e.PartitionKey, e.RowKey, e.ETag)
		if !e.Timestamp.Before(x.since) {
			if err := x.recent.add(a.maxRecent(), t.Name(), e.PartitionKey, e.RowKey, e.ETag); err != nil {
				return err
			}
		}
		line, err := exportLine(&e)
		if err != nil {
			return err
		}
		if _, err := out.Write(line); err != nil {
			return err
		}
		m.Entities++
		m.Bytes += int64(len(line))
		if m.Entities == 1 || e.PartitionKey != lastPK {
			m.Partitions++
			lastPK = e.PartitionKey
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

// verifyExport is step 2 of exportGeneration, the checks between the data blob and its
// manifest: the blob read back against m (its ETag the upload's, uploaded), the
// generations listed, and the table's keys and ETags scanned again (the same hash as
// the export's, or ErrTableChanged). It returns the blob's ETag, the generations listed
// and when that scan began (the new manifest orders after both).
func (a *Archiver) verifyExport(ctx context.Context, t *repo.Table[codec.Entity], job ArchiveTableJob, m Manifest, uploaded azcore.ETag, seal sealState) (azcore.ETag, []generation, time.Time, error) {
	if err := a.after("archive-table", "exported"); err != nil {
		return "", nil, time.Time{}, err
	}
	vctx, verify := a.startPhase(ctx, KindArchiveTable, PhaseVerify, job.Table, m.Generation, 2*m.Entities)
	etag, err := a.verifyDataETag(vctx, job.Container, m)
	if err != nil {
		return "", nil, time.Time{}, err
	}
	if uploaded != "" && etag != uploaded {
		return "", nil, time.Time{}, fmt.Errorf("%w: %s/%s changed between its upload and its check", ErrArchiveCorrupt, job.Container, m.DataBlob)
	}
	// Order after every generation that exists before the check begins (one a
	// concurrent duplicate wrote while this export ran, or one made by a clock that runs
	// ahead): their checks came first. A manifest written later may hold newer data.
	gens, err := a.listGenerations(ctx, job.Container, job.Table)
	if err != nil {
		return "", nil, time.Time{}, err
	}
	checked := a.now().UTC()
	if err := a.checkVersions(vctx, t, m, seal, time.Time{}, nil); err != nil {
		return "", nil, time.Time{}, err
	}
	verify.finish()
	return etag, gens, checked, a.after("archive-table", "checked")
}
