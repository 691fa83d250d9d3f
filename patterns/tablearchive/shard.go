package tablearchive

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"go.uber.org/zap"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/internal/errs"
	"github.com/tablepatterns/tablepatterns/internal/fanout"
	"github.com/tablepatterns/tablepatterns/patterns/internal/archive"
	"github.com/tablepatterns/tablepatterns/queueworker"
	"github.com/tablepatterns/tablepatterns/repo"
	"github.com/tablepatterns/tablepatterns/repo/filter"
	"github.com/tablepatterns/tablepatterns/retry"
)

// MaxShards is the most shards an ArchiveTableJob may ask for.
const MaxShards = 64

// ShardManifestFormat names the layout of one shard of a sharded table export.
const ShardManifestFormat = "tablepatterns/table-export-shard/v1"

// shardPlanFormat names the layout of a sharded export's plan.
const shardPlanFormat = "tablepatterns/table-export-plan/v1"

// The outcomes of the jobs of a sharded export.
const (
	// OutcomeSharded: an archive-table job split the table into shard jobs; the combine
	// job that the last shard enqueues writes the generation's manifest and deletes the
	// table.
	OutcomeSharded Outcome = "sharded"
	// OutcomePending: a combine job found shards not exported yet; the job of the last
	// shard enqueues the combine again once its shard manifest is written.
	OutcomePending Outcome = "pending"
)

// shardParallel bounds the blobs one process reads or snapshots at once (a combine's
// data checks; a restore's snapshots, and the generations it verifies).
const shardParallel = 4

// ShardPlan is the plan of a sharded export, written once (If-None-Match: *) by the
// archive-table job in the generation's folder: the PartitionKey ranges of its shards.
// It is read back as untrusted input.
type ShardPlan struct {
	// Format names the plan's format version; Table and Generation the export it plans
	// (checked against the job that reads it).
	Format     string `json:"format"`
	Table      string `json:"table"`
	Generation string `json:"generation"`
	// Bounds are the first PartitionKeys of shards 1 to n-1, strictly increasing: shard
	// i holds the partition keys from Bounds[i-1] (shard 0: from the first) up to, not
	// including, Bounds[i] (the last shard: to the end). A partition is never split.
	Bounds []string `json:"bounds"`
	// Planned is when the plan was made (the archiver's clock, RFC 3339).
	Planned string `json:"planned"`
}

// shards is the number of shards of p.
func (p ShardPlan) shards() int { return len(p.Bounds) + 1 }

// shardRange is the PartitionKey range [low, high) of shard i ("" is open).
func (p ShardPlan) shardRange(i int) (low, high string) {
	if i > 0 {
		low = p.Bounds[i-1]
	}
	if i < len(p.Bounds) {
		high = p.Bounds[i]
	}
	return low, high
}

// validate checks a plan read from the container.
func (p ShardPlan) validate(table, gen string) error {
	if p.Format != shardPlanFormat || !strings.EqualFold(p.Table, table) || p.Generation != gen || len(p.Bounds) >= MaxShards {
		return fmt.Errorf("%w: the plan of generation %s of %s is not a %s plan", ErrArchiveCorrupt, gen, table, shardPlanFormat)
	}
	for i, b := range p.Bounds {
		if b == "" || codec.ValidateKey("PartitionKey", b) != nil || i > 0 && b <= p.Bounds[i-1] {
			return fmt.Errorf("%w: the plan of generation %s of %s: bound %d is empty, not a key, or not after the one before", ErrArchiveCorrupt, gen, table, i)
		}
	}
	return nil
}

// ShardManifest describes one shard of a sharded export: its PartitionKey range and the
// data blob that holds it. It is created with If-None-Match: * after its data is
// verified, and read back as untrusted input: the combine job checks it against the
// table itself before the generation's manifest binds it (Manifest.ShardsSHA256).
type ShardManifest struct {
	// Format names the manifest's format version; Table, Generation, Shard (0-based) and
	// Shards say which shard of which export it describes (checked against the plan).
	Format     string `json:"format"`
	Table      string `json:"table"`
	Generation string `json:"generation"`
	Shard      int    `json:"shard"`
	Shards     int    `json:"shards"`
	// Low and High bound the shard's PartitionKeys: Low <= PartitionKey < High ("":
	// open).
	Low  string `json:"low,omitempty"`
	High string `json:"high,omitempty"`
	// Entities, Partitions, Bytes, SHA256 and Versions are as in Manifest, for the shard's
	// entities.
	Entities   int64  `json:"entities"`
	Partitions int64  `json:"partitions"`
	Bytes      int64  `json:"bytes"`
	SHA256     string `json:"sha256"`
	Versions   string `json:"versions"`
	// DataBlob is the gzip JSON-lines blob of the shard, in the generation's folder
	// (shard-NNNN-xxxxxxxx.jsonl.gz: one name per attempt, so that an attempt never
	// overwrites another's data).
	DataBlob string `json:"dataBlob"`
	// ExportedAt is as Manifest.ExportedAt, for the shard's export.
	ExportedAt string `json:"exportedAt"`
}

// part is the shard as a Manifest that readData checks its data against.
func (s ShardManifest) part() Manifest {
	return Manifest{Format: ManifestFormat, Table: s.Table, Generation: s.Generation, DataBlob: s.DataBlob,
		Entities: s.Entities, Bytes: s.Bytes, SHA256: s.SHA256, Versions: s.Versions}
}

