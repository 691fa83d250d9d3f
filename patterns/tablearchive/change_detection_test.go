package tablearchive

import (
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/internal/faultproxy"
	"github.com/tablepatterns/tablepatterns/internal/testenv"
	"github.com/tablepatterns/tablepatterns/repo"

	"context"
	"fmt"
	"sync"

	"github.com/tablepatterns/tablepatterns/repo/filter"
)

// A writer acting just before the last check (the Timestamp query before DeleteTable),
// held exactly at the proxy: an insert, an update of an exported entity, and a delete
// paired with an insert. Each must make the job ErrTableChanged with the table kept.
func TestArchiveTableWriterJustBeforeLastCheck(t *testing.T) {
	t.Parallel()
	ps := testenv.Proxies(t)
	b := setup(t, ps.ConnectionString)
	for _, tc := range []string{"insert", "update", "delete+insert"} {
		t.Run(tc, func(t *testing.T) {
			tb := b.newTable(t, "W"+strings.ReplaceAll(tc, "+", ""))
			fillTable(t, b, tb.Name(), 50, "a")
			container := testenv.ContainerName(t)
			isCheck := func(r *http.Request) bool {
				return faultproxy.IsListEntities(r) && strings.Contains(r.URL.Path, "/"+tb.Name()+"(") &&
					strings.Contains(r.URL.RawQuery, "Timestamp")
			}
			p := ps.Table.PauseAt("timestamp check "+tc, isCheck, 1)
			t.Cleanup(p.Release)
			done := make(chan error, 1)
			go func() {
				_, err := b.a.ArchiveTable(b.ctx, ArchiveTableJob{Table: tb.Name(), Container: container, Sealed: true})
				done <- err
			}()
			if err := p.Wait(b.ctx); err != nil {
				t.Fatal(err)
			}
			var err error
			switch tc {
			case "insert":
				err = tb.Insert(b.ctx, &codec.Entity{PartitionKey: "user00", RowKey: "zz", Properties: map[string]any{"Tag": "new"}})
			case "update":
				err = tb.Update(b.ctx, &codec.Entity{PartitionKey: "user00", RowKey: "a00000", Properties: map[string]any{"Tag": "upd"}}, &repo.UpdateOptions{Unconditional: true})
			default:
				if err = tb.Delete(b.ctx, "user01", "a00001", nil); err == nil {
					err = tb.Insert(b.ctx, &codec.Entity{PartitionKey: "user01", RowKey: "a00001x", Properties: map[string]any{"Tag": "new"}})
				}
			}
			if err != nil {
				t.Fatal(err)
			}
			p.Release()
			if err := <-done; !errors.Is(err, ErrTableChanged) {
				t.Fatalf("archive: %v, want ErrTableChanged", err)
			}
			if ok, err := tb.Exists(b.ctx); !ok || err != nil {
				t.Fatalf("table deleted (%v)", err)
			}
		})
	}
}

// changeAndBack updates one entity of [low, high) to other content and then back to its
// own: the table holds the same content, with a new ETag and Timestamp.
func changeAndBack(ctx context.Context, tb *repo.Table[codec.Entity], low, high string) error {
	got, err := tb.Collect(ctx, repo.Query{Top: 1, Filter: filter.PartitionRange(low, high)})
	if err != nil || len(got) != 1 {
		return fmt.Errorf("no entity in [%q, %q): %v", low, high, err)
	}
	e := got[0]
	ip := e.Properties["IP"]
	e.Properties["IP"] = "changed"
	if err := tb.Update(ctx, &e, nil); err != nil {
		return err
	}
	e.Properties["IP"] = ip
	return tb.Update(ctx, &e, nil)
}

