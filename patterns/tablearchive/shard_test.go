package tablearchive

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/internal/testenv"
	"github.com/tablepatterns/tablepatterns/queueworker"
	"github.com/tablepatterns/tablepatterns/repo"
	"github.com/tablepatterns/tablepatterns/repo/filter"
)

// shardBed is a bed whose archiver enqueues shard and combine jobs on a fresh queue,
// and a worker that runs them.
type shardBed struct {
	*bed
	// container is the test's archive container; want, what Current held at the start.
	container string
	want      map[string]*codec.Entity
	queue     *azqueue.QueueClient
	client    *queueworker.Client
	worker    *queueworker.Worker
}

func setupShards(t *testing.T, n int) *shardBed {
	t.Helper()
	return setupShardsAt(t, "", n)
}

// setupShardsPaged is setupShards through a proxy that pages every query at 100
// entities: scans of a few hundred entities span several pages, as the service's scans
// of thousands do at 1,000.
func setupShardsPaged(t *testing.T, n int) *shardBed {
	t.Helper()
	ps := testenv.Proxies(t)
	ps.Table.EmulatePaging(100, false)
	return setupShardsAt(t, ps.ConnectionString, n)
}

// setupShardsAt is setupShards on the connection string cs (a proxied one), with n
// sign-ins in Current (when n > 0).
func setupShardsAt(t *testing.T, cs string, n int) *shardBed {
	t.Helper()
	b := setup(t, cs)
	name := testenv.QueueName(t)
	sb := &shardBed{bed: b, queue: b.clients.Queues.NewQueueClient(name), container: testenv.ContainerName(t)}
	if n > 0 {
		sb.want = signIns(t, b, b.current, n)
	}
	// The worker runs b.a, which enqueues on the worker's own queue.
	sb.worker, sb.client = newWorker(t, b, name, b.a)
	b.a.opts.Queue = sb.client
	return sb
}

// archiver returns an archiver of the bed's account with the bed's queue; step, when
// set, is its step hook.
func (sb *shardBed) archiver(t *testing.T, step func(job, step string) error) *Archiver {
	t.Helper()
	a, err := New(sb.clients, &Options{Retry: fastRetry(), Queue: sb.client})
	if err != nil {
		t.Fatal(err)
	}
	a.seams.step = step
	return a
}

// queued is the approximate number of messages on the bed's queue.
func (sb *shardBed) queued(t *testing.T) int32 {
	t.Helper()
	p, err := sb.queue.GetProperties(sb.ctx, nil)
	if err != nil || p.ApproximateMessagesCount == nil {
		t.Fatalf("queue properties: %v", err)
	}
	return *p.ApproximateMessagesCount
}

// exportShards plans a sharded export of the bed's Current table into container and
// exports every shard (in this process, in order), and returns the job and the plan.
func (sb *shardBed) exportShards(t *testing.T, container string, shards int) (CombineJob, ShardPlan) {
	t.Helper()
	job := ArchiveTableJob{Table: sb.current.Name(), Container: container, Sealed: true, Shards: shards}
	gen := sb.plan(t, job)
	plan, err := sb.a.readPlan(sb.ctx, container, job.Table, gen)
	if err != nil {
		t.Fatal(err)
	}
	for i := range plan.shards() {
		if rep, err := sb.a.ExportShard(sb.ctx, ShardJob{ArchiveTableJob: job, Generation: gen, Shard: i}); err != nil || rep.Outcome != OutcomeMoved {
			t.Fatalf("shard %d: %+v %v", i, rep, err)
		}
	}
	return CombineJob{ArchiveTableJob: job, Generation: gen}, plan
}

// assertRestored restores generation (of table in container) into a new table and
// requires exactly want.
func assertRestored(t *testing.T, b *bed, container, table, generation string, want map[string]*codec.Entity) {
	t.Helper()
	back := b.newTable(t, "Back")
	rep, err := b.a.RestoreTable(b.ctx, RestoreTableJob{Table: table, Container: container, Target: back.Name(), Generation: generation})
	if err != nil || rep.Outcome != OutcomeRestored {
		t.Fatalf("restore: %+v %v", rep, err)
	}
	assertTableHolds(t, b, back, want)
}

