package tablearchive

import (
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/internal/faultproxy"
	"github.com/tablepatterns/tablepatterns/internal/testenv"
	"github.com/tablepatterns/tablepatterns/repo"
)

// Generations are ordered by when their export began, not by the table state they hold.
// Two deliveries of one job: A begins first and its export query is held at the proxy; B
// begins later, exports (v1), writes its manifest and stops there (kill -9). The entity is
// updated to v2. A's query is released: A reads v2, its checks pass (the table is as it
// read it), it writes its manifest and deletes the table. A holds v2 but sorts before B:
// restore-table (latest, the default) and restore -generation all both give v1 back; v2,
// acknowledged before the delete, is lost from every default restore.
func TestAttackEarlierStartedExportHoldsNewerData(t *testing.T) {
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
