package consistency

import (
	"testing"

	"fmt"

	"github.com/tablepatterns/tablepatterns/repo/filter"
)

// Condition's documentation: "A comparison only matches a property stored with that
// type." N is stored as Edm.Int32 (0..19); conditions on N of other EDM types must select
// nothing, so a job never archives entities its author did not mean (a 64-bit, double,
// string or boolean literal against a 32-bit property). Observed on Azurite 3.37: the
// string, double and boolean literals match (N ne true moves all 20), and the Int64
// literal makes the query fail with 500 (retried, then the job fails; the worker
// redelivers it until poisoned). For an Int64 property, a DateTime literal matches 13 of
// 20 and a Guid "ne" all 20. The filter is sent as built; nothing re-checks the types
// of the entities read.
func TestRangeConditionTypeMismatch(t *testing.T) {
	t.Parallel()
	b := setup(t, "")
	b.loadRange(t, []string{"p0", "p1", "p2", "p3", "p4", "p5"}, 20)
	for i, c := range []filter.Condition{
		{Property: "N", Op: "lt", Type: "Edm.Int64", Value: "5"},
		{Property: "N", Op: "lt", Type: "Edm.Double", Value: "5"},
		{Property: "N", Op: "lt", Type: "Edm.String", Value: "5"},
		{Property: "N", Op: "ne", Type: "Edm.Boolean", Value: "true"},
		{Property: "N", Op: "ge", Type: "Edm.DateTime", Value: "2000-01-01T00:00:00Z"},
		{Property: "N", Op: "ne", Type: "Edm.Guid", Value: "c9da6455-213d-42c9-9a79-3e9149a57833"},
	} {
		job := ArchiveRangeJob{Source: b.current.Name(), PartitionKey: fmt.Sprintf("p%d", i), TargetTable: b.archive.Name(), Where: []filter.Condition{c}}
		rep, err := b.a.ArchiveRange(b.ctx, job)
		if err != nil {
			t.Errorf("%s %s %s %s: %v", c.Property, c.Op, c.Type, c.Value, err)
			continue
		}
		if rep.Scanned != 0 || rep.Moved != 0 {
			t.Errorf("%s %s %s %s: scanned %d, moved %d, want none", c.Property, c.Op, c.Type, c.Value, rep.Scanned, rep.Moved)
		}
	}
}
