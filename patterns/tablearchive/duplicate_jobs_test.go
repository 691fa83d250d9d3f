package tablearchive

import (
	"net/http"
	"strings"
	"testing"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/internal/testenv"
	"github.com/tablepatterns/tablepatterns/repo"

	"errors"

	"github.com/tablepatterns/tablepatterns/internal/faultproxy"
)

// Two deliveries of one archive-table job at once: delivery 1's manifest upload is held
// at the proxy (its export done and checked); an update lands; delivery 2 exports,
// writes its manifest and deletes the table; delivery 1's manifest then goes through.
// Every generation must match its own data, the latest must hold the update, and a
// restore of the latest must give the newest version back.
func TestArchiveTableDuplicatesHeldAtManifest(t *testing.T) {
	t.Parallel()
	ps := testenv.Proxies(t)
	b := setup(t, ps.ConnectionString)
	container := testenv.ContainerName(t)
	name := b.current.Name()
	fillTable(t, b, name, 200, "a")
	job := ArchiveTableJob{Table: name, Container: container, Sealed: true}
	p := ps.Blob.PauseAt("manifest 1", func(r *http.Request) bool {
		return r.Method == http.MethodPut && strings.HasSuffix(r.URL.Path, "/manifest.json")
	}, 1)
	t.Cleanup(p.Release)
	d1 := b.another(t)
	done := make(chan error, 1)
	go func() { _, err := d1.ArchiveTable(b.ctx, job); done <- err }()
	if err := p.Wait(b.ctx); err != nil {
		t.Fatal(err)
	}
	if err := b.current.Update(b.ctx, &codec.Entity{PartitionKey: "user00", RowKey: "a00000", Properties: map[string]any{"Tag": "v2"}}, &repo.UpdateOptions{Unconditional: true}); err != nil {
		t.Fatal(err)
	}
	rep2, err := b.a.ArchiveTable(b.ctx, job)
	if err != nil || rep2.Outcome != OutcomeMoved {
		t.Fatalf("delivery 2: %+v %v", rep2, err)
	}
	p.Release()
	err1 := <-done
	t.Logf("delivery 1 after release: %v", err1)
	// A redelivery of delivery 1's message.
	if rep, err := b.a.ArchiveTable(b.ctx, job); err != nil {
		t.Fatalf("redelivery: %+v %v", rep, err)
	}
	gens, err := b.a.Generations(b.ctx, container, name)
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range gens {
		m, err := b.a.readManifest(b.ctx, container, name, g)
		if err != nil {
			t.Fatal(err)
		}
		if err := b.a.verifyData(b.ctx, container, m); err != nil {
			t.Fatalf("generation %s: %v", g, err)
		}
	}
	target := b.archive
	if _, err := b.a.RestoreTable(b.ctx, RestoreTableJob{Table: name, Container: container, Target: target.Name()}); err != nil {
		t.Fatal(err)
	}
	got, err := target.Get(b.ctx, "user00", "a00000")
	if err != nil || got.Properties["Tag"] != "v2" {
		t.Fatalf("latest generation (of %v) restores %v (%v), want the update v2", gens, got.Properties["Tag"], err)
	}
}

// Two deliveries of one archive-table job: delivery 1 has written its manifest and is
// held (here: stopped) before its Timestamp check and delete. Delivery 2 finds that the
// latest generation "holds the table" by a keys+ETags scan and deletes the table without
// any Timestamp check. A writer acting during that scan, behind the scan position (an
// update of a row on the first page, an insert sorting first), is not seen: the table is
// deleted and both writes are lost from table and archive. The README promises the window
// is "between the start of the last Timestamp check and DeleteTable".
func TestArchiveTableDuplicateScanPathLosesWrites(t *testing.T) {
	t.Parallel()
	ps := testenv.Proxies(t)
	ps.Table.EmulatePaging(100, false)
	b := setup(t, ps.ConnectionString)
	container := testenv.ContainerName(t)
	name := b.current.Name()
	fillTable(t, b, name, 300, "a") // three pages
	job := ArchiveTableJob{Table: name, Container: container, Sealed: true}

	d1 := b.another(t)
	d1.seams.step = func(_, s string) error {
		if s == "manifest" {
			return errCrash // held/stopped after its manifest, before its checks and delete
		}
		return nil
	}
	if _, err := d1.ArchiveTable(b.ctx, job); !errors.Is(err, errCrash) {
		t.Fatalf("delivery 1: %v", err)
	}

	// Delivery 2: hold the second page of its scan.
	p := ps.Table.PauseAt("scan page 2", faultproxy.IsListEntities, 3) // 1: Exists, 2: page 1 of the scan, 3: page 2
	t.Cleanup(p.Release)
	done := make(chan error, 1)
	go func() { _, err := b.a.ArchiveTable(b.ctx, job); done <- err }()
	if err := p.Wait(b.ctx); err != nil {
		t.Fatal(err)
	}
	// The writer (a writer that should not exist, which is exactly what the checks are for).
	if err := b.current.Update(b.ctx, &codec.Entity{PartitionKey: "user00", RowKey: "a00000", Properties: map[string]any{"Tag": "updated"}}, &repo.UpdateOptions{Unconditional: true}); err != nil {
		t.Fatal(err)
	}
	if err := b.current.Insert(b.ctx, &codec.Entity{PartitionKey: "aaa", RowKey: "new", Properties: map[string]any{"Tag": "new"}}); err != nil {
		t.Fatal(err)
	}
	p.Release()
	err := <-done
	if errors.Is(err, ErrTableChanged) {
		return // held
	}
	exists, _ := b.current.Exists(b.ctx)
	t.Fatalf("delivery 2: %v; table exists afterwards: %v. An update and an insert acknowledged during its scan are in neither the table nor any generation; want ErrTableChanged and nothing deleted", err, exists)
}
