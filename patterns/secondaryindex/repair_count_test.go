package secondaryindex_test

import (
	"testing"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/codec/keys"
	"github.com/tablepatterns/tablepatterns/patterns/secondaryindex"
)

// Report.Repaired counts "the entities (Intra, Inter) and orphans (Intra) that Repair
// wrote". An Inter index partition holding a copy (written around this package) whose
// key names an entity no key can hold ("a/b": '/' is forbidden in a RowKey) is an
// orphan that Repair leaves and reports; it writes nothing for it, so Repaired stays 0.
// Repair's call for that entity returns nil without writing, and is counted.
func TestInterRepairCountsNoEntityItLeft(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	b.seedEmployeesIn(t, 2, func(int) string { return "Sales" })
	q, _ := b.Queue()
	x, err := secondaryindex.NewInter(b.Clients.Tables, b.Table, q, []secondaryindex.Index[Employee]{byEmail},
		&secondaryindex.InterOptions{SafetyDelay: -1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := x.BackfillPartition(b.Ctx, "Sales", nil); err != nil {
		t.Fatal(err)
	}
	forged := &codec.Entity{PartitionKey: "email_Sales", RowKey: keys.Join("forged@contoso.com", "a/b"), Properties: map[string]any{"Email": "forged@contoso.com"}}
	if err := b.Raw.Insert(b.Ctx, forged); err != nil {
		t.Fatal(err)
	}
	r, err := x.Repair(b.Ctx, "Sales", nil)
	if err != nil {
		t.Fatal(err)
	}
	if r.Orphan != 1 || r.Repaired != 0 {
		t.Fatalf("repair: %d orphans, Repaired %d; want the one orphan left, and nothing counted as repaired", r.Orphan, r.Repaired)
	}
	if again, err := x.Verify(b.Ctx, "Sales", nil); err != nil || again.Orphan != 1 {
		t.Fatalf("verify after the repair: %+v %v; want the orphan still there (left)", again, err)
	}
}
