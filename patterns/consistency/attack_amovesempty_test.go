package consistency

import (
	"testing"

	"github.com/tablepatterns/tablepatterns/repo"
)

// An entity with an empty PartitionKey (a valid key: the service stores it, and it sorts
// first) in a table archived by conditions only, or by a partition range open at the
// bottom: it is inside the job's selection. The scan returns it first; the job must not
// take it for a key "outside the range" and fail (permanently) the whole range: the
// other entities must move, and the odd one be moved or reported.
func TestAttackAmovesRangeEmptyPartitionKey(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"where", "pkTo"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, "")
			// repo refuses to write an empty PartitionKey; another writer (a JS client,
			// aztables itself) does not.
			raw := b.clients.Tables.NewClient(b.current.Name())
			if _, err := raw.AddEntity(b.ctx, []byte(`{"PartitionKey":"","RowKey":"odd","N":1}`), nil); err != nil {
				t.Skipf("no entity with an empty PartitionKey: %v", err)
			}
			b.loadRange(t, []string{"Sales"}, 5)
			job := ArchiveRangeJob{Source: b.current.Name(), TargetTable: b.archive.Name()}
			if name == "where" {
				job.Where = []Condition{{Property: "N", Op: "ge", Type: "Edm.Int32", Value: "0"}}
			} else {
				job.PartitionKeyTo = "Z"
			}
			rep, err := b.a.ArchiveRange(b.ctx, job)
			left, lerr := b.current.Collect(b.ctx, repo.Query{Select: []string{"PartitionKey", "RowKey"}})
			if lerr != nil {
				t.Fatal(lerr)
			}
			if err != nil || len(left) > 1 {
				t.Fatalf("range: %+v %v; %d entities left in the source (want the 5 of Sales moved)", rep, err, len(left))
			}
		})
	}
}
