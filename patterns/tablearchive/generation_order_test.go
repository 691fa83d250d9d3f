package tablearchive

import (
	"testing"
	"time"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/internal/testenv"
	"github.com/tablepatterns/tablepatterns/repo"

	"errors"
	"net/http"
	"strings"

	"github.com/tablepatterns/tablepatterns/internal/faultproxy"

	"sync"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
)

// Generations are ordered by the name the exporting archiver gives them from its own
// clock. Two worker processes whose clocks differ by less than Options.ClockSkew (the
// margin the package says it allows for) archive a table and, after a late write
// re-created and updated it, its second version. The second export must be "latest",
// and restoring all generations must end with the newer copy of the updated entity.
// Not parallel: it swaps the package clock.
func TestGenerationOrderFollowsArchiverClock(t *testing.T) {
	b := setup(t, "")
	container := testenv.ContainerName(t)
	name := b.current.Name()
	job := ArchiveTableJob{Table: name, Container: container, Sealed: true}
	if err := b.current.Insert(b.ctx, &codec.Entity{PartitionKey: "p", RowKey: "r", Properties: map[string]any{"V": int32(1)}}); err != nil {
		t.Fatal(err)
	}
	// Archiver 1: its clock runs 3 minutes fast (inside the default 5-minute ClockSkew).
	real := now
	now = func() time.Time { return real().Add(3 * time.Minute) }
	rep1, err := b.a.ArchiveTable(b.ctx, job)
	now = real
	if err != nil || rep1.Outcome != OutcomeMoved {
		t.Fatalf("first archive: %+v %v", rep1, err)
	}
	// A late write re-creates the table with a newer version of the entity.
	if err := b.current.CreateIfNotExists(b.ctx); err != nil {
		t.Fatal(err)
	}
	if err := b.current.Insert(b.ctx, &codec.Entity{PartitionKey: "p", RowKey: "r", Properties: map[string]any{"V": int32(2)}}); err != nil {
		t.Fatal(err)
	}
	// Archiver 2: the correct clock.
	rep2, err := b.a.ArchiveTable(b.ctx, job)
	if err != nil || rep2.Outcome != OutcomeMoved {
		t.Fatalf("second archive: %+v %v", rep2, err)
	}
	gens, _ := b.a.Generations(b.ctx, container, name)
	t.Logf("export 1: %s, export 2: %s, listed order %v", rep1.Manifest.Generation, rep2.Manifest.Generation, gens)
	for _, g := range []string{GenerationLatest, GenerationAll} {
		target := b.newTable(t, "R"+map[string]string{"": "latest", "all": "all"}[g])
		if _, err := b.a.RestoreTable(b.ctx, RestoreTableJob{Table: name, Container: container, Target: target.Name(), Generation: g}); err != nil {
			t.Fatal(err)
		}
		got, err := target.Get(b.ctx, "p", "r")
		if err != nil {
			t.Fatal(err)
		}
		if v := got.Properties["V"]; v != int32(2) {
			t.Errorf("restore %q gives V=%v: the earlier export (made by a clock 3 min fast) sorts as newer; want V=2 (the last export)", g, v)
		}
	}
	_ = repo.ErrNotFound
}

