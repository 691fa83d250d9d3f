package tablearchive

import (
	"testing"
)

// Through the worker (16 at once): two archive-table messages for one table with
// different shard counts, each enqueued twice, and an unsharded one, all at once. No job
// is poisoned, the table is deleted, and every complete generation (and all merged)
// restores it whole.
func TestAttackShardedMixThroughTheWorker(t *testing.T) {
	t.Parallel()
	sb := setupShards(t, 1500)
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