// validate checks a shard manifest read from the container against the shard it must be.
func (s ShardManifest) validate(table, gen string, shard, shards int, low, high string) error {
	prefix := tableFolder(table) + "/" + gen + "/" + fmt.Sprintf("shard-%04d-", shard)
	suffix, ok := strings.CutPrefix(s.DataBlob, prefix)
	rnd, ok2 := strings.CutSuffix(suffix, ".jsonl.gz")
	ok = ok && ok2 && len(rnd) == 8 && isLowerHex(rnd)
	if s.Format != ShardManifestFormat || !strings.EqualFold(s.Table, table) || s.Generation != gen || s.Shard != shard || s.Shards != shards ||
		s.Low != low || s.High != high || !ok || s.Entities < 0 || s.Bytes < 0 || s.Partitions < 0 || !validHex(s.SHA256) || !validHex(s.Versions) {
		return fmt.Errorf("%w: shard %d of generation %s of %s is not a %s manifest of that shard (range, data blob, checksums)", ErrArchiveCorrupt, shard, gen, table, ShardManifestFormat)
	}
	return nil
}

// validHex reports whether s is a SHA-256 in lower-case hex.
func validHex(s string) bool { return len(s) == 64 && isLowerHex(s) }

func isLowerHex(s string) bool {
	_, err := hex.DecodeString(s)
	return err == nil && strings.ToLower(s) == s
}

