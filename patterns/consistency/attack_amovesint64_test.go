package consistency

import (
	"fmt"
	"testing"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/repo"
)

// A job selected by one Edm.Int64 condition only (never sent: the query has no filter of
// its own but the key ranges): the job checks the condition itself on every entity of the
// table, over two pages (continuation checkpoints across partitions), and moves exactly
// the matching ones.
func TestAttackAmovesRangeInt64OnlyAcrossPages(t *testing.T) {
	t.Parallel()
	b := setup(t, "")
	var items []*codec.Entity
	for i := 0; i < 1300; i++ {
		pk := []string{"A", "B", "C"}[i%3]
		items = append(items, &codec.Entity{PartitionKey: pk, RowKey: fmt.Sprintf("%06d", i), Properties: map[string]any{"Big": int64(i) << 33}})
	}
	if err := b.current.BulkWrite(b.ctx, items, nil); err != nil {
		t.Fatal(err)
	}
	job := ArchiveRangeJob{Source: b.current.Name(), TargetTable: b.archive.Name(),
		Where: []Condition{{Property: "Big", Op: "ge", Type: "Edm.Int64", Value: "10995116277760"}}} // 1280 << 33
	rep, err := b.a.ArchiveRange(b.ctx, job)
	if err != nil || rep.Moved != 20 {
		t.Fatalf("%+v %v", rep, err)
	}
	left, err := b.current.Collect(b.ctx, repo.Query{Select: []string{"PartitionKey", "RowKey"}})
	if err != nil || len(left) != 1280 {
		t.Fatalf("left %d: %v", len(left), err)
	}
}