// Generations are ordered by when their export began, not by the table state they hold.
// Two deliveries of one job: A begins first and its export query is held at the proxy; B
// begins later, exports (v1), writes its manifest and stops there (kill -9). The entity is
// updated to v2. A's query is released: A reads v2, its checks pass (the table is as it
// read it), it writes its manifest and deletes the table. A holds v2 but sorts before B:
// restore-table (latest, the default) and restore -generation all both give v1 back; v2,
// acknowledged before the delete, is lost from every default restore.
func TestEarlierStartedExportHoldsNewerData(t *testing.T) {
	t.Parallel()
	ps := testenv.Proxies(t)
	b := setup(t, ps.ConnectionString)
	container := testenv.ContainerName(t)
	name := b.current.Name()
	fillTable(t, b, name, 50, "a")
	job := ArchiveTableJob{Table: name, Container: container, Sealed: true}
	p := ps.Table.PauseAt("A's export query", func(r *http.Request) bool {
		return faultproxy.IsListEntities(r) && strings.Contains(r.URL.Path, "/"+name+"(")
	}, 2) // 1: A's Exists probe; 2: its export
	t.Cleanup(p.Release)
	da := b.another(t)
	doneA := make(chan error, 1)
	var repA TableReport
	go func() { var err error; repA, err = da.ArchiveTable(b.ctx, job); doneA <- err }()
	if err := p.Wait(b.ctx); err != nil {
		t.Fatal(err)
	}
	db := b.another(t)
	db.seams.step = func(_, s string) error {
		if s == "manifest" {
			return errCrash
		}
		return nil
	}
	if _, err := db.ArchiveTable(b.ctx, job); !errors.Is(err, errCrash) {
		t.Fatalf("B: %v", err)
	}
	if err := b.current.Update(b.ctx, &codec.Entity{PartitionKey: "user00", RowKey: "a00000", Properties: map[string]any{"Tag": "v2"}}, &repo.UpdateOptions{Unconditional: true}); err != nil {
		t.Fatal(err)
	}
	p.Release()
	if err := <-doneA; err != nil {
		t.Fatalf("A: %v", err)
	}
	if exists, _ := b.current.Exists(b.ctx); exists {
		t.Fatalf("A did not delete the table (%s)", repA.Outcome)
	}
	gens, _ := b.a.Generations(b.ctx, container, name)
	t.Logf("A (holds v2): %s; generations: %v", repA.Manifest.Generation, gens)
	for _, g := range []string{GenerationLatest, GenerationAll} {
		target := b.newTable(t, "R"+map[string]string{"": "latest", "all": "all"}[g])
		if _, err := b.a.RestoreTable(b.ctx, RestoreTableJob{Table: name, Container: container, Target: target.Name(), Generation: g}); err != nil {
			t.Fatal(err)
		}
		got, err := target.Get(b.ctx, "user00", "a00000")
		if err != nil {
			t.Fatal(err)
		}
		if got.Properties["Tag"] != "v2" {
			t.Errorf("restore %q gives Tag=%v; want v2, the version the deleted table held", g, got.Properties["Tag"])
		}
	}
}

// The generation a job deletes the table after must be the latest. Delivery B, on a
// worker whose clock runs 3 minutes fast (inside ClockSkew), exports v1 and its manifest
// upload is held at the proxy. The entity becomes v2. Delivery A (correct clock) exports
// v2, writes its manifest (B's is not there yet, so nothing raises A's CheckedAt) and
// passes its Timestamp check; just before A's delete, B's manifest lands, with a later
// CheckedAt than A's (its clock) but v1. Deleting after A's own generation would make a
// generation holding v1 the latest: restore (latest, and all merged in order) would give
// v1 back. A must see that its generation is no longer the latest and start over.
func TestLaterGenerationAppearsBeforeDelete(t *testing.T) {
	t.Parallel()
	ps := testenv.Proxies(t)
	b := setup(t, ps.ConnectionString)
	container := testenv.ContainerName(t)
	name := b.current.Name()
	fillTable(t, b, name, 50, "a")
	job := ArchiveTableJob{Table: name, Container: container, Sealed: true}

	p := ps.Blob.PauseAt("B's manifest", func(r *http.Request) bool {
		return r.Method == http.MethodPut && strings.HasSuffix(r.URL.Path, "/manifest.json")
	}, 1)
	t.Cleanup(p.Release)
	db := b.another(t)
	db.seams.clock = func() time.Time { return time.Now().Add(3 * time.Minute) }
	doneB := make(chan error, 1)
	go func() { _, err := db.ArchiveTable(b.ctx, job); doneB <- err }()
	if err := p.Wait(b.ctx); err != nil {
		t.Fatal(err)
	}
	if err := b.current.Update(b.ctx, &codec.Entity{PartitionKey: "user00", RowKey: "a00000", Properties: map[string]any{"Tag": "v2"}}, &repo.UpdateOptions{Unconditional: true}); err != nil {
		t.Fatal(err)
	}
	da := b.another(t)
	var once sync.Once
	var errB error
	da.seams.step = func(_, s string) error {
		if s == "before-delete" {
			once.Do(func() { p.Release(); errB = <-doneB })
		}
		return nil
	}
	repA, err := da.ArchiveTable(b.ctx, job)
	if err != nil || repA.Outcome != OutcomeMoved {
		t.Fatalf("A: %+v %v", repA, err)
	}
	if !errors.Is(errB, ErrTableChanged) {
		t.Fatalf("B (exported v1, then the table changed): %v, want ErrTableChanged", errB)
	}
	gens, err := b.a.Generations(b.ctx, container, name)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("generations: %v; A deleted the table after %s", gens, repA.Manifest.Generation)
	if gens[len(gens)-1] != repA.Manifest.Generation {
		t.Fatalf("the table was deleted after %s, but the latest generation is %s", repA.Manifest.Generation, gens[len(gens)-1])
	}
	for _, g := range []string{GenerationLatest, GenerationAll} {
		target := b.newTable(t, "R"+map[string]string{"": "latest", "all": "all"}[g])
		if _, err := b.a.RestoreTable(b.ctx, RestoreTableJob{Table: name, Container: container, Target: target.Name(), Generation: g}); err != nil {
			t.Fatal(err)
		}
		got, err := target.Get(b.ctx, "user00", "a00000")
		if err != nil {
			t.Fatal(err)
		}
		if got.Properties["Tag"] != "v2" {
			t.Errorf("restore %q gives Tag=%v; want v2, the version the deleted table held", g, got.Properties["Tag"])
		}
	}
}

