package consistency

import (
	"strconv"
	"testing"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/repo"
)

// An entity whose own properties carry a provenance name with the largest hop number an
// int holds (an application may store any property name) is moved, single and by range,
// and the move neither writes over the entity's own ArchivedSource* values nor lets the
// forged name stand for the copy's provenance: the copy records the move's source and
// version under names the entity did not hold, and a rerun finds the copy it wrote.
func TestForgedLargestProvenanceHopNeverOverwritesOwnProvenance(t *testing.T) {
	t.Parallel()
	b := setup(t, "")
	forged := strconv.Itoa(int(^uint(0) >> 1))
	own := map[string]any{
		SourceTableProperty:          "Hot",
		SourceETagProperty:           "own-etag",
		SourceTableProperty + forged: b.current.Name(),
		SourceETagProperty + forged:  "forged-etag",
	}
	for _, rk := range []string{"single", "range"} {
		props := map[string]any{"V": int32(1)}
		for k, v := range own {
			props[k] = v
		}
		if err := b.current.Insert(b.ctx, &codec.Entity{PartitionKey: "p", RowKey: rk, Properties: props}); err != nil {
			t.Fatal(err)
		}
	}
	src, err := b.current.Get(b.ctx, "p", "single")
	if err != nil {
		t.Fatal(err)
	}
	if out, err := b.a.ArchiveEntity(b.ctx, ArchiveEntityJob{Source: b.current.Name(), PartitionKey: "p", RowKey: "single", TargetTable: b.archive.Name()}); err != nil || out != OutcomeMoved {
		t.Fatalf("single move: %v %v", out, err)
	}
	if rep, err := b.a.ArchiveRange(b.ctx, ArchiveRangeJob{Source: b.current.Name(), PartitionKey: "p", RowKeyFrom: "range", RowKeyTo: "rangz", TargetTable: b.archive.Name()}); err != nil || rep.Moved != 1 {
		t.Fatalf("range move: %+v %v", rep, err)
	}
	got, err := b.archive.Collect(b.ctx, repo.Query{})
	if err != nil || len(got) != 2 {
		t.Fatalf("the target holds %d: %v", len(got), err)
	}
	for _, e := range got {
		for k, v := range own {
			if e.Properties[k] != v {
				t.Errorf("(%s): the entity's own %s is %v, want %v", e.RowKey, k, e.Properties[k], v)
			}
		}
		st, err := tableCopyState(b.archive.Name(), &e)
		if err != nil {
			t.Fatal(err)
		}
		if st.sourceETag == "forged-etag" || st.sourceETag == "own-etag" || st.sourceETag == "" {
			t.Errorf("(%s): the copy rule reads %q as the copy's source version, not the move's", e.RowKey, st.sourceETag)
		}
		if e.RowKey == "single" && st.sourceETag != src.ETag {
			t.Errorf("(single): the copy records %q, want the version moved %q", st.sourceETag, src.ETag)
		}
	}
}
