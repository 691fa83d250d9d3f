package denormalize

import (
	"errors"
	"testing"

	"github.com/tablepatterns/tablepatterns/patterns/internal/testbed"
	"github.com/tablepatterns/tablepatterns/repo"
)

// A target that changes source removes its old link in the write's transaction, and
// DeleteTarget deletes the target with its link: keys holding U+2028 or U+2029 (the
// link's RowKey holds the target's and the source's) must leave neither behind and delete
// no other row in their place.
func TestInPartitionLinksGoWhenKeysHaveLineSeparator(t *testing.T) {
	t.Parallel()
	for _, sep := range testbed.LineSeparators {
		t.Run(sep.Name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, false, false)
			r := b.relation(nil)
			ctx := b.Ctx
			b.Bystander("", "Sales")
			jones := manager("Sales", "000"+sep.Rune+"152", "Jun", "Jones", "555-0152")
			cao := manager("Sales", "000155", "Jun", "Cao", "555-0155")
			b.insert(jones, cao)
			target := Key{"Sales", "DEPART" + sep.Rune + "MENT"}
			if err := r.PutTarget(ctx, dept(target.PartitionKey, target.RowKey, "Sales", jones)); err != nil {
				t.Fatal(err)
			}
			b.checkCopies(r, Key{"Sales", jones.EmployeeID}, target)
			if err := r.PutTarget(ctx, dept(target.PartitionKey, target.RowKey, "Sales", cao)); err != nil {
				t.Fatal(err)
			}
			b.checkCopies(r, Key{"Sales", jones.EmployeeID})
			b.checkCopies(r, Key{"Sales", "000155"}, target)
			b.MustHaveBystander("", "Sales")
			if err := r.DeleteTarget(ctx, target, nil); err != nil {
				t.Fatal(err)
			}
			b.checkCopies(r, Key{"Sales", "000155"})
			if _, err := b.Raw.Get(ctx, target.PartitionKey, target.RowKey); !errors.Is(err, repo.ErrNotFound) {
				t.Fatalf("the target is still there: %v", err)
			}
			b.MustHaveBystander("", "Sales")
		})
	}
}