// assertTableHolds requires tb to hold exactly want (keys "pk/rk"), every property.
func assertTableHolds(t *testing.T, b *bed, tb *repo.Table[codec.Entity], want map[string]*codec.Entity) {
	t.Helper()
	got, err := tb.Collect(b.ctx, repo.Query{})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("restored %d entities, want %d", len(got), len(want))
	}
	for _, g := range got {
		w := want[g.PartitionKey+"/"+g.RowKey]
		if w == nil {
			t.Fatalf("restored an entity that was not archived: %s/%s", g.PartitionKey, g.RowKey)
		}
		for k, v := range w.Properties {
			gv := g.Properties[k]
			if tv, ok := v.(time.Time); ok {
				gt, ok := gv.(time.Time)
				if ok && gt.Equal(tv) {
					continue
				}
			} else if reflect.DeepEqual(gv, v) {
				continue
			}
			t.Fatalf("%s %s: %#v, want %#v", g.RowKey, k, gv, v)
		}
	}
}

// holdBoth returns a step hook that holds the first two archivers reaching step of job
// until both are there. One that never comes hangs the test until go test -timeout, whose
// goroutine dump shows the archiver held here: a fixed deadline is one load can miss.
func holdBoth(job, step string) func(string, string) error {
	var arrived sync.WaitGroup
	arrived.Add(2)
	both := make(chan struct{})
	go func() { arrived.Wait(); close(both) }()
	return func(j, s string) error {
		if j != job || s != step {
			return nil
		}
		arrived.Done()
		<-both
		return nil
	}
}

// crashAt returns a step hook that stops every job at step of job, as a kill would.
func crashAt(job, step string) func(string, string) error {
	return func(j, s string) error {
		if j == job && s == step {
			return errCrash
		}
		return nil
	}
}

// plan plans a sharded export of the bed's Current table as a new generation.
func (sb *shardBed) plan(t *testing.T, job ArchiveTableJob) string {
	t.Helper()
	gen := newGeneration(time.Now())
	if rep, err := sb.a.archiveTable(sb.ctx, job, gen); err != nil || rep.Outcome != OutcomeSharded {
		t.Fatalf("plan: %+v %v", rep, err)
	}
	return gen
}

// assertArchivedOnce requires Current gone, gen its one generation, and a restore of it
// to give back what Current held.
func (sb *shardBed) assertArchivedOnce(t *testing.T, gen string) {
	t.Helper()
	if ok, err := sb.current.Exists(sb.ctx); err != nil || ok {
		t.Fatalf("the table still exists (%v)", err)
	}
	gens, err := sb.a.Generations(sb.ctx, sb.container, sb.current.Name())
	if err != nil || len(gens) != 1 || gens[0] != gen {
		t.Fatalf("generations %v (%v), want [%s]", gens, err, gen)
	}
	assertRestored(t, sb.bed, sb.container, sb.current.Name(), GenerationLatest, sb.want)
}

// planned plans a sharded export of Current (declared sealed) into the bed's container.
func (sb *shardBed) planned(t *testing.T, shards int) (ArchiveTableJob, string) {
	t.Helper()
	job := ArchiveTableJob{Table: sb.current.Name(), Container: sb.container, Sealed: true, Shards: shards}
	return job, sb.plan(t, job)
}

// archivedKept archives the bed's Current table as one sharded generation of shards
// shards (planned, exported and combined in this process) and keeps the table; it
// returns the combine job and the generation's manifest.
func (sb *shardBed) archivedKept(t *testing.T, shards int) (CombineJob, Manifest) {
	t.Helper()
	cj, _ := sb.exportShards(t, sb.container, shards)
	cj.KeepTable = true
	return cj, sb.combined(t, cj).Manifest
}

// combined runs a combine that must archive the table.
func (sb *shardBed) combined(t *testing.T, cj CombineJob) TableReport {
	t.Helper()
	rep, err := sb.a.CombineShards(sb.ctx, cj)
	if err != nil || rep.Outcome != OutcomeMoved {
		t.Fatalf("combine: %+v %v", rep, err)
	}
	return rep
}

