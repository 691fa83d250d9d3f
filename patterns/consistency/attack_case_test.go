package consistency

import (
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/tablepatterns/tablepatterns/internal/testenv"
	"github.com/tablepatterns/tablepatterns/repo"
)

// Table names are case-insensitive (Validate itself refuses a target that differs from
// the source only by case), so two deliveries of "the same" archive-entity job may spell
// the source differently (two enqueuers, an operator retyping it). The blob target's name
// embedded the source name as given: each spelling read and wrote its own copy, and one
// of them could keep a stale version beside the newest. (The race itself cannot run on
// Azurite, which treats table names case-sensitively; the names decide it.) The archive
// names of one entity and of one table's exports must not depend on the spelling.
func TestAttackArchiveNamesIgnoreTableNameCase(t *testing.T) {
	if a, b := EntityBlobName("SignIns", "p", "r"), EntityBlobName("SIGNINS", "p", "r"); a != b {
		t.Errorf("one entity, two archive blobs: %q and %q (duplicate jobs spelling the source differently keep two copies, one stale)", a, b)
	}
	if a, b := ManifestBlobName("SignIns20240101", "g"), ManifestBlobName("signins20240101", "g"); a != b {
		t.Errorf("one table, two generation folders: %q and %q (restore -generation all and the already-archived check miss the other spelling's exports)", a, b)
	}
	if a, b := DataBlobName("SignIns20240101", "g"), DataBlobName("SIGNINS20240101", "g"); a != b {
		t.Errorf("one table, two data folders: %q and %q", a, b)
	}
}

// An entity archived under one spelling of its table is read back under another.
func TestArchivedEntityFoundUnderEverySpelling(t *testing.T) {
	t.Parallel()
	b := setup(t, "")
	cont := testenv.ContainerName(t)
	src := b.current.Name()
	if err := b.current.Insert(b.ctx, employee("Sales", "new 1", 31)); err != nil {
		t.Fatal(err)
	}
	job := ArchiveEntityJob{Source: src, PartitionKey: "Sales", RowKey: "new 1", TargetContainer: cont}
	if out, err := b.a.ArchiveEntity(b.ctx, job); err != nil || out != OutcomeMoved {
		t.Fatalf("move: %v %v", out, err)
	}
	for _, spelling := range []string{src, strings.ToUpper(src), strings.ToLower(src)} {
		if e, err := b.a.ReadArchivedEntity(b.ctx, cont, spelling, "Sales", "new 1"); err != nil || e.Properties["Age"] != int32(31) {
			t.Errorf("read as %s: %+v %v", spelling, e, err)
		}
	}
	if _, err := b.a.ReadArchivedEntity(b.ctx, cont, src, "Sales", "nobody"); !errors.Is(err, repo.ErrNotFound) {
		t.Fatalf("missing entity: %v", err)
	}
}

// Exports written before the folder became lower case sit under the job's spelling of
// the table. Generations, restore of all generations and the already-archived check find
// them beside the new ones, under any spelling.
func TestOldSpellingGenerationsStayReadable(t *testing.T) {
	t.Parallel()
	b := setup(t, "")
	cont := testenv.ContainerName(t)
	name := b.current.Name() // mixed case
	fillTable(t, b, name, 40, "a")
	rep1, err := b.a.ArchiveTable(b.ctx, ArchiveTableJob{Table: name, Container: cont, Sealed: true, KeepTable: true})
	if err != nil {
		t.Fatal(err)
	}
	// Move the first export to the old layout: folder as spelled, no CheckedAt.
	resp, err := b.clients.Blobs.DownloadStream(b.ctx, cont, rep1.Manifest.DataBlob, nil)
	if err != nil {
		t.Fatal(err)
	}
	buf := new(strings.Builder)
	if _, err := io.Copy(buf, resp.Body); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	data := []byte(buf.String())
	old := rep1.Manifest
	old.CheckedAt = ""
	old.DataBlob = dataBlobIn(name, old.Generation)
	if _, err := b.clients.Blobs.UploadBuffer(b.ctx, cont, old.DataBlob, data, nil); err != nil {
		t.Fatal(err)
	}
	mb, _ := json.Marshal(old)
	if _, err := b.clients.Blobs.UploadBuffer(b.ctx, cont, manifestBlobIn(name, old.Generation), mb, nil); err != nil {
		t.Fatal(err)
	}
	for _, blob := range []string{rep1.Manifest.DataBlob, ManifestBlobName(name, old.Generation)} {
		if _, err := b.clients.Blobs.DeleteBlob(b.ctx, cont, blob, nil); err != nil {
			t.Fatal(err)
		}
	}
	// The table changes; the new export lands in the lower-case folder.
	fillTable(t, b, name, 2, "late")
	rep2, err := b.a.ArchiveTable(b.ctx, ArchiveTableJob{Table: name, Container: cont, Sealed: true})
	if err != nil || rep2.Outcome != OutcomeMoved || !strings.HasPrefix(rep2.Manifest.DataBlob, strings.ToLower(name)+"/") {
		t.Fatalf("second export: %+v %v", rep2, err)
	}
	for _, spelling := range []string{name, strings.ToUpper(name)} {
		gens, err := b.a.Generations(b.ctx, cont, spelling)
		if err != nil || len(gens) != 2 || gens[0] != old.Generation || gens[1] != rep2.Manifest.Generation {
			t.Fatalf("generations as %s: %v %v, want [%s %s]", spelling, gens, err, old.Generation, rep2.Manifest.Generation)
		}
	}
	target := b.archive
	if _, err := b.a.RestoreTable(b.ctx, RestoreTableJob{Table: strings.ToUpper(name), Container: cont, Target: target.Name(), Generation: GenerationAll}); err != nil {
		t.Fatal(err)
	}
	if got, err := target.Collect(b.ctx, repo.Query{}); err != nil || len(got) != 42 {
		t.Fatalf("restore all: %d entities (%v), want 42", len(got), err)
	}
	if rep, err := b.a.ArchiveTable(b.ctx, ArchiveTableJob{Table: name, Container: cont, Sealed: true}); err != nil || rep.Outcome != OutcomeAlreadyArchived {
		t.Fatalf("rerun: %+v %v", rep, err)
	}
}
