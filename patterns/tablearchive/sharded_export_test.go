package tablearchive

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/internal/testenv"
	"github.com/tablepatterns/tablepatterns/repo"
)

// Two archive-table messages for one table with different shard counts: both plans,
// all shards, and both combines at once (held after their checks until both are
// there). The table is deleted once, after a generation that restores it whole; every
// complete generation restores it whole.
func TestTwoShardCountsAtOnce(t *testing.T) {
	t.Parallel()
	// 140 sign-ins over 7 partitions of 20: 5 shards of whole partitions (1,200 under make
	// soak).
	sb := setupShards(t, testenv.Scale(140, 1200))
	table, container := sb.current.Name(), sb.container
	cjA, _ := sb.exportShards(t, container, 2)
	cjB, _ := sb.exportShards(t, container, 5)
	hold := holdBoth("archive-table-combine", "checked")
	var wg sync.WaitGroup
	reps := make([]TableReport, 2)
	errsOut := make([]error, 2)
	for i, cj := range []CombineJob{cjA, cjB} {
		a := sb.archiver(t, hold)
		wg.Go(func() { reps[i], errsOut[i] = a.CombineShards(sb.ctx, cj) })
	}
	wg.Wait()
	for i := range 2 {
		t.Logf("combine %d: %s %s %v", i, reps[i].Outcome, reps[i].Manifest.Generation, errsOut[i])
		if errsOut[i] != nil {
			t.Errorf("combine %d: %v", i, errsOut[i])
		}
	}
	if ok, _ := sb.current.Exists(sb.ctx); ok {
		t.Fatal("the table survived both combines")
	}
	gens, err := sb.a.Generations(sb.ctx, container, table)
	if err != nil || len(gens) == 0 {
		t.Fatalf("generations %v %v", gens, err)
	}
	for _, g := range gens {
		assertRestored(t, sb.bed, container, table, g, sb.want)
	}
	assertRestored(t, sb.bed, container, table, GenerationAll, sb.want)
}

// The same table archived unsharded while a sharded combine is held after its scan
// (and, in a second round, after its manifest before its delete): one of them deletes
// the table, nothing fails for good, and the latest generation restores it whole.
func TestUnshardedDuringCombine(t *testing.T) {
	t.Parallel()
	for _, step := range []string{"checked", "before-delete"} {
		t.Run(step, func(t *testing.T) {
			t.Parallel()
			sb := setupShards(t, 140)
			table, container := sb.current.Name(), sb.container
			cj, _ := sb.exportShards(t, container, 3)
			var unsharded TableReport
			var uerr error
			a := sb.archiver(t, func(job, s string) error {
				if job == "archive-table-combine" && s == step {
					unsharded, uerr = sb.a.ArchiveTable(sb.ctx, ArchiveTableJob{Table: table, Container: container, Sealed: true})
				}
				return nil
			})
			rep, err := a.CombineShards(sb.ctx, cj)
			t.Logf("unsharded: %s %s %v; combine: %s %s %v", unsharded.Outcome, unsharded.Manifest.Generation, uerr, rep.Outcome, rep.Manifest.Generation, err)
			if uerr != nil || err != nil {
				t.Fatalf("unsharded %v, combine %v", uerr, err)
			}
			if ok, _ := sb.current.Exists(sb.ctx); ok {
				t.Fatal("the table survived")
			}
			assertRestored(t, sb.bed, container, table, GenerationLatest, sb.want)
			assertRestored(t, sb.bed, container, table, GenerationAll, sb.want)
		})
	}
}