// A sharded archive through the worker: the archive-table job plans the shards, the
// shard jobs export them, the combine writes the manifest and deletes the table; the
// manifest is the one an unsharded export writes (same counts and checksums), and a
// restore gives back exactly the table.
func TestShardedArchiveThroughTheWorker(t *testing.T) {
	t.Parallel()
	// 300 sign-ins in pages of 100: the unsharded export and the scans span several
	// pages, the 3 shards take whole partitions of the 7 (2,300 under make soak).
	n := testenv.Scale(300, 2300)
	sb := setupShardsPaged(t, n)
	container, want := sb.container, sb.want

	// The unsharded export of the same table, for comparison (kept: KeepTable).
	unsharded, err := sb.a.ArchiveTable(sb.ctx, ArchiveTableJob{Table: sb.current.Name(), Container: container, Sealed: true, KeepTable: true})
	if err != nil {
		t.Fatal(err)
	}
	w := sb.worker
	job := ArchiveTableJob{Table: sb.current.Name(), Container: container, Sealed: true, Shards: 3}
	if err := EnqueueArchiveTable(sb.ctx, sb.client, job); err != nil {
		t.Fatal(err)
	}
	drain(t, w)
	if s := w.Stats(); s.Poisoned != 0 {
		t.Fatalf("poisoned jobs: %+v", s)
	}
	if ok, err := sb.current.Exists(sb.ctx); err != nil || ok {
		t.Fatalf("the table still exists: %v %v", ok, err)
	}
	m, err := sb.a.ReadManifest(sb.ctx, container, sb.current.Name())
	if err != nil {
		t.Fatal(err)
	}
	u := unsharded.Manifest
	if m.Shards != 3 || m.Entities != int64(n) || m.Partitions != 7 || m.SHA256 != u.SHA256 || m.Versions != u.Versions || m.Bytes != u.Bytes || m.DataBlob != "" {
		t.Fatalf("sharded manifest %+v, unsharded %+v", m, u)
	}
	gens, err := sb.a.Generations(sb.ctx, container, sb.current.Name())
	if err != nil || len(gens) != 2 || gens[0] != u.Generation || gens[1] != m.Generation {
		t.Fatalf("generations %v (%v), want the unsharded then the sharded one", gens, err)
	}
	assertRestored(t, sb.bed, container, sb.current.Name(), GenerationLatest, want)
	assertRestored(t, sb.bed, container, sb.current.Name(), GenerationAll, want)
	// A replay of the job: the table is gone, a generation exists.
	if rep, err := sb.a.ArchiveTable(sb.ctx, job); err != nil || rep.Outcome != OutcomeAlreadyArchived {
		t.Fatalf("replay: %+v %v", rep, err)
	}
}

// The bounds come from a keys-only scan: about equal counts, partitions never split,
// fewer shards than asked when there are fewer partitions.
func TestShardBoundsBalanceWholePartitions(t *testing.T) {
	t.Parallel()
	sb := setupShards(t, 0)
	if got, err := sb.a.shardBounds(sb.ctx, sb.current, 4); err != nil || len(got) != 0 {
		t.Fatalf("bounds of an empty table: %v (%v), want none (one shard)", got, err)
	}
	items := make([]*codec.Entity, 0, 1200)
	for p := range 12 {
		for r := range 100 {
			items = append(items, &codec.Entity{PartitionKey: fmt.Sprintf("p%02d", p), RowKey: fmt.Sprintf("%03d", r)})
		}
	}
	if err := sb.current.BulkWrite(sb.ctx, items, nil); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		n    int
		want []string
	}{
		{2, []string{"p06"}},
		{4, []string{"p03", "p06", "p09"}},
		{5, []string{"p03", "p05", "p08", "p10"}},
		{40, []string{"p01", "p02", "p03", "p04", "p05", "p06", "p07", "p08", "p09", "p10", "p11"}},
	} {
		got, err := sb.a.shardBounds(sb.ctx, sb.current, c.n)
		if err != nil || !reflect.DeepEqual(got, c.want) {
			t.Errorf("%d shards: %v (%v), want %v", c.n, got, err, c.want)
		}
	}
}

