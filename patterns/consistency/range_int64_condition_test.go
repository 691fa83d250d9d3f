package consistency

import (
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/repo"
	"github.com/tablepatterns/tablepatterns/repo/filter"
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
		Where: []filter.Condition{{Property: "TotalCents", Op: "lt", Type: "Edm.Int64", Value: "500"}}})
	if err != nil || rep.Moved != 2 {
		t.Fatalf("%+v %v; want the two Int64 values under 500 moved", rep, err)
	}
	left, err := b.current.Collect(b.ctx, repo.Query{})
	if err != nil || len(left) != len(values)-2 {
		t.Fatalf("left %d: %v", len(left), err)
	}
}

// A job selected by one Edm.Int64 condition only (never sent: the query has no filter of
// its own but the key ranges): the job checks the condition itself on every entity of the
// table, over two pages of 100 (continuation checkpoints across partitions), and moves
// exactly the matching ones.
func TestRangeInt64OnlyAcrossPages(t *testing.T) {
	t.Parallel()
	b := setup(t, "")
	b.a.seams.pageSize = 100
	var scans atomic.Int64
	b.a.seams.step = func(_, step string) error {
		if step == "scanned" {
			scans.Add(1)
		}
		return nil
	}
	var items []*codec.Entity
	for i := 0; i < 130; i++ {
		pk := []string{"A", "B", "C"}[i%3]
		items = append(items, &codec.Entity{PartitionKey: pk, RowKey: fmt.Sprintf("%06d", i), Properties: map[string]any{"Big": int64(i) << 33}})
	}
	if err := b.current.BulkWrite(b.ctx, items, nil); err != nil {
		t.Fatal(err)
	}
	job := ArchiveRangeJob{Source: b.current.Name(), TargetTable: b.archive.Name(),
		Where: []filter.Condition{{Property: "Big", Op: "ge", Type: "Edm.Int64", Value: "1030792151040"}}} // 120 << 33
	rep, err := b.a.ArchiveRange(b.ctx, job)
	if err != nil || rep.Moved != 10 {
		t.Fatalf("%+v %v", rep, err)
	}
	if n := scans.Load(); n != 2 {
		t.Fatalf("the job scanned %d pages, want 2", n)
	}
	left, err := b.current.Collect(b.ctx, repo.Query{Select: []string{"PartitionKey", "RowKey"}})
	if err != nil || len(left) != 120 {
		t.Fatalf("left %d: %v", len(left), err)
	}
}
