package consistency

import (
	"fmt"
	"testing"
	"time"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/repo"
)

// A tiered archive, Hot -> Warm -> Cold, by range and by single moves: the Warm -> Cold
// move happens, and each Cold copy keeps the Warm entity's own ArchivedSource* values
// (the Hot -> Warm hop's provenance) unchanged under the same names, while the Warm ->
// Cold hop records its own provenance under the next hop's names (SourceETagProperty +
// "2", ...). The copy rule holds for that hop: a rerun changes nothing, and a newer
// Warm version (written after the first move) replaces its Cold copy, never the reverse.
func TestTieredArchiveKeepsEveryHopsProvenance(t *testing.T) {
	t.Parallel()
	b := setup(t, "")
	hot, warm, cold := b.current, b.archive, b.newTable(t, "Cold")
	var items []*codec.Entity
	for i := range 5 {
		items = append(items, &codec.Entity{PartitionKey: "p", RowKey: fmt.Sprintf("%03d", i), Properties: map[string]any{"V": int32(i)}})
	}
	if err := hot.BulkWrite(b.ctx, items, nil); err != nil {
		t.Fatal(err)
	}
	hotETag := map[string]string{}
	for _, e := range items {
		hotETag[e.RowKey] = e.ETag
	}
	// Hot -> Warm: the first hop.
	if rep, err := b.a.ArchiveRange(b.ctx, ArchiveRangeJob{Source: hot.Name(), PartitionKey: "p", TargetTable: warm.Name()}); err != nil || rep.Moved != 5 {
		t.Fatalf("Hot -> Warm: %+v %v", rep, err)
	}
	warmed, err := warm.Collect(b.ctx, repo.Query{})
	if err != nil || len(warmed) != 5 {
		t.Fatalf("Warm holds %d: %v", len(warmed), err)
	}
	warmETag := map[string]string{}
	for _, e := range warmed {
		warmETag[e.RowKey] = e.ETag
	}
	// Warm -> Cold: the range moves four, a single move the fifth.
	rep, err := b.a.ArchiveRange(b.ctx, ArchiveRangeJob{Source: warm.Name(), PartitionKey: "p", RowKeyTo: "004", TargetTable: cold.Name()})
	if err != nil || rep.Moved != 4 {
		t.Fatalf("Warm -> Cold (range): %+v %v", rep, err)
	}
	if out, err := b.a.ArchiveEntity(b.ctx, ArchiveEntityJob{Source: warm.Name(), PartitionKey: "p", RowKey: "004", TargetTable: cold.Name()}); err != nil || out != OutcomeMoved {
		t.Fatalf("Warm -> Cold (single): %v %v", out, err)
	}
	check := func(e *codec.Entity, wantWarmETag string) {
		t.Helper()
		p := e.Properties
		switch {
		case p[SourceTableProperty] != hot.Name() || p[SourceETagProperty] != hotETag[e.RowKey]:
			t.Fatalf("(%s): the Warm entity's own provenance was replaced: %v", e.RowKey, p)
		case p[SourceTableProperty+"2"] != warm.Name() || p[SourceETagProperty+"2"] != wantWarmETag:
			t.Fatalf("(%s): the Warm -> Cold hop's provenance is not recorded under its own names: %v", e.RowKey, p)
		case p["V"] == nil:
			t.Fatalf("(%s): lost its properties: %v", e.RowKey, p)
		}
		if _, ok := p[SourceTimestampProperty].(time.Time); !ok {
			t.Fatalf("(%s): the Warm entity's own %s is gone: %v", e.RowKey, SourceTimestampProperty, p)
		}
		if _, ok := p[SourceTimestampProperty+"2"].(time.Time); !ok {
			t.Fatalf("(%s): the hop's %s2 is missing: %v", e.RowKey, SourceTimestampProperty, p)
		}
	}
	got, err := cold.Collect(b.ctx, repo.Query{})
	if err != nil || len(got) != 5 {
		t.Fatalf("Cold holds %d: %v", len(got), err)
	}
	for i := range got {
		check(&got[i], warmETag[got[i].RowKey])
	}
	if left, err := warm.Collect(b.ctx, repo.Query{}); err != nil || len(left) != 0 {
		t.Fatalf("Warm keeps %d: %v", len(left), err)
	}
	// The copy rule on the second hop: a rerun finds them archived; a newer Warm version
	// of one entity (same Hot provenance) replaces its Cold copy.
	if out, err := b.a.ArchiveEntity(b.ctx, ArchiveEntityJob{Source: warm.Name(), PartitionKey: "p", RowKey: "001", TargetTable: cold.Name()}); err != nil || out != OutcomeAlreadyArchived {
		t.Fatalf("rerun: %v %v", out, err)
	}
	again := warmed[0]
	again.Properties["V"] = int32(100)
	if err := warm.Insert(b.ctx, &again); err != nil {
		t.Fatal(err)
	}
	if rep, err := b.a.ArchiveRange(b.ctx, ArchiveRangeJob{Source: warm.Name(), PartitionKey: "p", TargetTable: cold.Name()}); err != nil || rep.Moved != 1 {
		t.Fatalf("the newer Warm version: %+v %v", rep, err)
	}
	newer, err := cold.Get(b.ctx, "p", again.RowKey)
	if err != nil || newer.Properties["V"] != int32(100) {
		t.Fatalf("the Cold copy of the newer version: %v %v", newer.Properties, err)
	}
	check(&newer, again.ETag)
}
