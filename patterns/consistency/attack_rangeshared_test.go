package consistency

import (
	"testing"
)

// Two source tables archived into one target table, as one archive table per dataset of
// daily tables (periodtable) would be: the same keys in both (an order number that
// restarts each day). A copy records the source's ETag but not the source table, so the
// second table's range move takes the first table's copy for a stale copy of its own
// entity and replaces it (If-Match its ETag): the first table's entity, already deleted
// from its source, is then in no table at all. Nothing refuses the job. (Blob targets
// name the source table in the blob name, so they do not collide.) Expected: the second
// move leaves the other table's copy alone (refuses, or fails the batch), never replaces it.
func TestAttackRangeTwoSourcesOneTargetTable(t *testing.T) {
	t.Parallel()
	b := setup(t, "")
	other := b.newTable(t, "Other")
	b.loadRange(t, []string{"Sales"}, 10) // Version 1 in Current
	if err := other.Insert(b.ctx, rangeEntity("Sales", 3, 99)); err != nil {
		t.Fatal(err)
	}
	first := ArchiveRangeJob{Source: b.current.Name(), PartitionKey: "Sales", TargetTable: b.archive.Name()}
	if rep, err := b.a.ArchiveRange(b.ctx, first); err != nil || rep.Moved != 10 {
		t.Fatalf("first: %+v %v", rep, err)
	}
	second := ArchiveRangeJob{Source: other.Name(), PartitionKey: "Sales", TargetTable: b.archive.Name()}
	rep, err := b.a.ArchiveRange(b.ctx, second)
	t.Logf("second: %+v %v", rep, err)
	cp, err := b.archive.Get(b.ctx, "Sales", "000003")
	if err != nil {
		t.Fatal(err)
	}
	if cp.Properties["Version"] != int32(1) {
		t.Fatalf("the copy of (Sales, 000003) of %s was replaced by the entity of %s (Version %v): the first entity is in no table now",
			b.current.Name(), other.Name(), cp.Properties["Version"])
	}
}