// The check before the delete remembers the versions of the entities written within
// ClockSkew of the export, 32 bytes each, up to MaxRecentWrites: a table with more is not
// quiet and is refused (ErrNotSealed, permanent), nothing deleted, and the export's data
// blob, which has no manifest, is deleted again.
func TestArchiveTableRecentWritesAreBounded(t *testing.T) {
	t.Parallel()
	b := setup(t, "")
	container := testenv.ContainerName(t)
	fillTable(t, b, b.current.Name(), 30, "a") // written just now: all recent
	a := b.another(t)
	a.seams.recentLimit = 10
	_, err := a.ArchiveTable(b.ctx, ArchiveTableJob{Table: b.current.Name(), Container: container, Sealed: true})
	if !errors.Is(err, ErrNotSealed) || !permanent(err) {
		t.Fatalf("30 recent writes with a bound of 10: %v, want ErrNotSealed", err)
	}
	if ok, err := b.current.Exists(b.ctx); !ok || err != nil {
		t.Fatalf("table deleted (%v)", err)
	}
	if names := blobNames(t, b, container); len(names) != 0 {
		t.Fatalf("blobs left by the refused export: %v", names)
	}
	a.seams.recentLimit = 30
	if rep, err := a.ArchiveTable(b.ctx, ArchiveTableJob{Table: b.current.Name(), Container: container, Sealed: true}); err != nil || rep.Outcome != OutcomeMoved {
		t.Fatalf("30 recent writes with a bound of 30: %+v %v", rep, err)
	}
}

