package consistency

import (
	"fmt"
	"testing"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/repo"
)

// An Edm.Int64 condition over a range whose property is also stored as Edm.Int32,
// Edm.Double and a boolean (one entity each is enough for Azurite to fail a query that
// carries an Int64 literal with 500): the job never sends it, moves exactly the Int64
// values that match, and leaves the others.
func TestRangeInt64ConditionBesideOtherNumberTypes(t *testing.T) {
	t.Parallel()
	b := setup(t, "")
	values := []any{int64(1), int64(2), int64(9000000000), int32(1), 1.5, true}
	var items []*codec.Entity
	for i, v := range values {
		items = append(items, &codec.Entity{PartitionKey: "p", RowKey: fmt.Sprintf("%02d", i), Properties: map[string]any{"TotalCents": v}})
	}
	if err := b.current.BulkWrite(b.ctx, items, nil); err != nil {
		t.Fatal(err)
	}
	rep, err := b.a.ArchiveRange(b.ctx, ArchiveRangeJob{Source: b.current.Name(), PartitionKey: "p", TargetTable: b.archive.Name(),
		Where: []Condition{{Property: "TotalCents", Op: "lt", Type: "Edm.Int64", Value: "500"}}})
	if err != nil || rep.Moved != 2 {
		t.Fatalf("%+v %v; want the two Int64 values under 500 moved", rep, err)
	}
	left, err := b.current.Collect(b.ctx, repo.Query{})
	if err != nil || len(left) != len(values)-2 {
		t.Fatalf("left %d: %v", len(left), err)
	}
}
