package tablearchive

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strings"
	"testing"

	"github.com/tablepatterns/tablepatterns/repo"
)

// rewriteShardRows replaces the lines of shard i of the sharded generation m with
// edit's, under a self-consistent shard manifest, and rebinds the generation's manifest
// to them (ShardsSHA256, Entities, Bytes, and the table-wide SHA256 over every shard's
// lines in order): everything the restore verifies agrees with the edited data. It is
// what write access to the container allows, and what a faulty exporter would leave.
func rewriteShardRows(t *testing.T, sb *shardBed, m Manifest, i int, edit func(lines []byte) []byte) Manifest {
	t.Helper()
	table, container := sb.current.Name(), sb.container
	shards, err := sb.a.readShards(sb.ctx, container, m)
	if err != nil {
		t.Fatal(err)
	}
	genuine := shards[i]
	lines := edit(gunzipBytes(t, download(t, sb.bed, container, genuine.DataBlob)))
	forged := genuine
	forged.DataBlob = strings.TrimSuffix(genuine.DataBlob, genuine.DataBlob[len(genuine.DataBlob)-len("00000000.jsonl.gz"):]) + "0badf00d.jsonl.gz"
	forged.SHA256 = sha256Hex(lines)
	forged.Entities = int64(bytes.Count(lines, []byte("\n")))
	forged.Bytes = int64(len(lines))
	upload(t, sb.bed, container, forged.DataBlob, gzipBytes(t, lines))
	upload(t, sb.bed, container, shardManifestName(table, m.Generation, i), jsonBytes(t, forged))
	m.Entities += forged.Entities - genuine.Entities
	m.Bytes += forged.Bytes - genuine.Bytes
	shards[i] = forged
	m.ShardsSHA256 = shardsDigest(shards)
	whole := sha256.New()
	for _, s := range shards {
		whole.Write(gunzipBytes(t, download(t, sb.bed, container, s.DataBlob)))
	}
	m.SHA256 = hex.EncodeToString(whole.Sum(nil))
	upload(t, sb.bed, container, ManifestBlobName(table, m.Generation), jsonBytes(t, m))
	if _, err := sb.a.verifyGeneration(sb.ctx, container, m); err != nil {
		t.Fatalf("the rewritten generation does not verify (the test would prove nothing): %v", err)
	}
	return m
}

// firstLine is the first line of lines, with its newline.
func firstLine(lines []byte) []byte {
	return lines[:bytes.IndexByte(lines, '\n')+1]
}

// restoreWritesNothing restores the latest generation of the bed's table into a new
// table and requires ErrArchiveCorrupt with nothing written.
func restoreWritesNothing(t *testing.T, sb *shardBed, window int) {
	t.Helper()
	a := sb.archiver(t, nil)
	a.seams.restoreWindow = window
	back := sb.newTable(t, "Back")
	out, err := a.RestoreTable(sb.ctx, RestoreTableJob{Table: sb.current.Name(), Container: sb.container, Target: back.Name()})
	written := 0
	if ok, _ := back.Exists(sb.ctx); ok {
		got, cerr := back.Collect(sb.ctx, repo.Query{Select: []string{"PartitionKey", "RowKey"}})
		if cerr != nil {
			t.Fatal(cerr)
		}
		written = len(got)
	}
	if !errors.Is(err, ErrArchiveCorrupt) || written != 0 {
		t.Fatalf("restore: %+v, %v; %d entities written; want ErrArchiveCorrupt before the first write", out, err, written)
	}
}

// RestoreTable promises that it "verifies each snapshot whole against its manifest
// (ErrArchiveCorrupt, a permanent failure: nothing written)" before it writes anything.
// A sharded generation whose shard 1 ends with a line that is not an entity, under
// manifests that agree with it, verifies (the verification only hashes the lines), and
// the restore writes the windows of shard 0 before it decodes that line.
func TestRestoreWritesNothingOfShardsWithALineThatIsNoEntity(t *testing.T) {
	t.Parallel()
	sb := setupShards(t, 140)
	cj, _ := sb.exportShards(t, sb.container, 2)
	cj.KeepTable = true
	rep := sb.combined(t, cj)
	rewriteShardRows(t, sb, rep.Manifest, 1, func(lines []byte) []byte {
		return append(bytes.Clone(lines), []byte("not an entity\n")...)
	})
	restoreWritesNothing(t, sb, 20)
}

// The same promise for shards whose ranges overlap: shard 1 also holds the first entity
// of shard 0 (a row outside its declared range, under manifests that agree with it).
// The two copies of one key land in one window (one BulkWrite), which refuses the
// second copy only after it wrote every other entity of the window: a partial restore
// that fails with a BulkError, not ErrArchiveCorrupt.
func TestRestoreWritesNothingOfShardsThatHoldOneKeyTwice(t *testing.T) {
	t.Parallel()
	sb := setupShards(t, 140)
	cj, _ := sb.exportShards(t, sb.container, 2)
	cj.KeepTable = true
	rep := sb.combined(t, cj)
	shards, err := sb.a.readShards(sb.ctx, sb.container, rep.Manifest)
	if err != nil {
		t.Fatal(err)
	}
	first := firstLine(gunzipBytes(t, download(t, sb.bed, sb.container, shards[0].DataBlob)))
	rewriteShardRows(t, sb, rep.Manifest, 1, func(lines []byte) []byte {
		return append(bytes.Clone(first), lines...)
	})
	restoreWritesNothing(t, sb, 0) // the default window: both copies in one
}

// The same overlap with the two copies in different windows (windows of 50): the
// restore writes the key twice, the second copy (another version: its IP rewritten)
// silently replacing the first, and succeeds.
func TestRestoreWritesNothingOfShardsThatHoldOneKeyTwiceInTwoWindows(t *testing.T) {
	t.Parallel()
	sb := setupShards(t, 140)
	cj, _ := sb.exportShards(t, sb.container, 2)
	cj.KeepTable = true
	rep := sb.combined(t, cj)
	shards, err := sb.a.readShards(sb.ctx, sb.container, rep.Manifest)
	if err != nil {
		t.Fatal(err)
	}
	first := bytes.Replace(firstLine(gunzipBytes(t, download(t, sb.bed, sb.container, shards[0].DataBlob))), []byte(`"10.0.`), []byte(`"66.6.`), 1)
	rewriteShardRows(t, sb, rep.Manifest, 1, func(lines []byte) []byte {
		return append(bytes.Clone(first), lines...)
	})
	restoreWritesNothing(t, sb, 50)
}