// An export that fails after its upload (here: the table changed under it) deletes its
// data blob; SweepAbortedExports removes the data blobs without a manifest that a killed
// process leaves, once they are older than its bound, and never one with a manifest.
func TestAbortedExportsLeaveNoData(t *testing.T) {
	t.Parallel()
	ps := testenv.Proxies(t)
	b := setup(t, ps.ConnectionString)
	container := testenv.ContainerName(t)
	name := b.current.Name()
	fillTable(t, b, name, 20, "a")
	a := b.another(t)
	a.seams.step = func(_, s string) error {
		if s == "exported" {
			return b.current.Insert(b.ctx, &codec.Entity{PartitionKey: "user00", RowKey: "zz", Properties: map[string]any{"Tag": "new"}})
		}
		return nil
	}
	if _, err := a.ArchiveTable(b.ctx, ArchiveTableJob{Table: name, Container: container, Sealed: true, KeepTable: true}); !errors.Is(err, ErrTableChanged) {
		t.Fatalf("export of a changing table: %v, want ErrTableChanged", err)
	}
	if names := blobNames(t, b, container); len(names) != 0 {
		t.Fatalf("blobs left by the failed export: %v", names)
	}
	// A complete generation, and the data blob of a killed export beside it.
	rep, err := b.a.ArchiveTable(b.ctx, ArchiveTableJob{Table: name, Container: container, Sealed: true, KeepTable: true})
	if err != nil {
		t.Fatal(err)
	}
	orphan := DataBlobName(name, newGeneration(time.Now()))
	if _, err := b.clients.Blobs.UploadBuffer(b.ctx, container, orphan, gzipBytes(t, []byte("{}\n")), &azblob.UploadBufferOptions{}); err != nil {
		t.Fatal(err)
	}
	mark := ps.Blob.Count()
	if _, err := b.a.SweepAbortedExports(b.ctx, container, name, time.Minute, false); !errors.Is(err, repo.ErrInvalidInput) || ps.Blob.Count() != mark {
		t.Fatalf("a bound under an hour: %v (%d requests)", err, ps.Blob.Count()-mark)
	}
	if swept, err := b.a.SweepAbortedExports(b.ctx, container, name, time.Hour, false); err != nil || len(swept) != 0 {
		t.Fatalf("a fresh orphan (maybe a running export) swept: %v %v", swept, err)
	}
	later := b.another(t)
	later.seams.clock = func() time.Time { return time.Now().Add(2 * time.Hour) }
	later.seams.serviceAhead = 2 * time.Hour // the sweep ages by the service's clock
	if swept, err := later.SweepAbortedExports(b.ctx, container, name, time.Hour, true); err != nil || len(swept) != 1 || swept[0] != orphan {
		t.Fatalf("dry run: %v %v, want [%s]", swept, err, orphan)
	}
	if swept, err := later.SweepAbortedExports(b.ctx, container, strings.ToUpper(name), time.Hour, false); err != nil || len(swept) != 1 {
		t.Fatalf("sweep: %v %v", swept, err)
	}
	names := blobNames(t, b, container)
	want := []string{rep.Manifest.DataBlob, ManifestBlobName(name, rep.Manifest.Generation)}
	if len(names) != 2 || names[0] != want[0] || names[1] != want[1] {
		t.Fatalf("blobs after the sweep: %v, want %v", names, want)
	}
}

func blobNames(t *testing.T, b *bed, container string) []string {
	t.Helper()
	var names []string
	pager := b.clients.Blobs.NewListBlobsFlatPager(container, nil)
	for pager.More() {
		page, err := pager.NextPage(b.ctx)
		if err != nil {
			var re interface{ Error() string }
			if errors.As(err, &re) && strings.Contains(err.Error(), "ContainerNotFound") {
				return nil
			}
			t.Fatal(err)
		}
		for _, it := range page.Segment.BlobItems {
			names = append(names, *it.Name)
		}
	}
	return names
}

// Four deliveries of one archive-table job at once, table deleted at the end: each
// writes its own generation and each checks, before its delete, that the table is
// held by the latest one. All end moved or already archived (a delivery that kept
// meeting newer generations fails for a redelivery, which finds the table gone), and
// restore of the latest generation gives the whole table.
func TestArchiveTableConcurrentDuplicatesDelete(t *testing.T) {
	t.Parallel()
	b := setup(t, "")
	container := testenv.ContainerName(t)
	name := b.current.Name()
	fillTable(t, b, name, 300, "a")
	job := ArchiveTableJob{Table: name, Container: container, Sealed: true}
	errs := make(chan error, 4)
	for range 4 {
		go func() {
			_, err := b.another(t).ArchiveTable(b.ctx, job)
			errs <- err
		}()
	}
	for range 4 {
		if err := <-errs; err != nil && (permanent(err) || !strings.Contains(err.Error(), "kept appearing")) {
			t.Errorf("delivery: %v", err)
		}
	}
	if rep, err := b.a.ArchiveTable(b.ctx, job); err != nil || rep.Outcome != OutcomeAlreadyArchived {
		t.Fatalf("redelivery: %+v %v", rep, err)
	}
	if ok, _ := b.current.Exists(b.ctx); ok {
		t.Fatal("the table was not deleted")
	}
	target := b.archive
	if _, err := b.a.RestoreTable(b.ctx, RestoreTableJob{Table: name, Container: container, Target: target.Name()}); err != nil {
		t.Fatal(err)
	}
	if got, err := target.Collect(b.ctx, repo.Query{}); err != nil || len(got) != 300 {
		t.Fatalf("restore of the latest: %d entities (%v), want 300", len(got), err)
	}
}