// Killed between its shard manifest and the enqueue of the combine: the table stays,
// and the rerun of that shard job enqueues the combine, which deletes it.
func TestShardKilledBetweenManifestAndCombine(t *testing.T) {
	t.Parallel()
	sb := setupShards(t, 140)
	job, gen := sb.planned(t, 3)
	for i := range 2 {
		if _, err := sb.a.ExportShard(sb.ctx, ShardJob{ArchiveTableJob: job, Generation: gen, Shard: i}); err != nil {
			t.Fatal(err)
		}
	}
	cj := CombineJob{ArchiveTableJob: job, Generation: gen}
	if rep, err := sb.a.CombineShards(sb.ctx, cj); err != nil || rep.Outcome != OutcomePending {
		t.Fatalf("combine before the last shard: %+v %v", rep, err)
	}
	before := sb.queued(t)
	killed := sb.archiver(t, crashAt("archive-table-shard", "manifest"))
	last := ShardJob{ArchiveTableJob: job, Generation: gen, Shard: 2}
	if _, err := killed.ExportShard(sb.ctx, last); !errors.Is(err, errCrash) {
		t.Fatalf("killed shard: %v", err)
	}
	if n := sb.queued(t); n != before {
		t.Fatalf("the killed shard enqueued a combine: %d messages, %d before", n, before)
	}
	if ok, _ := sb.current.Exists(sb.ctx); !ok {
		t.Fatal("the table is gone before any combine ran")
	}
	if rep, err := sb.a.ExportShard(sb.ctx, last); err != nil || rep.Outcome != OutcomeAlreadyArchived {
		t.Fatalf("rerun of the killed shard: %+v %v", rep, err)
	}
	if n := sb.queued(t); n != before+1 {
		t.Fatalf("the rerun did not enqueue the combine: %d messages, %d before", n, before)
	}
	if rep := sb.combined(t, cj); rep.Manifest.Entities != 140 {
		t.Fatalf("combine: %+v", rep)
	}
	sb.assertArchivedOnce(t, gen)
}

// Two combines at once, both held after their checks until both got there: both
// succeed, one manifest is written, the table is deleted once, and the archive is whole.
func TestTwoCombinesAtOnce(t *testing.T) {
	t.Parallel()
	sb := setupShardsPaged(t, 300) // each combine's scan spans pages
	cj, _ := sb.exportShards(t, sb.container, 4)
	hold := holdBoth("archive-table-combine", "checked")
	a1, a2 := sb.archiver(t, hold), sb.archiver(t, hold)
	var wg sync.WaitGroup
	reps := make([]TableReport, 2)
	errsOut := make([]error, 2)
	for i, a := range []*Archiver{a1, a2} {
		wg.Go(func() { reps[i], errsOut[i] = a.CombineShards(sb.ctx, cj) })
	}
	wg.Wait()
	for i := range 2 {
		if errsOut[i] != nil || (reps[i].Outcome != OutcomeMoved && reps[i].Outcome != OutcomeAlreadyArchived) {
			t.Fatalf("combine %d: %+v %v", i, reps[i], errsOut[i])
		}
	}
	sb.assertArchivedOnce(t, cj.Generation)
}

