package tablearchive

import (
	"net/http"
	"strings"
	"testing"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/internal/testenv"
	"github.com/tablepatterns/tablepatterns/repo"
)

// Two deliveries of one archive-table job at once: delivery 1's manifest upload is held
// at the proxy (its export done and checked); an update lands; delivery 2 exports,
// writes its manifest and deletes the table; delivery 1's manifest then goes through.
// Every generation must match its own data, the latest must hold the update, and a
// restore of the latest must give the newest version back.
func TestAttackArchiveTableDuplicatesHeldAtManifest(t *testing.T) {
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
