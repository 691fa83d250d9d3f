package tablearchive

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/internal/testenv"
	"github.com/tablepatterns/tablepatterns/repo"

	"compress/gzip"
	"io"
	"strings"
)

// forgeGeneration writes, as someone with write access to the container and read access
// to the table would, a generation of name whose manifest is self-consistent, whose
// Versions hash the table as it is now (keys and ETags), whose CheckedAt is checkedAt,
// and whose data holds the table's keys with forged content (versions empty: a manifest
// that matches nothing).
func forgeGeneration(t *testing.T, b *bed, container, name, checkedAt string, matchVersions bool) Manifest {
	return forgeWithVersions(t, b, container, name, checkedAt, matchVersions, "")
}

// forgeWithVersions is forgeGeneration with the Versions copied from elsewhere (an
// earlier, genuine manifest in the same container) when versions is not empty.
func forgeWithVersions(t *testing.T, b *bed, container, name, checkedAt string, matchVersions bool, versions string) Manifest {
	t.Helper()
	tb, err := repo.New[codec.Entity](b.clients.Tables, name, nil)
	if err != nil {
		t.Fatal(err)
	}
	vh := sha256.New()
	var lines bytes.Buffer
	m := Manifest{Format: ManifestFormat, Table: name, Generation: newGeneration(time.Now())}
	lastPK := ""
	for e, err := range tb.Query(b.ctx, repo.Query{}) {
		if err != nil {
			t.Fatal(err)
		}
		addVersion(vh, e.PartitionKey, e.RowKey, e.ETag)
		f := &codec.Entity{PartitionKey: e.PartitionKey, RowKey: e.RowKey, Properties: map[string]any{"Tag": "forged"}}
		line, err := codec.EncodeEntity(f)
		if err != nil {
			t.Fatal(err)
		}
		lines.Write(line)
		lines.WriteByte('\n')
		m.Entities++
		m.Bytes += int64(len(line)) + 1
		if m.Entities == 1 || e.PartitionKey != lastPK {
			m.Partitions++
			lastPK = e.PartitionKey
		}
	}
	sum := sha256.Sum256(lines.Bytes())
	m.SHA256 = hex.EncodeToString(sum[:])
	m.DataBlob = DataBlobName(name, m.Generation)
	switch {
	case versions != "":
		m.Versions = versions
	case matchVersions:
		m.Versions = hex.EncodeToString(vh.Sum(nil))
	default:
		m.Versions = hex.EncodeToString(make([]byte, 32))
	}
	now := time.Now().UTC()
	m.ExportStarted = now.Format(time.RFC3339Nano)
	m.CheckedAt = checkedAt
	m.ExportedAt = now.Format("2006-01-02T15:04:05.0000000Z")
	m.Sealed = "operator"
	if err := b.a.createContainer(b.ctx, container); err != nil {
		t.Fatal(err)
	}
	if _, err := b.clients.Blobs.UploadBuffer(b.ctx, container, m.DataBlob, gzipBytes(t, lines.Bytes()), &azblob.UploadBufferOptions{}); err != nil {
		t.Fatal(err)
	}
	body, _ := json.Marshal(m)
	if _, err := b.clients.Blobs.UploadBuffer(b.ctx, container, ManifestBlobName(name, m.Generation), body, &azblob.UploadBufferOptions{}); err != nil {
		t.Fatal(err)
	}
	return m
}

// A generation forged in the container (far-future CheckedAt, self-consistent manifest,
// Versions copied from the table's keys and ETags, forged entity content) is taken as
// "the latest generation already holds the table exactly as it is": the job reads the
// forged data, finds it matches the forged manifest, and deletes the table. The rerun
// path reads the data "because the container is not this run's to trust", but checks it
// only against a manifest from the same container. Expected: the table is not deleted on
// the strength of an export whose content was never compared with the table's; observed:
// deleted, and the restore gives the forged content.
func TestForgedLatestGenerationDeletesTable(t *testing.T) {
	t.Parallel()
	b := setup(t, "")
	container := testenv.ContainerName(t)
	name := b.current.Name()
	fillTable(t, b, name, 20, "a")
	forged := forgeGeneration(t, b, container, name, "8999-01-01T00:00:00Z", true)
	rep, err := b.a.ArchiveTable(b.ctx, ArchiveTableJob{Table: name, Container: container, Sealed: true})
	t.Logf("archive: %s generation %s, %v", rep.Outcome, rep.Manifest.Generation, err)
	if ok, _ := b.current.Exists(b.ctx); ok {
		return
	}
	back := b.newTable(t, "Back")
	if _, err := b.a.RestoreTable(b.ctx, RestoreTableJob{Table: name, Container: container, Target: back.Name()}); err != nil {
		t.Fatal(err)
	}
	e, err := back.Get(b.ctx, "user00", "a00000")
	if err != nil {
		t.Fatal(err)
	}
	if e.Properties["Tag"] != "a" {
		t.Fatalf("table deleted after forged generation %s (CheckedAt %s): restored Tag %v, want a", forged.Generation, forged.CheckedAt, e.Properties["Tag"])
	}
}