// A writer updates an entity of a shard's range while that shard exports (after its
// data is uploaded, before its manifest): the combine finds the table changed and
// deletes nothing, as an unsharded export does; the handler does not retry it.
func TestWriterDuringShardExport(t *testing.T) {
	t.Parallel()
	sb := setupShards(t, 140)
	job, gen := sb.planned(t, 3)
	plan, err := sb.a.readPlan(sb.ctx, sb.container, job.Table, gen)
	if err != nil || plan.shards() != 3 {
		t.Fatalf("plan %+v %v", plan, err)
	}
	low, _ := plan.shardRange(1)
	writer := sb.archiver(t, func(j, step string) error {
		if j == "archive-table-shard" && step == "exported" {
			got, err := sb.current.Collect(sb.ctx, repo.Query{Top: 1, Filter: filter.PartitionRange(low, "")})
			if err != nil || len(got) != 1 {
				return fmt.Errorf("no entity in shard 1: %v", err)
			}
			got[0].Properties["IP"] = "written during the export"
			return sb.current.Update(sb.ctx, &got[0], nil)
		}
		return nil
	})
	for i := range 3 {
		a := sb.a
		if i == 1 {
			a = writer
		}
		if _, err := a.ExportShard(sb.ctx, ShardJob{ArchiveTableJob: job, Generation: gen, Shard: i}); err != nil {
			t.Fatalf("shard %d: %v", i, err)
		}
	}
	_, err = sb.a.CombineShards(sb.ctx, CombineJob{ArchiveTableJob: job, Generation: gen})
	if !errors.Is(err, ErrTableChanged) || !permanent(err) {
		t.Fatalf("combine after a write: %v, want ErrTableChanged", err)
	}
	if ok, _ := sb.current.Exists(sb.ctx); !ok {
		t.Fatal("a changed table was deleted")
	}
	if _, err := sb.a.readManifest(sb.ctx, sb.container, job.Table, gen); !errors.Is(err, repo.ErrNotFound) {
		t.Fatalf("a manifest was written for a changed table: %v", err)
	}
}

// Someone with write access to the sb.container replaces a shard's manifest and data
// with forged content whose manifest copies the genuine Versions (keys and ETags), or
// removes a shard manifest, or forges the plan: no delete.
func TestForgedOrMissingShardKeepsTable(t *testing.T) {
	t.Parallel()
	sb := setupShards(t, 140)
	container, want := sb.container, sb.want
	cj, plan := sb.exportShards(t, container, 3)
	table := sb.current.Name()
	genuine, err := sb.a.readShardManifest(sb.ctx, container, table, cj.Generation, 1, plan)
	if err != nil {
		t.Fatal(err)
	}

	// Missing: no manifest, nothing deleted, pending.
	blobs := sb.clients.Blobs
	name := shardManifestName(table, cj.Generation, 2)
	saved := download(t, sb.bed, container, name)
	if _, err := blobs.DeleteBlob(sb.ctx, container, name, nil); err != nil {
		t.Fatal(err)
	}
	if rep, err := sb.a.CombineShards(sb.ctx, cj); err != nil || rep.Outcome != OutcomePending {
		t.Fatalf("combine with a shard missing: %+v %v", rep, err)
	}
	upload(t, sb.bed, container, name, saved)

	// Forged: content that is not the table's, described by a self-consistent manifest
	// with the genuine Versions.
	lines := []byte{}
	var entities, bytes int64
	low, high := plan.shardRange(1)
	for e, err := range sb.current.Query(sb.ctx, repo.Query{Filter: filter.PartitionRange(low, high)}) {
		if err != nil {
			t.Fatal(err)
		}
		line, err := exportLine(&codec.Entity{PartitionKey: e.PartitionKey, RowKey: e.RowKey, Properties: map[string]any{"Tag": "forged"}})
		if err != nil {
			t.Fatal(err)
		}
		lines = append(lines, line...)
		entities++
		bytes += int64(len(line))
	}
	forged := genuine
	forged.DataBlob = strings.TrimSuffix(genuine.DataBlob, genuine.DataBlob[len(genuine.DataBlob)-len("00000000.jsonl.gz"):]) + "0badf00d.jsonl.gz"
	forged.Entities, forged.Bytes, forged.SHA256 = entities, bytes, sha256Hex(lines)
	upload(t, sb.bed, container, forged.DataBlob, gzipBytes(t, lines))
	upload(t, sb.bed, container, shardManifestName(table, cj.Generation, 1), jsonBytes(t, forged))
	_, err = sb.a.CombineShards(sb.ctx, cj)
	if !errors.Is(err, ErrArchiveCorrupt) || !permanent(err) {
		t.Fatalf("combine with a forged shard: %v, want ErrArchiveCorrupt", err)
	}
	if ok, _ := sb.current.Exists(sb.ctx); !ok {
		t.Fatal("the table was deleted on the strength of a forged shard")
	}

	// Forged jobs: a shard the plan does not have, a generation without a plan.
	if _, err := sb.a.ExportShard(sb.ctx, ShardJob{ArchiveTableJob: cj.ArchiveTableJob, Generation: cj.Generation, Shard: 3}); !errors.Is(err, ErrArchiveCorrupt) {
		t.Fatalf("a shard beyond the plan: %v", err)
	}
	noPlanGen := newGeneration(time.Now())
	if _, err := sb.a.CombineShards(sb.ctx, CombineJob{ArchiveTableJob: cj.ArchiveTableJob, Generation: noPlanGen}); !errors.Is(err, ErrArchiveCorrupt) || !permanent(err) {
		t.Fatalf("a combine without a plan: %v", err)
	}

	// A forged plan (bounds out of order) is refused before the table is read.
	bad := plan
	bad.Bounds = []string{plan.Bounds[1], plan.Bounds[0]}
	upload(t, sb.bed, container, planBlobName(table, cj.Generation), jsonBytes(t, bad))
	if _, err := sb.a.CombineShards(sb.ctx, cj); !errors.Is(err, ErrArchiveCorrupt) {
		t.Fatalf("combine with a forged plan: %v", err)
	}
	upload(t, sb.bed, container, planBlobName(table, cj.Generation), jsonBytes(t, plan))

	// Put back as it was: the combine archives it.
	upload(t, sb.bed, container, shardManifestName(table, cj.Generation, 1), jsonBytes(t, genuine))
	sb.combined(t, cj)
	assertRestored(t, sb.bed, container, table, GenerationLatest, want)
}