// A writer changes an entity of shard 1's range after shard 1 exported it, and changes
// it back before the combine: same content, new ETag. The combine must not delete.
func TestChangeBackAfterShardExport(t *testing.T) {
	t.Parallel()
	sb := setupShards(t, 140)
	cj, plan := sb.exportShards(t, sb.container, 3)
	low, high := plan.shardRange(1)
	if err := changeAndBack(sb.ctx, sb.current, low, high); err != nil {
		t.Fatal(err)
	}
	_, err := sb.a.CombineShards(sb.ctx, cj)
	if !errors.Is(err, ErrTableChanged) {
		t.Fatalf("combine after a change and back: %v, want ErrTableChanged", err)
	}
	if ok, _ := sb.current.Exists(sb.ctx); !ok {
		t.Fatal("the table was deleted after a write between a shard's export and the combine")
	}
}

// The same write after the combine's scan, before its manifest (the step "checked"): the
// check before the delete must find it.
func TestChangeBackAfterCombineScan(t *testing.T) {
	t.Parallel()
	sb := setupShards(t, 140)
	cj, plan := sb.exportShards(t, sb.container, 3)
	low, high := plan.shardRange(2)
	a := sb.archiver(t, func(job, step string) error {
		if job == "archive-table-combine" && step == "checked" {
			return changeAndBack(sb.ctx, sb.current, low, high)
		}
		return nil
	})
	_, err := a.CombineShards(sb.ctx, cj)
	if !errors.Is(err, ErrTableChanged) {
		t.Fatalf("combine with a write after its scan: %v, want ErrTableChanged", err)
	}
	if ok, _ := sb.current.Exists(sb.ctx); !ok {
		t.Fatal("the table was deleted after a write between the combine's scan and its delete")
	}
}

