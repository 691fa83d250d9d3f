package tablearchive

import (
	"testing"
	"time"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/internal/testenv"
	"github.com/tablepatterns/tablepatterns/repo"
)

// Generations are ordered by the name the exporting archiver gives them from its own
// clock. Two worker processes whose clocks differ by less than Options.ClockSkew (the
// margin the package says it allows for) archive a table and, after a late write
// re-created and updated it, its second version. The second export must be "latest",
// and restoring all generations must end with the newer copy of the updated entity.
// Not parallel: it swaps the package clock.
func TestAttackGenerationOrderFollowsArchiverClock(t *testing.T) {
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
