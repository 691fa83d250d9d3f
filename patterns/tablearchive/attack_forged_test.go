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
func TestAttackForgedLatestGenerationDeletesTable(t *testing.T) {
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
func TestAttackCheckedAtAtTopOfRangeMakesOwnManifestUnreadable(t *testing.T) {
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
func TestAttackForgedGenerationFromGenuineManifestDeletesTable(t *testing.T) {
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