// A rerun after a stop between the manifest and the delete finds that the latest
// generation holds the table (its Versions match) and goes straight to the delete. The
// data blob of that generation was damaged meanwhile: deleting the table on its strength
// would lose everything (restore then fails as corrupt). The rerun reads the data first,
// and exports the table again when it does not match.
func TestRerunReadsTheLatestDataBeforeTheDelete(t *testing.T) {
	t.Parallel()
	b := setup(t, "")
	container := testenv.ContainerName(t)
	name := b.current.Name()
	fillTable(t, b, name, 120, "a")
	job := ArchiveTableJob{Table: name, Container: container, Sealed: true}
	d1 := b.another(t)
	var first Manifest
	d1.seams.step = func(_, s string) error {
		if s == "manifest" {
			return errCrash
		}
		return nil
	}
	if _, err := d1.ArchiveTable(b.ctx, job); !errors.Is(err, errCrash) {
		t.Fatalf("first run: %v", err)
	}
	m, err := b.a.ReadManifest(b.ctx, container, name)
	if err != nil {
		t.Fatal(err)
	}
	first = m
	if _, err := b.clients.Blobs.UploadBuffer(b.ctx, container, first.DataBlob, gzipBytes(t, []byte("{}\n")), &azblob.UploadBufferOptions{}); err != nil {
		t.Fatal(err)
	}
	rep, err := b.a.ArchiveTable(b.ctx, job)
	if err != nil || rep.Outcome != OutcomeMoved || rep.Manifest.Generation == first.Generation {
		t.Fatalf("rerun: %+v %v; want a new generation", rep, err)
	}
	target := b.archive
	if _, err := b.a.RestoreTable(b.ctx, RestoreTableJob{Table: name, Container: container, Target: target.Name()}); err != nil {
		t.Fatalf("restore of the latest: %v", err)
	}
	if got, err := target.Collect(b.ctx, repo.Query{}); err != nil || len(got) != 120 {
		t.Fatalf("restored %d entities (%v), want 120", len(got), err)
	}
}

// The floor of CheckedAt counts only the generations whose checks came first. Delivery A
// passes its rescan (v1) and stops there; the entity becomes v2; delivery B exports v2,
// writes its manifest and deletes the table; A's manifest then lands. Raised above B's
// (which A would see if it listed after its rescan), A's stale export would be "latest";
// A's check began before B's, so it must order first.
func TestStaleExportNotRaisedAboveLaterCheck(t *testing.T) {
	t.Parallel()
	b := setup(t, "")
	container := testenv.ContainerName(t)
	name := b.current.Name()
	fillTable(t, b, name, 50, "a")
	job := ArchiveTableJob{Table: name, Container: container, Sealed: true}
	da := b.another(t)
	paused, resume := make(chan struct{}), make(chan struct{})
	var once sync.Once
	da.seams.step = func(_, s string) error {
		if s == "checked" {
			once.Do(func() { close(paused); <-resume })
		}
		return nil
	}
	doneA := make(chan error, 1)
	go func() { _, err := da.ArchiveTable(b.ctx, job); doneA <- err }()
	<-paused
	if err := b.current.Update(b.ctx, &codec.Entity{PartitionKey: "user00", RowKey: "a00000", Properties: map[string]any{"Tag": "v2"}}, &repo.UpdateOptions{Unconditional: true}); err != nil {
		t.Fatal(err)
	}
	if rep, err := b.a.ArchiveTable(b.ctx, job); err != nil || rep.Outcome != OutcomeMoved {
		t.Fatalf("B: %+v %v", rep, err)
	}
	close(resume)
	if err := <-doneA; err != nil && !errors.Is(err, ErrTableChanged) {
		t.Fatalf("A: %v", err)
	}
	gens, _ := b.a.Generations(b.ctx, container, name)
	t.Logf("generations: %v", gens)
	target := b.archive
	if _, err := b.a.RestoreTable(b.ctx, RestoreTableJob{Table: name, Container: container, Target: target.Name()}); err != nil {
		t.Fatal(err)
	}
	got, err := target.Get(b.ctx, "user00", "a00000")
	if err != nil || got.Properties["Tag"] != "v2" {
		t.Fatalf("restore latest gives Tag=%v (%v); want v2, what the table held when B deleted it", got.Properties["Tag"], err)
	}
}
