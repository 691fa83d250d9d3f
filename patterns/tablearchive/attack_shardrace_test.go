package tablearchive

import (
	"errors"
	"sync"
	"testing"
	"time"
)

// Two archive-table messages for one table with different shard counts: both plans,
// all shards, and both combines at once (held after their checks until both are
// there). The table is deleted once, after a generation that restores it whole; every
// complete generation restores it whole.
func TestAttackTwoShardCountsAtOnce(t *testing.T) {
	t.Parallel()
	sb := setupShards(t, 1200)
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
func TestAttackUnshardedDuringCombine(t *testing.T) {
	t.Parallel()
	for _, step := range []string{"checked", "before-delete"} {
		t.Run(step, func(t *testing.T) {
			t.Parallel()
			sb := setupShards(t, 900)
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
func TestAttackSweepDuringPendingCombine(t *testing.T) {
	t.Parallel()
	sb := setupShards(t, 900)
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
