package tablearchive

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"testing"

	"github.com/tablepatterns/tablepatterns/repo"
)

// RestoreTable promises "nothing is written unless every byte verified": a sharded
// generation whose shard 1 was replaced (same length, self-consistent shard manifest,
// ShardsSHA256 rebound) no longer hashes, shard after shard, to its manifest's SHA256:
// ErrArchiveCorrupt before the first write, for the latest and for "all".
func TestRestoreRefusesForgedShardData(t *testing.T) {
	t.Parallel()
	sb := setupShards(t, 600)
	table, container := sb.current.Name(), sb.container
	cj, _ := sb.exportShards(t, container, 2)
	cj.KeepTable = true
	rep := sb.combined(t, cj)
	assertRestored(t, sb.bed, container, table, GenerationLatest, sb.want) // genuine: restores whole
	forgeShardOne(t, sb, rep.Manifest)
	for _, gen := range []string{GenerationLatest, GenerationAll, cj.Generation} {
		back := sb.newTable(t, "Back")
		out, err := sb.a.RestoreTable(sb.ctx, RestoreTableJob{Table: table, Container: container, Target: back.Name(), Generation: gen})
		if !errors.Is(err, ErrArchiveCorrupt) {
			t.Fatalf("restore %q of the forged generation: %+v %v, want ErrArchiveCorrupt", gen, out, err)
		}
		if ok, _ := back.Exists(sb.ctx); ok {
			got, err := back.Collect(sb.ctx, repo.Query{})
			if err != nil || len(got) != 0 {
				t.Fatalf("restore %q wrote %d entities (%v) before it refused the forged generation", gen, len(got), err)
			}
		}
	}
}

// The forger who also rewrites the manifest's table-wide SHA256 to the forged shards'
// (so that the shards hash to it) is caught by the table itself: the rerun's scan of the
// table does not hash to that SHA256, so the table is exported again and deleted only
// after a generation of its own content.
func TestRerunRefusesForgedShardsWithRewrittenSHA256(t *testing.T) {
	t.Parallel()
	sb := setupShards(t, 600)
	table, container := sb.current.Name(), sb.container
	cj, _ := sb.exportShards(t, container, 3)
	cj.KeepTable = true
	rep := sb.combined(t, cj)
	forgeShardOne(t, sb, rep.Manifest)
	m, err := sb.a.readManifest(sb.ctx, container, table, cj.Generation)
	if err != nil {
		t.Fatal(err)
	}
	shards, err := sb.a.readShards(sb.ctx, container, m)
	if err != nil {
		t.Fatal(err)
	}
	whole := sha256.New()
	for _, s := range shards {
		whole.Write(gunzipBytes(t, download(t, sb.bed, container, s.DataBlob)))
	}
	m.SHA256 = hex.EncodeToString(whole.Sum(nil))
	upload(t, sb.bed, container, ManifestBlobName(table, cj.Generation), jsonBytes(t, m))
	if _, err := sb.a.verifyGeneration(sb.ctx, container, m); err != nil {
		t.Fatalf("the forgery is not self-consistent (the test would prove nothing): %v", err)
	}

	rerun, err := sb.a.ArchiveTable(sb.ctx, ArchiveTableJob{Table: table, Container: container, Sealed: true})
	if err != nil || rerun.Outcome != OutcomeMoved {
		t.Fatalf("rerun: %+v %v", rerun, err)
	}
	if rerun.Manifest.Generation == cj.Generation {
		t.Fatalf("the table was deleted on the strength of the forged generation %s", cj.Generation)
	}
	if ok, _ := sb.current.Exists(sb.ctx); ok {
		t.Fatal("the table survived its rerun")
	}
	assertRestored(t, sb.bed, container, table, GenerationLatest, sb.want)
}