// shardsDigest is Manifest.ShardsSHA256 of the shards, in order.
func shardsDigest(shards []ShardManifest) string {
	h := sha256.New()
	for _, s := range shards {
		fmt.Fprintf(h, "%d\x00%d\x00%s\x00%s\x00%d\x00%d\x00%d\x00%s\x00%s\x00%s\n",
			s.Shard, s.Shards, s.Low, s.High, s.Entities, s.Partitions, s.Bytes, s.SHA256, s.Versions, s.DataBlob)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// The blobs of a sharded generation, in its folder (the table's canonical one).
func planBlobName(table, gen string) string { return tableFolder(table) + "/" + gen + "/plan.json" }

func shardManifestName(table, gen string, i int) string {
	return fmt.Sprintf("%s/%s/shard-%04d.json", tableFolder(table), gen, i)
}

func shardDataName(table, gen string, i int) string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("%s/%s/shard-%04d-%s.jsonl.gz", tableFolder(table), gen, i, hex.EncodeToString(b[:]))
}

// ShardJob is the payload of an archive-table-shard message: export shard Shard of the
// sharded generation Generation of the job's table (its range is in the generation's
// plan). The plan's archive-table job enqueues one per shard.
type ShardJob struct {
	ArchiveTableJob
	// Generation is the sharded generation the plan named; Shard the shard to export.
	Generation string `json:"generation"`
	Shard      int    `json:"shard"`
}

// Validate checks the job without sending anything.
//
// Errors: ErrInvalidInput naming the field (and ErrNotSealed as ArchiveTableJob.Validate).
func (j ShardJob) Validate() error {
	if err := (CombineJob{ArchiveTableJob: j.ArchiveTableJob, Generation: j.Generation}).Validate(); err != nil {
		return err
	}
	if j.Shard < 0 || j.Shard >= MaxShards {
		return errs.Invalid("shard", "must be 0 to %d, got %d", MaxShards-1, j.Shard)
	}
	return nil
}

// CombineJob is the payload of an archive-table-combine message: combine the shard
// manifests of the sharded generation Generation into its manifest and delete the table.
// Each shard job enqueues it once its shard manifest is written.
type CombineJob struct {
	ArchiveTableJob
	// Generation is the sharded generation whose shards to combine.
	Generation string `json:"generation"`
}

// Validate checks the job without sending anything.
//
// Errors: ErrInvalidInput naming the field (and ErrNotSealed as ArchiveTableJob.Validate).
func (j CombineJob) Validate() error {
	if err := j.ArchiveTableJob.Validate(); err != nil {
		return err
	}
	if !validGeneration(j.Generation) {
		return errs.Invalid("generation", "%q is not a generation name", j.Generation)
	}
	return nil
}

// messageGeneration names the generation a sharded archive-table delivery plans: derived
// from the queue message (its insertion time and id), so that every delivery of one
// message plans the same generation and finds the plan the first one wrote.
func messageGeneration(insertion time.Time, messageID string) string {
	if insertion.IsZero() || messageID == "" {
		return newGeneration(time.Now())
	}
	sum := sha256.Sum256([]byte(messageID))
	return insertion.UTC().Format(generationLayout) + "-" + hex.EncodeToString(sum[:4])
}

// planShards is ArchiveTable for job.Shards > 1: it chooses the shards' PartitionKey
// ranges from a keys-only scan, writes the plan of generation gen (or reads the one an
// earlier delivery wrote) and enqueues one shard job per shard on Options.Queue.
func (a *Archiver) planShards(ctx context.Context, job ArchiveTableJob, gen string) (TableReport, error) {
	if a.opts.Queue == nil {
		return TableReport{}, errs.Invalid("Options.Queue", "a sharded archive-table job (shards %d) enqueues its shard jobs: the archiver needs a queue", job.Shards)
	}
	t, gone, err := a.openTable(ctx, job)
	if t == nil || err != nil {
		return gone, err
	}
	plan, err := a.readPlan(ctx, job.Container, job.Table, gen)
	if errors.Is(err, errs.ErrNotFound) {
		bounds, berr := a.shardBounds(ctx, t, job.Shards)
		if berr != nil {
			return TableReport{}, berr
		}
		if err := a.createContainer(ctx, job.Container); err != nil {
			return TableReport{}, err
		}
		plan = ShardPlan{Format: shardPlanFormat, Table: job.Table, Generation: gen, Bounds: bounds, Planned: a.now().UTC().Format(time.RFC3339Nano)}
		created, perr := a.putOnce(ctx, job.Container, planBlobName(job.Table, gen), plan)
		if perr != nil {
			return TableReport{}, perr
		}
		if !created { // an earlier delivery's plan stands
			plan, err = a.readPlan(ctx, job.Container, job.Table, gen)
		} else {
			err = nil
		}
	}
	if err != nil {
		return TableReport{}, err
	}
	if err := a.after("archive-table", "planned"); err != nil {
		return TableReport{}, err
	}
	n := plan.shards()
	err = fanout.Do(ctx, n, 8, func(ctx context.Context, i int) error {
		sj := ShardJob{ArchiveTableJob: job, Generation: gen, Shard: i}
		sj.Shards = n
		_, err := queueworker.Enqueue(ctx, a.opts.Queue, KindArchiveTableShard, shardJobID(job, gen, fmt.Sprintf("shard%d", i)), sj, nil)
		return err
	})
	if err != nil {
		return TableReport{}, err
	}
	a.opts.Logger.Info("table export sharded", zap.String("table", job.Table), zap.String("generation", gen), zap.Int("shards", n))
	return TableReport{Outcome: OutcomeSharded, Manifest: Manifest{Format: ManifestFormat, Table: job.Table, Generation: gen, Shards: n}}, nil
}

// shardJobID is the message id of a shard or combine job (duplicates share it).
func shardJobID(job ArchiveTableJob, gen, what string) string {
	return "table|" + strings.ToLower(job.Table) + "|" + job.Container + "|" + gen + "|" + what
}

// shardBounds chooses the bounds of up to n shards of about equal entity counts from a
// keys-only scan ($select=PartitionKey): it keeps one count per partition. A partition
// is never split, so a table with fewer partitions than n gets fewer shards.
func (a *Archiver) shardBounds(ctx context.Context, t *repo.Table[codec.Entity], n int) ([]string, error) {
	type partition struct {
		pk    string
		count int64
	}
	var parts []partition
	var total int64
	for e, err := range t.Query(ctx, repo.Query{Select: []string{"PartitionKey"}}) {
		if err != nil {
			return nil, err
		}
		if len(parts) == 0 || parts[len(parts)-1].pk != e.PartitionKey {
			if len(parts) > 0 && e.PartitionKey < parts[len(parts)-1].pk {
				return nil, fmt.Errorf("tablearchive: table %s: the service returned partition keys out of order", t.Name())
			}
			parts = append(parts, partition{pk: e.PartitionKey})
		}
		parts[len(parts)-1].count++
		total++
	}
	var bounds []string
	var acc int64
	for i, p := range parts {
		// Start shard k+1 at the first partition whose entities begin at or after
		// k+1 shares of the total.
		if i > 0 && len(bounds) < n-1 && acc*int64(n) >= total*int64(len(bounds)+1) {
			bounds = append(bounds, p.pk)
		}
		acc += p.count
	}
	return bounds, nil
}

// openTable returns the job's table if it exists; else nil and the outcome of a job
// whose table is gone (goneOutcome).
func (a *Archiver) openTable(ctx context.Context, job ArchiveTableJob) (*repo.Table[codec.Entity], TableReport, error) {
	t, err := a.table(job.Table)
	if err != nil {
		return nil, TableReport{}, err
	}
	exists, err := t.Exists(ctx)
	if err != nil || exists {
		return t, TableReport{}, err
	}
	rep, err := a.goneOutcome(ctx, job)
	return nil, rep, err
}

// goneOutcome is the outcome of a job whose table does not exist: already archived when
// a generation exists, else missing.
func (a *Archiver) goneOutcome(ctx context.Context, job ArchiveTableJob) (TableReport, error) {
	gens, err := a.listGenerations(ctx, job.Container, job.Table)
	if err != nil && !errors.Is(err, errs.ErrNotFound) {
		return TableReport{}, err
	}
	if len(gens) == 0 {
		return TableReport{Outcome: OutcomeMissing}, nil
	}
	return TableReport{Outcome: OutcomeAlreadyArchived, Manifest: gens[len(gens)-1].m}, nil
}

// ExportShard runs one shard job of a sharded export: it exports the entities of the
// shard's PartitionKey range (from the generation's plan) to a data blob of its own,
// reads it back and checks it, writes the shard manifest (If-None-Match: *), and then
// enqueues the combine job. A shard whose manifest exists (a rerun, a duplicate) only
// enqueues the combine again, once it found the data blob that manifest names (gone:
// ErrArchiveCorrupt, the generation cannot complete); a generation whose manifest
// exists, or a table that is gone, needs nothing. The shard does not delete anything,
// and does not prove the table unchanged: the combine does, for every shard at once.
//
// Errors: ErrInvalidInput and ErrNotSealed (nothing sent), ErrNotAllowed,
// ErrArchiveCorrupt (no plan, or a plan or shard manifest this package did not write,
// or a shard manifest whose data is gone), ErrNotSealed (a Timestamp after the claimed
// period), ErrTransient, *repo.Error.
func (a *Archiver) ExportShard(ctx context.Context, job ShardJob) (TableReport, error) {
	seal, err := a.checkShardJob(job, job.ArchiveTableJob)
	if err != nil {
		return TableReport{}, err
	}
	if a.opts.Queue == nil {
		return TableReport{}, errs.Invalid("Options.Queue", "a shard job enqueues its combine job: the archiver needs a queue")
	}
	plan, err := a.readPlan(ctx, job.Container, job.Table, job.Generation)
	if err != nil {
		return TableReport{}, noPlan(err, job.Table, job.Generation)
	}
	if job.Shard >= plan.shards() {
		return TableReport{}, fmt.Errorf("%w: shard %d of generation %s of %s: the plan has %d shards", ErrArchiveCorrupt, job.Shard, job.Generation, job.Table, plan.shards())
	}
	if m, err := a.readManifest(ctx, job.Container, job.Table, job.Generation); err == nil {
		return TableReport{Outcome: OutcomeAlreadyArchived, Manifest: m}, nil
	} else if !errors.Is(err, errs.ErrNotFound) {
		return TableReport{}, err
	}
	low, high := plan.shardRange(job.Shard)
	sm, err := a.readShardManifest(ctx, job.Container, job.Table, job.Generation, job.Shard, plan)
	switch {
	case err == nil:
		if err := a.shardDataExists(ctx, job.Container, sm); err != nil {
			return TableReport{}, err
		}
		return a.enqueueCombine(ctx, job, sm, OutcomeAlreadyArchived)
	case !errors.Is(err, errs.ErrNotFound):
		return TableReport{}, err
	}
	t, gone, err := a.openTable(ctx, job.ArchiveTableJob)
	if t == nil || err != nil {
		return gone, err
	}
	started := a.now().UTC()
	x := exportState{since: started.Add(-a.opts.ClockSkew), recent: recentSet{}, seal: seal}
	pm := Manifest{Format: ManifestFormat, Table: job.Table, Generation: job.Generation, DataBlob: shardDataName(job.Table, job.Generation, job.Shard)}
	uploaded, err := a.upload(ctx, t, repo.Query{FullMetadata: true, Filter: filter.PartitionRange(low, high)}, job.Container, &pm, &x)
	if err != nil {
		return TableReport{}, err
	}
	keep := false
	defer func() {
		if !keep {
			a.dropAbortedData(job.Container, pm.DataBlob)
		}
	}()
	if err := a.after("archive-table-shard", "exported"); err != nil {
		return TableReport{}, err
	}
	etag, err := a.readData(ctx, job.Container, pm, "", nil)
	if err != nil {
		return TableReport{}, err
	}
	if uploaded != "" && etag != uploaded {
		return TableReport{}, fmt.Errorf("%w: %s/%s changed between its upload and its check", ErrArchiveCorrupt, job.Container, pm.DataBlob)
	}
	// A new ETag just before the manifest: a sweep that listed the blob earlier cannot
	// delete it any more, and one whose delete came first makes this fail.
	if _, err := a.touchData(ctx, job.Container, pm.DataBlob, etag); err != nil {
		return TableReport{}, err
	}
	sm = ShardManifest{Format: ShardManifestFormat, Table: job.Table, Generation: job.Generation, Shard: job.Shard, Shards: plan.shards(),
		Low: low, High: high, Entities: pm.Entities, Partitions: pm.Partitions, Bytes: pm.Bytes, SHA256: pm.SHA256, Versions: pm.Versions,
		DataBlob: pm.DataBlob, ExportedAt: pm.ExportedAt}
	keep = true // from the first attempt on the shard manifest may exist: its data stays
	created, err := a.putOnce(ctx, job.Container, shardManifestName(job.Table, job.Generation, job.Shard), sm)
	if err != nil {
		return TableReport{}, err
	}
	if !created {
		stored, err := a.readShardManifest(ctx, job.Container, job.Table, job.Generation, job.Shard, plan)
		if err != nil {
			return TableReport{}, err
		}
		if stored != sm {
			// A concurrent duplicate's manifest stands; this attempt's data is nobody's.
			keep = false
			sm = stored
		}
	}
	if err := a.after("archive-table-shard", "manifest"); err != nil {
		return TableReport{}, err
	}
	a.opts.Logger.Info("table shard exported", zap.String("table", job.Table), zap.String("generation", job.Generation),
		zap.Int("shard", job.Shard), zap.Int64("entities", sm.Entities))
	return a.enqueueCombine(ctx, job, sm, OutcomeMoved)
}

// shardDataExists checks that the data blob a found shard manifest names is still there
// (one HEAD). Its absence is ErrArchiveCorrupt, a permanent failure: the shard manifest
// is never replaced, so the generation can never complete (its data was removed, by
// SweepAbortedExports with an olderThan shorter than the export, or by hand); the
// table is untouched and a new archive-table job archives it as a new generation.
func (a *Archiver) shardDataExists(ctx context.Context, container string, sm ShardManifest) error {
	bc := a.blobs().ServiceClient().NewContainerClient(container).NewBlobClient(sm.DataBlob)
	err := retry.Do(ctx, a.opts.Retry, retry.Op{Name: "check shard data", Resource: container}, func(ctx context.Context, _ int) error {
		_, err := bc.GetProperties(ctx, nil)
		return errs.Wrap(err, "check shard data", container, "", "")
	})
	if errors.Is(err, errs.ErrNotFound) {
		return fmt.Errorf("%w: shard %d of generation %s of %s is exported, but its data blob is gone: this generation cannot complete (the table is untouched: enqueue a new archive-table job): %w",
			ErrArchiveCorrupt, sm.Shard, sm.Generation, sm.Table, err)
	}
	return err
}

// checkShardJob validates a shard or combine job, checks it against the allowlists and
// the seal of its table (by the archiver's clock), without sending anything.
func (a *Archiver) checkShardJob(j interface{ Validate() error }, job ArchiveTableJob) (sealState, error) {
	if err := j.Validate(); err != nil {
		return sealState{}, err
	}
	if err := a.allowed(job.Table, "", job.Container); err != nil {
		return sealState{}, err
	}
	return a.checkSealed(job)
}

// noPlan turns a missing plan into ErrArchiveCorrupt: the plan is written before any
// shard or combine job is enqueued, so such a job is forged or its plan was removed.
func noPlan(err error, table, gen string) error {
	if errors.Is(err, errs.ErrNotFound) {
		return fmt.Errorf("%w: generation %s of %s has no plan: %w", ErrArchiveCorrupt, gen, table, err)
	}
	return err
}

// enqueueCombine enqueues the combine job of a shard's generation.
func (a *Archiver) enqueueCombine(ctx context.Context, job ShardJob, sm ShardManifest, out Outcome) (TableReport, error) {
	cj := CombineJob{ArchiveTableJob: job.ArchiveTableJob, Generation: job.Generation}
	if _, err := queueworker.Enqueue(ctx, a.opts.Queue, KindCombineShards, shardJobID(job.ArchiveTableJob, job.Generation, "combine"), cj, nil); err != nil {
		return TableReport{}, err
	}
	return TableReport{Outcome: out, Manifest: Manifest{Format: ManifestFormat, Table: job.Table, Generation: job.Generation,
		Entities: sm.Entities, Bytes: sm.Bytes, Shards: sm.Shards}}, nil
}

// CombineShards runs the combine job of a sharded export. When every shard manifest of
// the generation exists (else OutcomePending: nothing done), it scans the whole table
// with every property once, in key order, and requires each shard's range to hash to
// its shard manifest: the same versions (else ErrTableChanged: written since the shard
// read it) and the same content (else ErrArchiveCorrupt: a shard manifest that does not
// describe the table, forged); before that scan it reads every shard's data back,
// checks it against its shard manifest and touches it, after it touches it again; then
// it writes the generation's manifest (If-None-Match: *; one a concurrent combine wrote
// for the same content is taken as is), ordered and protected as ArchiveTable's
// (CheckedAt, data blobs touched If-Match), and deletes the table as ArchiveTable does
// (step 6). If another generation became the latest or the data changed before the
// delete, it finishes as ArchiveTable of the unsharded job would.
//
// Errors: ErrInvalidInput and ErrNotSealed (nothing sent), ErrNotAllowed,
// ErrArchiveCorrupt, ErrTableChanged, ErrNotSealed, ErrTransient, *repo.Error.
func (a *Archiver) CombineShards(ctx context.Context, job CombineJob) (TableReport, error) {
	seal, err := a.checkShardJob(job, job.ArchiveTableJob)
	if err != nil {
		return TableReport{}, err
	}
	plan, err := a.readPlan(ctx, job.Container, job.Table, job.Generation)
	if err != nil {
		return TableReport{}, noPlan(err, job.Table, job.Generation)
	}
	t, gone, err := a.openTable(ctx, job.ArchiveTableJob)
	if t == nil || err != nil {
		return gone, err
	}
	shards := make([]ShardManifest, plan.shards())
	for i := range shards {
		if shards[i], err = a.readShardManifest(ctx, job.Container, job.Table, job.Generation, i, plan); errors.Is(err, errs.ErrNotFound) {
			// Not exported yet (or removed): no manifest, no delete. The last shard's job
			// enqueues the combine again.
			a.opts.Logger.Info("combine: a shard is not exported yet", zap.String("table", job.Table), zap.String("generation", job.Generation), zap.Int("shard", i))
			return TableReport{Outcome: OutcomePending}, nil
		} else if err != nil {
			return TableReport{}, err
		}
	}
	m, refs, checkFrom, recent, err := a.combine(ctx, t, job, plan, shards, seal)
	if err != nil {
		return TableReport{}, err
	}
	if job.KeepTable {
		return TableReport{Outcome: OutcomeMoved, Manifest: m}, nil
	}
	if err := a.after("archive-table-combine", "before-delete"); err != nil {
		return TableReport{}, err
	}
	rep, done, err := a.deleteAfter(ctx, t, job.ArchiveTableJob, m, refs, checkFrom, recent)
	if archive.IsTableNotFound(err) {
		done, err = false, nil
	}
	if err != nil || done {
		return rep, err
	}
	// Another generation became the latest, or a concurrent combine touched the data:
	// check the table against the latest generation as a rerun of ArchiveTable does.
	a.opts.Logger.Info("combine: another generation or a concurrent combine came first: checking as an unsharded rerun", zap.String("table", job.Table), zap.String("generation", job.Generation))
	unsharded := job.ArchiveTableJob
	unsharded.Shards = 0
	return a.ArchiveTable(ctx, unsharded)
}

// combine proves the table holds exactly what the shards exported and writes the
// generation's manifest. It returns the manifest, the data blobs with their ETags after
// the touch, and the start of the check with the versions written since then (less
// ClockSkew), for deleteAfter.
func (a *Archiver) combine(ctx context.Context, t *repo.Table[codec.Entity], job CombineJob, plan ShardPlan, shards []ShardManifest, seal sealState) (Manifest, []dataRef, time.Time, recentSet, error) {
	// Order after every generation that exists before the check begins (see
	// exportGeneration).
	gens, err := a.listGenerations(ctx, job.Container, job.Table)
	if err != nil && !errors.Is(err, errs.ErrNotFound) {
		return Manifest{}, nil, time.Time{}, nil, err
	}
	// Every shard's data is read back against its shard manifest and touched before the
	// scan: a combine whose data is gone fails before it reads the whole table, and the
	// new Last-Modified keeps SweepAbortedExports off the generation while the scan runs.
	refs, err := a.verifyAndTouch(ctx, job.Container, shards)
	if err != nil {
		return Manifest{}, nil, time.Time{}, nil, err
	}
	checkFrom := a.now().UTC()
	recent := recentSet{}
	whole, per, err := a.scanShards(ctx, t, plan, seal, checkFrom.Add(-a.opts.ClockSkew), recent)
	if err != nil {
		return Manifest{}, nil, time.Time{}, nil, err
	}
	for i, s := range shards {
		d := per[i]
		if d.versions != s.Versions {
			return Manifest{}, nil, time.Time{}, nil, fmt.Errorf("%w: table %s: shard %d (%d entities) is not the version its export read (%d entities): not deleted, and not retried: something writes this table although it was declared sealed (or the shard manifest is forged)",
				ErrTableChanged, job.Table, i, d.entities, s.Entities)
		}
		if d.sha256 != s.SHA256 || d.bytes != s.Bytes || d.entities != s.Entities || d.partitions != s.Partitions {
			return Manifest{}, nil, time.Time{}, nil, fmt.Errorf("%w: table %s: the manifest of shard %d of generation %s does not describe the table's content (forged): not deleted",
				ErrArchiveCorrupt, job.Table, i, job.Generation)
		}
	}
	if err := a.after("archive-table-combine", "checked"); err != nil {
		return Manifest{}, nil, time.Time{}, nil, err
	}
	if refs, err = a.retouchShards(ctx, job.Container, shards, refs); err != nil {
		return Manifest{}, nil, time.Time{}, nil, err
	}
	key := nextKey(checkFrom, gens)
	if key.After(a.keyLimit()) {
		return Manifest{}, nil, time.Time{}, nil, fmt.Errorf("tablearchive: table %s: CheckedAt %s would be later than the clock allows: not written", job.Table, key.Format(time.RFC3339Nano))
	}
	m := Manifest{Format: ManifestFormat, Table: job.Table, Generation: job.Generation, Entities: whole.entities, Partitions: whole.partitions,
		Bytes: whole.bytes, SHA256: whole.sha256, Versions: whole.versions, ExportStarted: plan.Planned, CheckedAt: key.Format(time.RFC3339Nano),
		ExportedAt: a.now().UTC().Format("2006-01-02T15:04:05.0000000Z"), Sealed: seal.why, Shards: len(shards), ShardsSHA256: shardsDigest(shards)}
	created, err := a.putOnce(ctx, job.Container, ManifestBlobName(job.Table, job.Generation), m)
	if err != nil {
		return Manifest{}, nil, time.Time{}, nil, err
	}
	if !created {
		// A concurrent combine (or this one's earlier attempt) wrote it: take it when it
		// describes the same content.
		stored, err := a.readManifest(ctx, job.Container, job.Table, job.Generation)
		if err != nil {
			return Manifest{}, nil, time.Time{}, nil, err
		}
		if stored.Versions != m.Versions || stored.SHA256 != m.SHA256 || stored.Entities != m.Entities || stored.Bytes != m.Bytes ||
			stored.Shards != m.Shards || stored.ShardsSHA256 != m.ShardsSHA256 {
			return Manifest{}, nil, time.Time{}, nil, fmt.Errorf("%w: the manifest of generation %s of %s exists and describes other content", ErrArchiveCorrupt, job.Generation, job.Table)
		}
		m = stored
	}
	if err := a.after("archive-table-combine", "manifest"); err != nil {
		return Manifest{}, nil, time.Time{}, nil, err
	}
	a.opts.Logger.Info("table export combined", zap.String("table", job.Table), zap.String("generation", job.Generation),
		zap.Int("shards", len(shards)), zap.Int64("entities", m.Entities))
	return m, refs, checkFrom, recent, nil
}

// shardDigest is what a scan proves about one shard's range (or the whole table).
type shardDigest struct {
	tableDigest
	partitions int64
}

// scanShards scans every property of t once, in key order, and returns the digest of the
// whole table and of each shard's range of plan, recording in recent the versions
// written at or after since (see scanTable).
func (a *Archiver) scanShards(ctx context.Context, t *repo.Table[codec.Entity], plan ShardPlan, seal sealState, since time.Time, recent recentSet) (shardDigest, []shardDigest, error) {
	n := plan.shards()
	per := make([]shardDigest, n)
	var whole shardDigest
	wv, wc := sha256.New(), sha256.New()
	sv, sc := sha256.New(), sha256.New()
	cur := 0
	lastPK, shardPK := "", ""
	closeShard := func() {
		per[cur].versions = hex.EncodeToString(sv.Sum(nil))
		per[cur].sha256 = hex.EncodeToString(sc.Sum(nil))
		sv.Reset()
		sc.Reset()
	}
	for e, err := range t.Query(ctx, repo.Query{FullMetadata: true}) {
		if err != nil {
			return shardDigest{}, nil, err
		}
		if err := seal.checkClaim(t.Name(), &e); err != nil {
			return shardDigest{}, nil, err
		}
		for cur < n-1 && e.PartitionKey >= plan.Bounds[cur] {
			closeShard()
			cur++
		}
		if whole.entities > 0 && e.PartitionKey < lastPK {
			return shardDigest{}, nil, fmt.Errorf("tablearchive: table %s: the service returned partition keys out of order", t.Name())
		}
		addVersion(wv, e.PartitionKey, e.RowKey, e.ETag)
		addVersion(sv, e.PartitionKey, e.RowKey, e.ETag)
		if !e.Timestamp.Before(since) {
			if err := recent.add(a.maxRecent(), t.Name(), e.PartitionKey, e.RowKey, e.ETag); err != nil {
				return shardDigest{}, nil, err
			}
		}
		line, err := exportLine(&e)
		if err != nil {
			return shardDigest{}, nil, err
		}
		_, _ = wc.Write(line)
		_, _ = sc.Write(line)
		s := &per[cur]
		if s.entities == 0 || e.PartitionKey != shardPK {
			s.partitions++
			shardPK = e.PartitionKey
		}
		if whole.entities == 0 || e.PartitionKey != lastPK {
			whole.partitions++
			lastPK = e.PartitionKey
		}
		s.entities++
		s.bytes += int64(len(line))
		whole.entities++
		whole.bytes += int64(len(line))
	}
	for ; cur < n; cur++ {
		closeShard()
	}
	whole.versions = hex.EncodeToString(wv.Sum(nil))
	whole.sha256 = hex.EncodeToString(wc.Sum(nil))
	return whole, per, nil
}

// verifyAndTouch reads every shard's data back, checks it against its shard manifest,
// and then sets each blob's metadata If-Match the ETag checked (new ETags just before
// the manifest, see exportGeneration). A concurrent combine touching the same blobs
// makes a touch fail with 412: the data is read and checked again (at most three
// times).
func (a *Archiver) verifyAndTouch(ctx context.Context, container string, shards []ShardManifest) ([]dataRef, error) {
	for attempt := 1; ; attempt++ {
		refs, err := a.verifyParts(ctx, container, shards)
		if err != nil {
			return nil, err
		}
		for i := range refs {
			if refs[i].etag, err = a.touchData(ctx, container, refs[i].name, refs[i].etag); err != nil {
				break
			}
		}
		if err == nil || !errors.Is(err, errs.ErrPreconditionFailed) || attempt == 3 {
			return refs, err
		}
	}
}

// retouchShards touches every shard's data again, If-Match the ETag of its touch before
// the scan, just before the manifest (see exportGeneration). A concurrent combine's
// touch in between (412) makes it read the data again (verifyAndTouch); data gone since
// is ErrArchiveCorrupt.
func (a *Archiver) retouchShards(ctx context.Context, container string, shards []ShardManifest, refs []dataRef) ([]dataRef, error) {
	for i := range refs {
		etag, err := a.touchData(ctx, container, refs[i].name, refs[i].etag)
		switch {
		case errors.Is(err, errs.ErrPreconditionFailed):
			return a.verifyAndTouch(ctx, container, shards)
		case errors.Is(err, errs.ErrNotFound):
			return nil, fmt.Errorf("%w: the data of shard %d of generation %s of %s is gone after its check: %w",
				ErrArchiveCorrupt, i, shards[i].Generation, shards[i].Table, err)
		case err != nil:
			return nil, err
		}
		refs[i].etag = etag
	}
	return refs, nil
}

// dataRef is one data blob of a generation and the ETag of the content checked.
type dataRef struct {
	name string
	etag azcore.ETag
}

// verifyParts reads the data of each shard and checks it against its shard manifest
// (shardParallel at once).
func (a *Archiver) verifyParts(ctx context.Context, container string, shards []ShardManifest) ([]dataRef, error) {
	refs := make([]dataRef, len(shards))
	err := fanout.Do(ctx, len(shards), shardParallel, func(ctx context.Context, i int) error {
		etag, err := a.readData(ctx, container, shards[i].part(), "", nil)
		refs[i] = dataRef{name: shards[i].DataBlob, etag: etag}
		return err
	})
	if err != nil {
		return nil, err
	}
	return refs, nil
}

// generationParts returns the data of generation m as Manifests that readData checks
// each blob against: m itself when it is not sharded; else its shard manifests, read
// and validated (contiguous ranges from the first key to the last, each data blob in
// the generation's folder), bound to m by ShardsSHA256, and adding up to m's counts.
func (a *Archiver) generationParts(ctx context.Context, container string, m Manifest) ([]Manifest, error) {
	if m.Shards == 0 {
		return []Manifest{m}, nil
	}
	shards, err := a.readShards(ctx, container, m)
	if err != nil {
		return nil, err
	}
	parts := make([]Manifest, len(shards))
	for i, s := range shards {
		parts[i] = s.part()
	}
	return parts, nil
}

// readShards reads and checks the shard manifests of a sharded generation m.
func (a *Archiver) readShards(ctx context.Context, container string, m Manifest) ([]ShardManifest, error) {
	shards := make([]ShardManifest, m.Shards)
	var entities, bytes int64
	for i := range shards {
		var s ShardManifest
		err := a.readJSON(ctx, container, shardManifestName(m.Table, m.Generation, i), manifestLimit, &s)
		if errors.Is(err, errs.ErrNotFound) {
			return nil, fmt.Errorf("%w: shard %d of generation %s of %s is missing: %w", ErrArchiveCorrupt, i, m.Generation, m.Table, err)
		}
		if err != nil {
			return nil, err
		}
		low := ""
		if i > 0 {
			low = shards[i-1].High
			if low == "" {
				return nil, fmt.Errorf("%w: shard %d of generation %s of %s follows the last shard", ErrArchiveCorrupt, i, m.Generation, m.Table)
			}
		}
		high := s.High
		if i == len(shards)-1 {
			high = ""
		} else if high <= low {
			return nil, fmt.Errorf("%w: shard %d of generation %s of %s has an empty range", ErrArchiveCorrupt, i, m.Generation, m.Table)
		}
		if err := s.validate(m.Table, m.Generation, i, m.Shards, low, high); err != nil {
			return nil, err
		}
		shards[i] = s
		entities += s.Entities
		bytes += s.Bytes
	}
	if shardsDigest(shards) != m.ShardsSHA256 || entities != m.Entities || bytes != m.Bytes {
		return nil, fmt.Errorf("%w: the shard manifests of generation %s of %s are not those its manifest binds", ErrArchiveCorrupt, m.Generation, m.Table)
	}
	return shards, nil
}

// verifyGeneration reads every data blob of generation m and checks it against m (or
// its shard manifests, generationParts), and returns the blobs with the ETags of the
// content checked.
func (a *Archiver) verifyGeneration(ctx context.Context, container string, m Manifest) ([]dataRef, error) {
	if m.Shards == 0 {
		etag, err := a.verifyDataETag(ctx, container, m)
		if err != nil {
			return nil, err
		}
		return []dataRef{{name: m.DataBlob, etag: etag}}, nil
	}
	parts, err := a.generationParts(ctx, container, m)
	if err != nil {
		return nil, err
	}
	return a.verifyShards(ctx, container, m, parts, nil, nil)
}

// verifyShards reads the data of every shard of the sharded generation m (parts, in
// shard order; from the snapshots snaps when not nil), checks each against its shard
// manifest, and requires the lines of all of them, in order, to hash to m's own SHA256.
// The shard manifests are bound to m only by ShardsSHA256 and sums, which anyone with
// write access to the container can recompute over forged shards; m's SHA256 is the
// table-wide checksum that a rerun compares with the table itself (holds), so this ties
// the data, not only the manifests, to the table, as an unsharded generation's data is
// tied by its own SHA256. SHA-256 does not combine: the shards are read one after
// another.
func (a *Archiver) verifyShards(ctx context.Context, container string, m Manifest, parts []Manifest, snaps []string, fn func(*codec.Entity) error) ([]dataRef, error) {
	whole := sha256.New()
	refs := make([]dataRef, len(parts))
	for i, p := range parts {
		snap := ""
		if snaps != nil {
			snap = snaps[i]
		}
		etag, err := a.readDataTo(ctx, container, p, snap, fn, whole)
		if err != nil {
			return nil, err
		}
		refs[i] = dataRef{name: p.DataBlob, etag: etag}
	}
	if got := hex.EncodeToString(whole.Sum(nil)); got != m.SHA256 {
		return nil, fmt.Errorf("%w: the data of the %d shards of generation %s of %s, in order, is not the export its manifest describes (sha256 %s, the manifest says %s)",
			ErrArchiveCorrupt, len(parts), m.Generation, m.Table, got, m.SHA256)
	}
	return refs, nil
}

// readPlan reads and validates a generation's plan.
func (a *Archiver) readPlan(ctx context.Context, container, table, gen string) (ShardPlan, error) {
	var p ShardPlan
	if err := a.readJSON(ctx, container, planBlobName(table, gen), 256<<10, &p); err != nil {
		return ShardPlan{}, err
	}
	return p, p.validate(table, gen)
}

// readShardManifest reads shard i's manifest and checks it against plan.
func (a *Archiver) readShardManifest(ctx context.Context, container, table, gen string, i int, plan ShardPlan) (ShardManifest, error) {
	var s ShardManifest
	if err := a.readJSON(ctx, container, shardManifestName(table, gen, i), manifestLimit, &s); err != nil {
		return ShardManifest{}, err
	}
	low, high := plan.shardRange(i)
	return s, s.validate(table, gen, i, plan.shards(), low, high)
}

// manifestLimit is the size of the largest manifest or shard manifest read back (this
// package writes them far smaller).
const manifestLimit = 64 << 10

// readJSON downloads a small JSON blob (at most limit bytes) into v: the one download
// path of the export's metadata (manifests, shard manifests, plans). A missing blob is
// errs.ErrNotFound; one larger than limit (never decoded from a prefix) or that does
// not decode is ErrArchiveCorrupt.
func (a *Archiver) readJSON(ctx context.Context, container, name string, limit int64, v any) error {
	return retry.Do(ctx, a.opts.Retry, retry.Op{Name: "download export metadata", Resource: container}, func(ctx context.Context, _ int) error {
		resp, err := a.blobs().DownloadStream(ctx, container, name, nil)
		if err != nil {
			return errs.Wrap(err, "download export metadata", container, "", "")
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
		if err != nil {
			return errs.Wrap(err, "download export metadata", container, "", "")
		}
		if int64(len(body)) > limit {
			return fmt.Errorf("%w: %s/%s is larger than %d bytes", ErrArchiveCorrupt, container, name, limit)
		}
		if err := json.Unmarshal(body, v); err != nil {
			return fmt.Errorf("%w: %s/%s: %v", ErrArchiveCorrupt, container, name, err)
		}
		return nil
	})
}

// putOnce creates a small JSON blob with If-None-Match: *. created is false when the
// blob existed (written by someone else, or by this call's earlier attempt whose
// response was lost): the caller reads it and decides.
func (a *Archiver) putOnce(ctx context.Context, container, name string, v any) (created bool, err error) {
	body, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return false, err
	}
	opts := &azblob.UploadBufferOptions{AccessConditions: &blob.AccessConditions{ModifiedAccessConditions: &blob.ModifiedAccessConditions{IfNoneMatch: ptrTo(azcore.ETagAny)}}}
	err = retry.Do(ctx, a.opts.Retry, retry.Op{Name: "upload export metadata", Resource: container}, func(ctx context.Context, _ int) error {
		_, err := a.blobs().UploadBuffer(ctx, container, name, body, opts)
		return errs.Wrap(err, "upload export metadata", container, "", "")
	})
	if errors.Is(err, errs.ErrAlreadyExists) {
		return false, nil
	}
	return err == nil, err
}