// A forged CheckedAt at the top of the accepted range (year 9000) makes the archiver
// raise its own generation's CheckedAt above it, into year 9001, which its own
// orderKey then refuses: the job fails with ErrArchiveCorrupt on its own manifest, and
// every later listing of the table's generations (restore, ReadManifest) fails too.
// Expected: a CheckedAt the archiver writes is one it reads back (or a forged one far
// beyond any clock is refused as untrusted input).
func TestCheckedAtAtTopOfRangeMakesOwnManifestUnreadable(t *testing.T) {
	t.Parallel()
	b := setup(t, "")
	container := testenv.ContainerName(t)
	name := b.current.Name()
	fillTable(t, b, name, 10, "a")
	forgeGeneration(t, b, container, name, "9000-12-31T23:59:59.9999999Z", false)
	rep, err := b.a.ArchiveTable(b.ctx, ArchiveTableJob{Table: name, Container: container, Sealed: true, KeepTable: true})
	if err != nil {
		t.Fatalf("archive after a forged CheckedAt: %+v %v", rep, err)
	}
	gens, err := b.a.Generations(b.ctx, container, name)
	if errors.Is(err, ErrArchiveCorrupt) {
		t.Fatalf("the archiver's own generation %s (CheckedAt %s) is unreadable: %v", rep.Manifest.Generation, rep.Manifest.CheckedAt, err)
	}
	if err != nil || gens[len(gens)-1] != rep.Manifest.Generation {
		t.Fatalf("generations %v %v, want %s last", gens, err, rep.Manifest.Generation)
	}
}

// The same with write access to the container only: the Versions are copied from the
// genuine manifest of an earlier export of the unchanged table (kept: KeepTable), so no
// access to the table is needed. The next job deletes the table on the strength of the
// forged generation.
func TestForgedGenerationFromGenuineManifestDeletesTable(t *testing.T) {
	t.Parallel()
	b := setup(t, "")
	container := testenv.ContainerName(t)
	name := b.current.Name()
	fillTable(t, b, name, 20, "a")
	first, err := b.a.ArchiveTable(b.ctx, ArchiveTableJob{Table: name, Container: container, Sealed: true, KeepTable: true})
	if err != nil {
		t.Fatal(err)
	}
	forged := forgeWithVersions(t, b, container, name, "8999-01-01T00:00:00Z", false, first.Manifest.Versions)
	rep, err := b.a.ArchiveTable(b.ctx, ArchiveTableJob{Table: name, Container: container, Sealed: true})
	t.Logf("archive: %s generation %s, %v", rep.Outcome, rep.Manifest.Generation, err)
	if ok, _ := b.current.Exists(b.ctx); ok {
		return
	}
	back := b.newTable(t, "Back")
	if _, err := b.a.RestoreTable(b.ctx, RestoreTableJob{Table: name, Container: container, Target: back.Name(), Generation: GenerationAll}); err != nil {
		t.Fatal(err)
	}
	e, err := back.Get(b.ctx, "user00", "a00000")
	if err != nil {
		t.Fatal(err)
	}
	if e.Properties["Tag"] != "a" {
		t.Fatalf("table deleted after forged generation %s: restore of all generations gives Tag %v, want a", forged.Generation, e.Properties["Tag"])
	}
}

// The sweep ages a data blob by the service's clock: a sweeping host whose own clock
// runs two hours ahead does not find a fresh orphan (maybe a running export) old, and
// once the service's time has passed the bound, the same orphan is swept.
func TestSweepAgesByTheServiceClock(t *testing.T) {
	t.Parallel()
	ps := testenv.Proxies(t)
	b := setup(t, ps.ConnectionString)
	container := testenv.ContainerName(t)
	name := b.current.Name()
	if err := b.a.createContainer(b.ctx, container); err != nil {
		t.Fatal(err)
	}
	orphan := DataBlobName(name, newGeneration(time.Now()))
	if _, err := b.clients.Blobs.UploadBuffer(b.ctx, container, orphan, gzipBytes(t, []byte("{}\n")), &azblob.UploadBufferOptions{}); err != nil {
		t.Fatal(err)
	}
	skewed := b.another(t)
	skewed.seams.clock = func() time.Time { return time.Now().Add(2 * time.Hour) }
	if swept, err := skewed.SweepAbortedExports(b.ctx, container, name, time.Hour, false); err != nil || len(swept) != 0 {
		t.Fatalf("a host clock two hours ahead swept a fresh orphan: %v %v", swept, err)
	}
	if names := blobNames(t, b, container); len(names) != 1 || names[0] != orphan {
		t.Fatalf("blobs: %v, want the orphan kept", names)
	}
	skewed.seams.serviceAhead = 2 * time.Hour
	if swept, err := skewed.SweepAbortedExports(b.ctx, container, name, time.Hour, false); err != nil || len(swept) != 1 || swept[0] != orphan {
		t.Fatalf("an orphan two hours old by the service's clock: %v %v, want [%s]", swept, err, orphan)
	}
}