// The rerun path of an unsharded job checks the table against a sharded latest
// generation (every shard's data read back) and deletes it; the sweep removes the data
// of a sharded generation that has no manifest, and the orphan data of an attempt no
// shard manifest names, and keeps the rest.
func TestShardedGenerationRerunAndSweep(t *testing.T) {
	t.Parallel()
	sb := setupShards(t, 140)
	container, want := sb.container, sb.want
	table := sb.current.Name()
	cj, _ := sb.exportShards(t, container, 2)
	cj.KeepTable = true
	sb.combined(t, cj)
	// An aborted sharded generation, and an orphan attempt in the complete one.
	aborted := newGeneration(time.Now())
	abortedData := shardDataName(table, aborted, 0)
	upload(t, sb.bed, container, abortedData, gzipBytes(t, []byte("{}\n")))
	orphan := shardDataName(table, cj.Generation, 1)
	upload(t, sb.bed, container, orphan, gzipBytes(t, []byte("{}\n")))
	sweeper := sb.archiver(t, nil)
	sweeper.seams.serviceAhead = 2 * time.Hour
	swept, err := sweeper.SweepAbortedExports(sb.ctx, container, table, time.Hour, false)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{abortedData, orphan}; !sameSet(swept, want) {
		t.Fatalf("swept %v, want %v", swept, want)
	}
	rep, err := sb.a.ArchiveTable(sb.ctx, ArchiveTableJob{Table: table, Container: container, Sealed: true})
	if err != nil || rep.Outcome != OutcomeMoved || rep.Manifest.Generation != cj.Generation {
		t.Fatalf("unsharded rerun: %+v %v", rep, err)
	}
	if ok, _ := sb.current.Exists(sb.ctx); ok {
		t.Fatal("the table survived")
	}
	assertRestored(t, sb.bed, container, table, GenerationAll, want)
}