// A sweep while a sharded generation waits for its last shard (its finished shards'
// data older than olderThan by the service's clock): the table must never be deleted
// without its data; report whether the generation can still complete.
func TestSweepDuringPendingCombine(t *testing.T) {
	t.Parallel()
	sb := setupShards(t, 140)
	table, container := sb.current.Name(), sb.container
	job, gen := sb.planned(t, 3)
	for i := range 2 {
		if _, err := sb.a.ExportShard(sb.ctx, ShardJob{ArchiveTableJob: job, Generation: gen, Shard: i}); err != nil {
			t.Fatal(err)
		}
	}
	sweeper := sb.archiver(t, nil)
	sweeper.seams.serviceAhead = 2 * time.Hour
	swept, err := sweeper.SweepAbortedExports(sb.ctx, container, table, time.Hour, false)
	t.Logf("swept %v %v", swept, err)
	if _, err := sb.a.ExportShard(sb.ctx, ShardJob{ArchiveTableJob: job, Generation: gen, Shard: 2}); err != nil {
		t.Fatal(err)
	}
	rep, err := sb.a.CombineShards(sb.ctx, CombineJob{ArchiveTableJob: job, Generation: gen})
	t.Logf("combine after the sweep: %s %v", rep.Outcome, err)
	if ok, _ := sb.current.Exists(sb.ctx); !ok {
		assertRestored(t, sb.bed, container, table, GenerationLatest, sb.want)
		return
	}
	if len(swept) > 0 && !errors.Is(err, ErrArchiveCorrupt) {
		t.Fatalf("combine after its shards' data was swept: %v, want ErrArchiveCorrupt", err)
	}
	// The shard jobs find their manifests and only enqueue the combine again: the
	// generation cannot complete; a new archive-table job can.
	r0, err := sb.a.ExportShard(sb.ctx, ShardJob{ArchiveTableJob: job, Generation: gen, Shard: 0})
	t.Logf("shard 0 rerun: %s %v", r0.Outcome, err)
}

// A sharded job on an empty table and on a one-partition table (fewer partitions than
// shards): one shard, one complete generation, the table deleted, a restore (latest and
// all, beside an unsharded generation of the same content) gives it back.
func TestShardedTinyTables(t *testing.T) {
	t.Parallel()
	for name, n := range map[string]int{"empty": 0, "one partition": 1} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			sb := setupShards(t, 0)
			table, container := sb.current.Name(), sb.container
			want := map[string]*codec.Entity{}
			for i := range n * 50 {
				e := &codec.Entity{PartitionKey: "only", RowKey: string(rune('A'+i%26)) + string(rune('a'+i/26)), Properties: map[string]any{"IP": "x"}}
				if err := sb.current.Insert(sb.ctx, e); err != nil {
					t.Fatal(err)
				}
				want[e.PartitionKey+"/"+e.RowKey] = e
			}
			if n > 0 {
				keep := ArchiveTableJob{Table: table, Container: container, Sealed: true, KeepTable: true}
				if _, err := sb.a.ArchiveTable(sb.ctx, keep); err != nil {
					t.Fatal(err)
				}
			}
			cj, plan := sb.exportShards(t, container, 4)
			if plan.shards() != 1 {
				t.Fatalf("plan %+v", plan)
			}
			rep := sb.combined(t, cj)
			if rep.Manifest.Shards != 1 || rep.Manifest.Entities != int64(len(want)) {
				t.Fatalf("manifest %+v", rep.Manifest)
			}
			if ok, _ := sb.current.Exists(sb.ctx); ok {
				t.Fatal("the table survived")
			}
			assertRestored(t, sb.bed, container, table, GenerationLatest, want)
			assertRestored(t, sb.bed, container, table, GenerationAll, want)
		})
	}
}

