package tablearchive

import (
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/tablepatterns/tablepatterns/repo"
)

// gunzipBytes is the content of a gzip body.
func gunzipBytes(t *testing.T, body []byte) []byte {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	out, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// forgeShardOne replaces the data of shard 1 of the sharded generation m with content
// of the same entity count and byte count that is not the table's (every IP rewritten),
// under a self-consistent shard manifest, and rebinds the generation's manifest to it
// (ShardsSHA256) keeping its table-wide Versions, SHA256, Entities and Bytes: all that
// write access to the container needs.
func forgeShardOne(t *testing.T, sb *shardBed, m Manifest) {
	t.Helper()
	table, container := sb.current.Name(), sb.container
	shards, err := sb.a.readShards(sb.ctx, container, m)
	if err != nil {
		t.Fatal(err)
	}
	genuine := shards[1]
	lines := gunzipBytes(t, download(t, sb.bed, container, genuine.DataBlob))
	forgedLines := bytes.ReplaceAll(lines, []byte(`"10.0.`), []byte(`"66.6.`))
	if bytes.Equal(forgedLines, lines) || len(forgedLines) != len(lines) {
		t.Fatal("the forgery did not change the content at equal length")
	}
	forged := genuine
	forged.DataBlob = strings.TrimSuffix(genuine.DataBlob, genuine.DataBlob[len(genuine.DataBlob)-len("00000000.jsonl.gz"):]) + "0badf00d.jsonl.gz"
	forged.SHA256 = sha256Hex(forgedLines)
	upload(t, sb.bed, container, forged.DataBlob, gzipBytes(t, forgedLines))
	upload(t, sb.bed, container, shardManifestName(table, m.Generation, 1), jsonBytes(t, forged))
	shards[1] = forged
	m.ShardsSHA256 = shardsDigest(shards)
	upload(t, sb.bed, container, ManifestBlobName(table, m.Generation), jsonBytes(t, m))
}

// The rerun path ("the table's own content must hash to the manifest's, and the data
// blob to the manifest") must not delete the table on the strength of a sharded
// generation whose shard data is not the table's: the manifest's table-wide SHA256 is
// the table's, but nothing ties the shards' data to it.
func TestAttackRerunDeletesAgainstForgedShardData(t *testing.T) {
	t.Parallel()
	sb := setupShards(t, 700)
	table, container := sb.current.Name(), sb.container
	cj, _ := sb.exportShards(t, container, 2)
	cj.KeepTable = true // a sharded generation whose table is kept (or a combine killed before its delete)
	rep := sb.combined(t, cj)
	forgeShardOne(t, sb, rep.Manifest)

	rerun, err := sb.a.ArchiveTable(sb.ctx, ArchiveTableJob{Table: table, Container: container, Sealed: true})
	t.Logf("unsharded rerun: outcome %s generation %s err %v", rerun.Outcome, rerun.Manifest.Generation, err)
	if ok, _ := sb.current.Exists(sb.ctx); !ok && rerun.Manifest.Generation == cj.Generation {
		back := sb.newTable(t, "Back")
		if _, err := sb.a.RestoreTable(sb.ctx, RestoreTableJob{Table: table, Container: container, Target: back.Name(), Generation: GenerationLatest}); err != nil {
			t.Fatalf("the table was deleted on the strength of generation %s, whose shard 1 is not the table's content (restore: %v)", cj.Generation, err)
		}
		got, _ := back.Collect(sb.ctx, repo.Query{})
		forged := 0
		for _, e := range got {
			if ip, _ := e.Properties["IP"].(string); strings.HasPrefix(ip, "66.6.") {
				forged++
			}
		}
		t.Fatalf("the table was deleted on the strength of generation %s, whose shard 1 is not the table's content; its restore wrote %d of %d entities with forged content", cj.Generation, forged, len(got))
	}
}

// The same through the combine: a combine whose generation is not the latest finishes
// as an unsharded rerun; that rerun must not take a forged sharded latest generation.
func TestAttackCombineFallbackTakesForgedLatest(t *testing.T) {
	t.Parallel()
	sb := setupShards(t, 700)
	table, container := sb.current.Name(), sb.container
	cj, _ := sb.exportShards(t, container, 2)
	keep := cj
	keep.KeepTable = true
	rep := sb.combined(t, keep)
	forgeShardOne(t, sb, rep.Manifest)

	// A second, genuine sharded generation of the same table; the forged one is made
	// the latest while this combine runs (the forger rewrites its CheckedAt).
	cj2, _ := sb.exportShards(t, container, 3)
	forgedM := rep.Manifest
	var err error
	if forgedM, err = sb.a.readManifest(sb.ctx, container, table, cj.Generation); err != nil {
		t.Fatal(err)
	}
	a := sb.archiver(t, func(job, step string) error {
		if job == "archive-table-combine" && step == "before-delete" {
			m := forgedM
			m.CheckedAt = sb.a.now().UTC().Add(time.Second).Format(time.RFC3339Nano)
			upload(t, sb.bed, container, ManifestBlobName(table, cj.Generation), jsonBytes(t, m))
		}
		return nil
	})
	out, err := a.CombineShards(sb.ctx, cj2)
	t.Logf("combine: outcome %s generation %s err %v", out.Outcome, out.Manifest.Generation, err)
	if ok, _ := sb.current.Exists(sb.ctx); !ok && out.Manifest.Generation == cj.Generation {
		t.Fatalf("the combine's fallback deleted the table on the strength of the forged generation %s", cj.Generation)
	}
	if err != nil && !errors.Is(err, ErrArchiveCorrupt) {
		t.Logf("combine error: %v", err)
	}
}

// Without reading the table at all: a forger with write access to the container copies
// the table-wide fields of a genuine unsharded generation (KeepTable) into a new sharded
// generation of one shard whose data is garbage of the same entity and byte counts. The
// next unsharded job deletes the table on its strength.
func TestAttackForgedShardedGenerationFromUnshardedManifest(t *testing.T) {
	t.Parallel()
	sb := setupShards(t, 500)
	table, container := sb.current.Name(), sb.container
	rep, err := sb.a.ArchiveTable(sb.ctx, ArchiveTableJob{Table: table, Container: container, Sealed: true, KeepTable: true})
	if err != nil {
		t.Fatal(err)
	}
	genuine := rep.Manifest
	lines := gunzipBytes(t, download(t, sb.bed, container, genuine.DataBlob))
	garbage := bytes.ReplaceAll(lines, []byte(`"10.0.`), []byte(`"66.6.`))
	gen := newGeneration(time.Now())
	sm := ShardManifest{Format: ShardManifestFormat, Table: table, Generation: gen, Shard: 0, Shards: 1,
		Entities: genuine.Entities, Partitions: genuine.Partitions, Bytes: int64(len(garbage)), SHA256: sha256Hex(garbage),
		Versions: genuine.Versions, DataBlob: tableFolder(table) + "/" + gen + "/shard-0000-0badf00d.jsonl.gz", ExportedAt: genuine.ExportedAt}
	upload(t, sb.bed, container, sm.DataBlob, gzipBytes(t, garbage))
	upload(t, sb.bed, container, shardManifestName(table, gen, 0), jsonBytes(t, sm))
	m := genuine
	m.Generation, m.DataBlob, m.Shards, m.ShardsSHA256 = gen, "", 1, shardsDigest([]ShardManifest{sm})
	m.CheckedAt = time.Now().UTC().Format(time.RFC3339Nano)
	upload(t, sb.bed, container, ManifestBlobName(table, gen), jsonBytes(t, m))

	rerun, err := sb.a.ArchiveTable(sb.ctx, ArchiveTableJob{Table: table, Container: container, Sealed: true})
	t.Logf("unsharded job: %s %s %v", rerun.Outcome, rerun.Manifest.Generation, err)
	if ok, _ := sb.current.Exists(sb.ctx); !ok && rerun.Manifest.Generation == gen {
		t.Fatalf("the table was deleted on the strength of the forged sharded generation %s (its data is not the table's)", gen)
	}
}
