package consistency

import (
	"errors"
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
func TestArchiveNamesIgnoreTableNameCase(t *testing.T) {
	if a, b := EntityBlobName("SignIns", "p", "r"), EntityBlobName("SIGNINS", "p", "r"); a != b {
		t.Errorf("one entity, two archive blobs: %q and %q (duplicate jobs spelling the source differently keep two copies, one stale)", a, b)
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
