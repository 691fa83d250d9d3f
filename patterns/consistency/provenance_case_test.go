package consistency

import (
	"testing"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/repo"
)

// An entity whose own properties spell provenance names in another case
// ("archivedsourceetag", "ARCHIVEDSOURCETABLE2") keeps them in its copy unchanged
// (property names are case-sensitive), and the copy records the move under the exact
// names, which the copy rule reads: a rerun finds the copy it wrote and changes nothing.
func TestProvenanceNamesInAnotherCaseAreTheEntitysOwn(t *testing.T) {
	t.Parallel()
	b := setup(t, "")
	own := map[string]any{"archivedsourceetag": "own-etag", "ARCHIVEDSOURCETABLE2": "Elsewhere", "V": int32(1)}
	props := map[string]any{}
	for k, v := range own {
		props[k] = v
	}
	if err := b.current.Insert(b.ctx, &codec.Entity{PartitionKey: "p", RowKey: "r", Properties: props}); err != nil {
		t.Fatal(err)
	}
	src, err := b.current.Get(b.ctx, "p", "r")
	if err != nil {
		t.Fatal(err)
	}
	if out, err := b.a.ArchiveEntity(b.ctx, b.job("p", "r")); err != nil || out != OutcomeMoved {
		t.Fatalf("move: %v %v", out, err)
	}
	got, err := b.archive.Collect(b.ctx, repo.Query{})
	if err != nil || len(got) != 1 {
		t.Fatalf("the target holds %d: %v", len(got), err)
	}
	for k, v := range own {
		if got[0].Properties[k] != v {
			t.Errorf("the entity's own %s is %v, want %v", k, got[0].Properties[k], v)
		}
	}
	if got[0].Properties[SourceETagProperty] != src.ETag || got[0].Properties[SourceTableProperty] != b.current.Name() {
		t.Errorf("the move's provenance: %v", got[0].Properties)
	}
}