// Bad sharded jobs are refused before any request.
func TestShardedJobsRefusedWithoutRequest(t *testing.T) {
	t.Parallel()
	ps := testenv.Proxies(t)
	b := setup(t, ps.ConnectionString)
	mark := ps.Table.Count() + ps.Blob.Count() + ps.Queue.Count()
	base := ArchiveTableJob{Table: "SignIns20240601", Container: "cold", Sealed: true}
	for name, err := range map[string]error{
		"too many shards": func() error { j := base; j.Shards = MaxShards + 1; _, err := b.a.ArchiveTable(b.ctx, j); return err }(),
		"negative shards": func() error { j := base; j.Shards = -1; _, err := b.a.ArchiveTable(b.ctx, j); return err }(),
		"no queue":        func() error { j := base; j.Shards = 3; _, err := b.a.ArchiveTable(b.ctx, j); return err }(),
		"bad generation": func() error {
			_, err := b.a.ExportShard(b.ctx, ShardJob{ArchiveTableJob: base, Generation: "../x"})
			return err
		}(),
		"negative shard": func() error {
			_, err := b.a.ExportShard(b.ctx, ShardJob{ArchiveTableJob: base, Generation: newGeneration(time.Now()), Shard: -1})
			return err
		}(),
		"combine generation": func() error {
			_, err := b.a.CombineShards(b.ctx, CombineJob{ArchiveTableJob: base, Generation: "latest"})
			return err
		}(),
		"combine unsealed": func() error {
			j := base
			j.Sealed = false
			_, err := b.a.CombineShards(b.ctx, CombineJob{ArchiveTableJob: j, Generation: newGeneration(time.Now())})
			return err
		}(),
	} {
		if !errors.Is(err, repo.ErrInvalidInput) {
			t.Errorf("%s: %v, want ErrInvalidInput", name, err)
		}
	}
	// Outside the allowlists: ErrNotAllowed, nothing sent.
	limited, err := New(b.clients, &Options{AllowedTablePrefixes: []string{"Other"}, AllowedContainers: []string{"cold"}})
	if err != nil {
		t.Fatal(err)
	}
	gen := newGeneration(time.Now())
	if _, err := limited.ExportShard(b.ctx, ShardJob{ArchiveTableJob: base, Generation: gen}); !errors.Is(err, ErrNotAllowed) {
		t.Errorf("shard outside the allowlist: %v", err)
	}
	if _, err := limited.CombineShards(b.ctx, CombineJob{ArchiveTableJob: base, Generation: gen}); !errors.Is(err, ErrNotAllowed) {
		t.Errorf("combine outside the allowlist: %v", err)
	}
	if n := ps.Table.Count() + ps.Blob.Count() + ps.Queue.Count() - mark; n != 0 {
		t.Fatalf("%d requests sent for invalid jobs", n)
	}
}

func download(t *testing.T, b *bed, container, name string) []byte {
	t.Helper()
	resp, err := b.clients.Blobs.DownloadStream(b.ctx, container, name, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return body
}

func upload(t *testing.T, b *bed, container, name string, body []byte) {
	t.Helper()
	if _, err := b.clients.Blobs.UploadBuffer(b.ctx, container, name, body, nil); err != nil {
		t.Fatal(err)
	}
}

func jsonBytes(t *testing.T, v any) []byte {
	t.Helper()
	body, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return body
}

func sha256Hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

func sameSet(got, want []string) bool {
	g, w := slices.Clone(got), slices.Clone(want)
	slices.Sort(g)
	slices.Sort(w)
	return slices.Equal(g, w)
}

// A manifest blob larger than the bound (64 KiB) is ErrArchiveCorrupt, as every other
// export metadata blob that readJSON reads: never parsed from its first 64 KiB. The
// forged blob is a genuine manifest followed by whitespace, whose truncated prefix
// decodes to the genuine manifest.
func TestManifestOverBoundIsCorrupt(t *testing.T) {
	t.Parallel()
	sb := setupShards(t, 60)
	_, m := sb.archivedKept(t, 2)
	name := ManifestBlobName(m.Table, m.Generation)
	if got, err := sb.a.ReadManifest(sb.ctx, sb.container, m.Table); err != nil || got != m {
		t.Fatalf("the genuine manifest: %+v %v", got, err)
	}
	upload(t, sb.bed, sb.container, name, append(download(t, sb.bed, sb.container, name), bytes.Repeat([]byte(" "), manifestLimit)...))
	if got, err := sb.a.ReadManifest(sb.ctx, sb.container, m.Table); !errors.Is(err, ErrArchiveCorrupt) {
		t.Fatalf("a manifest over 64 KiB: %+v %v, want ErrArchiveCorrupt", got, err)
	}
	if gens, err := sb.a.Generations(sb.ctx, sb.container, m.Table); !errors.Is(err, ErrArchiveCorrupt) {
		t.Fatalf("generations with a manifest over 64 KiB: %v %v, want ErrArchiveCorrupt", gens, err)
	}
}
