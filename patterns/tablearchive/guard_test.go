package tablearchive

import (
	"errors"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"

	"github.com/tablepatterns/tablepatterns/internal/testenv"
)

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
