package tablearchive

import (
	"testing"
	"time"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/repo"
)

// Partition keys whose UTF-8 and UTF-16 orders differ (U+E000 against U+10000): a
// sharded job refuses the table, or archives it so that a restore gives it back whole;
// a plan forged with a bound between them (one the planner would never choose) must
// not get the table deleted with entities lost or doubled.
func TestAttackShardedUTF16Order(t *testing.T) {
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