// Partition keys whose UTF-8 and UTF-16 orders differ (U+E000 against U+10000): a
// sharded job refuses the table, or archives it so that a restore gives it back whole;
// a plan forged with a bound between them (one the planner would never choose) must
// not get the table deleted with entities lost or doubled.
func TestShardedUTF16Order(t *testing.T) {
	t.Parallel()
	sb := setupShards(t, 0)
	table, container := sb.current.Name(), sb.container
	want := map[string]*codec.Entity{}
	var items []*codec.Entity
	for _, pk := range []string{"a", "z", "\ue000", "\ue000x", "\U00010000", "\U00010000x", "\uffee"} {
		for r := range 3 {
			e := &codec.Entity{PartitionKey: pk, RowKey: string(rune('0' + r)), Properties: map[string]any{"IP": pk}}
			items = append(items, e)
			want[e.PartitionKey+"/"+e.RowKey] = e
		}
	}
	for _, e := range items {
		if err := sb.current.Insert(sb.ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	var order []string
	for e, err := range sb.current.Query(sb.ctx, repoQueryPK()) {
		if err != nil {
			t.Fatal(err)
		}
		if len(order) == 0 || order[len(order)-1] != e.PartitionKey {
			order = append(order, e.PartitionKey)
		}
	}
	t.Logf("service order: %q", order)

	job := ArchiveTableJob{Table: table, Container: container, Sealed: true, Shards: 3}
	gen := newGeneration(time.Now())
	rep, err := sb.a.archiveTable(sb.ctx, job, gen)
	t.Logf("plan: %s %v", rep.Outcome, err)
	runAll := func(gen string, shards int) {
		for i := range shards {
			r, err := sb.a.ExportShard(sb.ctx, ShardJob{ArchiveTableJob: job, Generation: gen, Shard: i})
			t.Logf("shard %d: %s %v", i, r.Outcome, err)
		}
		r, err := sb.a.CombineShards(sb.ctx, CombineJob{ArchiveTableJob: job, Generation: gen})
		t.Logf("combine: %s %v", r.Outcome, err)
		if ok, _ := sb.current.Exists(sb.ctx); !ok {
			assertRestored(t, sb.bed, container, table, GenerationLatest, want)
			t.Logf("table deleted, archive whole")
		}
	}
	if err == nil {
		plan, err := sb.a.readPlan(sb.ctx, container, table, gen)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("bounds %q", plan.Bounds)
		runAll(gen, plan.shards())
		if ok, _ := sb.current.Exists(sb.ctx); !ok {
			return
		}
	}
	// A forged plan: bounds valid and increasing by Go's order, between the two orders.
	for _, bounds := range [][]string{{"\ue000"}, {"\U00010000"}, {"\ue000x", "\uffee"}} {
		g := newGeneration(time.Now())
		if err := sb.a.createContainer(sb.ctx, container); err != nil {
			t.Fatal(err)
		}
		upload(t, sb.bed, container, planBlobName(table, g), jsonBytes(t, ShardPlan{Format: shardPlanFormat, Table: table, Generation: g, Bounds: bounds, Planned: time.Now().UTC().Format(time.RFC3339Nano)}))
		t.Logf("forged bounds %q", bounds)
		runAll(g, len(bounds)+1)
		if ok, _ := sb.current.Exists(sb.ctx); !ok {
			return
		}
	}
}

func repoQueryPK() repo.Query { return repo.Query{Select: []string{"PartitionKey"}} }

// Through the worker (16 at once): two archive-table messages for one table with
// different shard counts, each enqueued twice, and an unsharded one, all at once. No job
// is poisoned, the table is deleted, and every complete generation (and all merged)
// restores it whole.
func TestShardedMixThroughTheWorker(t *testing.T) {
	t.Parallel()
	// 140 sign-ins over 7 partitions of 20, at least one partition a shard for the 5-shard
	// jobs (1,500 under make soak): every restore below reads each generation whole.
	sb := setupShards(t, testenv.Scale(140, 1500))
	table, container := sb.current.Name(), sb.container
	for _, shards := range []int{2, 5, 2, 5, 0} {
		job := ArchiveTableJob{Table: table, Container: container, Sealed: true, Shards: shards}
		if err := EnqueueArchiveTable(sb.ctx, sb.client, job); err != nil {
			t.Fatal(err)
		}
	}
	drain(t, sb.worker)
	if s := sb.worker.Stats(); s.Poisoned != 0 {
		t.Fatalf("poisoned jobs: %+v", s)
	}
	if ok, err := sb.current.Exists(sb.ctx); err != nil || ok {
		t.Fatalf("the table still exists: %v %v", ok, err)
	}
	gens, err := sb.a.Generations(sb.ctx, container, table)
	if err != nil || len(gens) == 0 {
		t.Fatalf("generations %v %v", gens, err)
	}
	t.Logf("generations %v", gens)
	for _, g := range gens {
		assertRestored(t, sb.bed, container, table, g, sb.want)
	}
	assertRestored(t, sb.bed, container, table, GenerationAll, sb.want)
}