// An entity inserted (in a new partition between two shards' bounds, and in shard 0's
// own range) after every shard exported: the combine must not delete.
func TestInsertBetweenShardBounds(t *testing.T) {
	t.Parallel()
	sb := setupShards(t, 140)
	cj, plan := sb.exportShards(t, sb.container, 3)
	if len(plan.Bounds) != 2 {
		t.Fatalf("plan %+v", plan)
	}
	// A PartitionKey just before the second bound: it falls in shard 1's range.
	pk := plan.Bounds[1][:len(plan.Bounds[1])-1] + string(plan.Bounds[1][len(plan.Bounds[1])-1]-1) + "~"
	if !(pk >= plan.Bounds[0] && pk < plan.Bounds[1]) {
		t.Fatalf("%q is not between the bounds %v", pk, plan.Bounds)
	}
	if err := sb.current.Insert(sb.ctx, &codec.Entity{PartitionKey: pk, RowKey: "late", Properties: map[string]any{"IP": "x"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := sb.a.CombineShards(sb.ctx, cj); !errors.Is(err, ErrTableChanged) && !errors.Is(err, ErrArchiveCorrupt) {
		t.Fatalf("combine after an insert between the bounds: %v", err)
	}
	if ok, _ := sb.current.Exists(sb.ctx); !ok {
		t.Fatal("the table was deleted with an entity no shard exported")
	}
}

// A shard manifest that claims another shard's index, or copies a shard manifest of
// another generation of the same table (with its data): the combine refuses both.
func TestShardManifestOfAnotherShardOrGeneration(t *testing.T) {
	t.Parallel()
	sb := setupShards(t, 140)
	table, container := sb.current.Name(), sb.container
	cjA, planA := sb.exportShards(t, container, 3)
	cjB, planB := sb.exportShards(t, container, 3)
	if fmt.Sprint(planA.Bounds) != fmt.Sprint(planB.Bounds) {
		t.Fatalf("plans differ: %v %v", planA.Bounds, planB.Bounds)
	}
	genuine := download(t, sb.bed, container, shardManifestName(table, cjA.Generation, 1))

	// Shard 0's manifest in shard 1's place.
	upload(t, sb.bed, container, shardManifestName(table, cjA.Generation, 1), download(t, sb.bed, container, shardManifestName(table, cjA.Generation, 0)))
	if _, err := sb.a.CombineShards(sb.ctx, cjA); !errors.Is(err, ErrArchiveCorrupt) {
		t.Fatalf("combine with shard 0's manifest as shard 1: %v", err)
	}
	// Generation B's shard 1 (manifest and data) in generation A.
	upload(t, sb.bed, container, shardManifestName(table, cjA.Generation, 1), download(t, sb.bed, container, shardManifestName(table, cjB.Generation, 1)))
	if _, err := sb.a.CombineShards(sb.ctx, cjA); !errors.Is(err, ErrArchiveCorrupt) {
		t.Fatalf("combine with generation B's shard 1: %v", err)
	}
	// B's manifest rewritten to claim A's generation, its data copied into A's folder.
	var sm ShardManifest
	if err := sb.a.readJSON(sb.ctx, container, shardManifestName(table, cjB.Generation, 1), manifestLimit, &sm); err != nil {
		t.Fatal(err)
	}
	data := download(t, sb.bed, container, sm.DataBlob)
	sm.Generation = cjA.Generation
	sm.DataBlob = strings.Replace(sm.DataBlob, cjB.Generation, cjA.Generation, 1)
	upload(t, sb.bed, container, sm.DataBlob, data)
	upload(t, sb.bed, container, shardManifestName(table, cjA.Generation, 1), jsonBytes(t, sm))
	// Same table content: this one is a genuine copy and may stand; whatever happens,
	// a delete must leave an archive that restores the table.
	rep, err := sb.a.CombineShards(sb.ctx, cjA)
	t.Logf("combine with B's shard renamed into A: %s %v", rep.Outcome, err)
	if ok, _ := sb.current.Exists(sb.ctx); !ok {
		assertRestored(t, sb.bed, container, table, GenerationLatest, sb.want)
		return
	}
	upload(t, sb.bed, container, shardManifestName(table, cjA.Generation, 1), genuine)
	sb.combined(t, cjA)
	assertRestored(t, sb.bed, container, table, GenerationLatest, sb.want)
}

// A restore of a sharded generation whose shard data was replaced after its manifest
// writes nothing; one replaced after the restore's snapshots were verified writes the
// verified content.
func TestRestoreShardDataReplaced(t *testing.T) {
	t.Parallel()
	sb := setupShards(t, 140)
	table, container := sb.current.Name(), sb.container
	cj, _ := sb.exportShards(t, container, 3)
	rep := sb.combined(t, cj)
	shards, err := sb.a.readShards(sb.ctx, container, rep.Manifest)
	if err != nil {
		t.Fatal(err)
	}
	name := shards[2].DataBlob
	genuine := download(t, sb.bed, container, name)
	lines := gunzipBytes(t, genuine)
	forged := strings.ReplaceAll(string(lines), `"10.0.`, `"66.6.`)
	upload(t, sb.bed, container, name, gzipBytes(t, []byte(forged)))

	back := sb.newTable(t, "Back")
	if _, err := sb.a.RestoreTable(sb.ctx, RestoreTableJob{Table: table, Container: container, Target: back.Name()}); !errors.Is(err, ErrArchiveCorrupt) {
		t.Fatalf("restore of replaced shard data: %v, want ErrArchiveCorrupt", err)
	}
	if got, _ := back.Collect(sb.ctx, repo.Query{}); len(got) != 0 {
		t.Fatalf("the restore wrote %d entities from an archive that does not verify", len(got))
	}

	upload(t, sb.bed, container, name, genuine)
	var once sync.Once
	a := sb.archiver(t, func(job, step string) error {
		if job == "restore-table" && step == "verified" {
			once.Do(func() { upload(t, sb.bed, container, name, gzipBytes(t, []byte(forged))) })
		}
		return nil
	})
	back2 := sb.newTable(t, "Back2")
	if _, err := a.RestoreTable(sb.ctx, RestoreTableJob{Table: table, Container: container, Target: back2.Name()}); err != nil {
		t.Fatalf("restore: %v", err)
	}
	assertTableHolds(t, sb.bed, back2, sb.want)
}
