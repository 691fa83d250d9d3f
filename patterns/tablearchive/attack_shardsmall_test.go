package tablearchive

import (
	"testing"

	"github.com/tablepatterns/tablepatterns/codec"
)

// A sharded job on an empty table and on a one-partition table (fewer partitions than
// shards): one shard, one complete generation, the table deleted, a restore (latest and
// all, beside an unsharded generation of the same content) gives it back.
func TestAttackShardedTinyTables(t *testing.T) {
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