// A generation forged with write access to the container only, ordered where a genuine
// one could be (CheckedAt now, inside the accepted range), with Versions copied from the
// genuine manifest of the unchanged table and forged content: the rerun path compares
// the table's own content with the manifest, finds it differs, and deletes the table only
// after a generation of its own, which a restore of the latest gives back.
func TestForgedInRangeGenerationIsNotTrustedForTheDelete(t *testing.T) {
	t.Parallel()
	b := setup(t, "")
	container := testenv.ContainerName(t)
	name := b.current.Name()
	fillTable(t, b, name, 20, "a")
	first, err := b.a.ArchiveTable(b.ctx, ArchiveTableJob{Table: name, Container: container, Sealed: true, KeepTable: true})
	if err != nil {
		t.Fatal(err)
	}
	forged := forgeWithVersions(t, b, container, name, time.Now().UTC().Format(time.RFC3339Nano), false, first.Manifest.Versions)
	if gens, err := b.a.Generations(b.ctx, container, name); err != nil || len(gens) != 2 || gens[1] != forged.Generation {
		t.Fatalf("generations %v %v: want the forged one latest (the attack needs it in range)", gens, err)
	}
	rep, err := b.a.ArchiveTable(b.ctx, ArchiveTableJob{Table: name, Container: container, Sealed: true})
	if err != nil || rep.Outcome != OutcomeMoved {
		t.Fatalf("archive: %+v %v", rep, err)
	}
	if rep.Manifest.Generation == forged.Generation || rep.Manifest.Generation == first.Manifest.Generation {
		t.Fatalf("the table was deleted on the strength of generation %s, want a new one", rep.Manifest.Generation)
	}
	back := b.newTable(t, "Back")
	if _, err := b.a.RestoreTable(b.ctx, RestoreTableJob{Table: name, Container: container, Target: back.Name()}); err != nil {
		t.Fatal(err)
	}
	e, err := back.Get(b.ctx, "user00", "a00000")
	if err != nil || e.Properties["Tag"] != "a" {
		t.Fatalf("restore of the latest after the delete: %v %v, want Tag a", e, err)
	}
}

// A generation whose data blob disappears after its manifest landed (a sweep that listed
// it as old and read no manifest just before): the exporter's touch before DeleteTable
// finds it gone and keeps the table; the rerun exports a new generation and deletes the
// table after that one.
func TestDataGoneAfterManifestKeepsTable(t *testing.T) {
	t.Parallel()
	b := setup(t, "")
	container := testenv.ContainerName(t)
	name := b.current.Name()
	fillTable(t, b, name, 20, "a")
	a := b.another(t)
	var lost string
	a.seams.step = func(_, s string) error {
		if s != "manifest" {
			return nil
		}
		gens, err := b.a.listGenerations(b.ctx, container, name)
		if err != nil || len(gens) != 1 {
			return errors.Join(err, errors.New("no generation after the manifest"))
		}
		lost = gens[0].m.DataBlob
		_, err = b.clients.Blobs.DeleteBlob(b.ctx, container, lost, nil)
		return err
	}
	if rep, err := a.ArchiveTable(b.ctx, ArchiveTableJob{Table: name, Container: container, Sealed: true}); err == nil {
		t.Fatalf("archive whose data vanished after its manifest: %+v, want an error", rep)
	}
	if lost == "" {
		t.Fatal("the step never ran")
	}
	if ok, err := b.current.Exists(b.ctx); err != nil || !ok {
		t.Fatalf("the table was deleted although its data blob %s is gone (%v)", lost, err)
	}
	rep, err := b.a.ArchiveTable(b.ctx, ArchiveTableJob{Table: name, Container: container, Sealed: true})
	if err != nil || rep.Outcome != OutcomeMoved || rep.Manifest.DataBlob == lost {
		t.Fatalf("rerun: %+v %v", rep, err)
	}
	assertRestorable(t, b, container, name, 20)
}

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
func TestRerunDeletesAgainstForgedShardData(t *testing.T) {
	t.Parallel()
	sb := setupShards(t, 140)
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
func TestCombineFallbackTakesForgedLatest(t *testing.T) {
	t.Parallel()
	sb := setupShards(t, 140)
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
func TestForgedShardedGenerationFromUnshardedManifest(t *testing.T) {
	t.Parallel()
	sb := setupShards(t, 140)
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

// RestoreTable promises "nothing is written unless every byte verified": a sharded
// generation whose shard 1 was replaced (same length, self-consistent shard manifest,
// ShardsSHA256 rebound) no longer hashes, shard after shard, to its manifest's SHA256:
// ErrArchiveCorrupt before the first write, for the latest and for "all".
func TestRestoreRefusesForgedShardData(t *testing.T) {
	t.Parallel()
	sb := setupShards(t, 140)
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
	sb := setupShards(t, 140)
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
