package consistency

import (
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/internal/testenv"
	"github.com/tablepatterns/tablepatterns/repo"
)

// Table names are case-insensitive (Validate itself refuses a target that differs from
// the source only by case), so two deliveries of "the same" archive-entity job may spell
// the source differently (two enqueuers, an operator retyping it). The blob target's name
// embeds the source name as given: each spelling reads and writes its own copy. Delivery 1
// copies v1 and pauses before its delete; the application updates to v2; delivery 2
// (other spelling) moves v2; delivery 1's delete gets 404, finds "its" copy recording v1
// and reports moved. The archive now holds a stale copy (v1) beside the newest (v2).
func TestAttackArchiveEntityBlobSourceCaseKeepsStaleCopy(t *testing.T) {
	t.Parallel()
	b := setup(t, "")
	container := testenv.ContainerName(t)
	rk := "case1"
	if err := b.current.Insert(b.ctx, employee("Sales", rk, 1)); err != nil {
		t.Fatal(err)
	}
	upper := strings.ToUpper(b.current.Name())
	if _, err := b.current.Get(b.ctx, "Sales", rk); err != nil {
		t.Fatal(err)
	}
	// Same table under the other spelling (the service is case-insensitive).
	alias, err := repo.New[codec.Entity](b.clients.Tables, upper, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := alias.Get(b.ctx, "Sales", rk); err != nil {
		t.Skipf("Azurite treats table names case-sensitively here: %v", err)
	}
	job1 := ArchiveEntityJob{Source: b.current.Name(), PartitionKey: "Sales", RowKey: rk, TargetContainer: container}
	job2 := job1
	job2.Source = upper

	first := b.another(t)
	paused, resume := make(chan struct{}), make(chan struct{})
	var once sync.Once
	first.step = func(_, s string) error {
		if s == "copied" {
			once.Do(func() { close(paused); <-resume })
		}
		return nil
	}
	done := make(chan error, 1)
	var out1 Outcome
	go func() { var err error; out1, err = first.ArchiveEntity(b.ctx, job1); done <- err }()
	<-paused
	if err := b.current.Update(b.ctx, employee("Sales", rk, 2), &repo.UpdateOptions{Unconditional: true}); err != nil {
		t.Fatal(err)
	}
	if out, err := b.a.ArchiveEntity(b.ctx, job2); err != nil || out != OutcomeMoved {
		t.Fatalf("delivery 2: %v %v", out, err)
	}
	close(resume)
	if err := <-done; err != nil {
		t.Fatalf("delivery 1: %v", err)
	}
	if _, err := b.current.Get(b.ctx, "Sales", rk); !errors.Is(err, repo.ErrNotFound) {
		t.Fatalf("source still there: %v", err)
	}
	a1 := b.archivedAge(t, job1)
	a2 := b.archivedAge(t, job2)
	t.Logf("delivery 1 reported %s; copy under %q holds v%d, copy under %q holds v%d", out1, job1.Source, a1, job2.Source, a2)
	if a1 != 2 || a2 != 2 {
		t.Fatalf("stale copy kept: the archive of %s/Sales/%s holds v%d under one spelling and v%d under the other; want only the newest (v2)", b.current.Name(), rk, a1, a2)
	}
}

// The same check without a server (Azurite, unlike the service, treats table names
// case-sensitively, so the race above skips there): the archive names of one entity and of
// one table's exports must not depend on how the job spells the table name.
func TestAttackArchiveNamesIgnoreTableNameCase(t *testing.T) {
	if a, b := EntityBlobName("SignIns", "p", "r"), EntityBlobName("SIGNINS", "p", "r"); a != b {
		t.Errorf("one entity, two archive blobs: %q and %q (duplicate jobs spelling the source differently keep two copies, one stale)", a, b)
	}
	if a, b := ManifestBlobName("SignIns20240101", "g"), ManifestBlobName("signins20240101", "g"); !strings.EqualFold(a, b) || a != b {
		t.Errorf("one table, two generation folders: %q and %q (restore -generation all and the already-archived check miss the other spelling's exports)", a, b)
	}
}
