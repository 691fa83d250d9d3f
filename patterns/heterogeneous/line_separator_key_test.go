package heterogeneous_test

import (
	"errors"
	"testing"

	"github.com/tablepatterns/tablepatterns/patterns/heterogeneous"
	"github.com/tablepatterns/tablepatterns/patterns/internal/testbed"
	"github.com/tablepatterns/tablepatterns/repo"
)

// Delete deletes the child and counts it out of its parent in one transaction: a child
// key holding U+2028 or U+2029 must not stay, nor make the store delete another row.
func TestDeleteRemovesChildWhenKeyHasLineSeparator(t *testing.T) {
	t.Parallel()
	for _, sep := range testbed.LineSeparators {
		t.Run(sep.Name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, layouts[0])
			b.dept(t, "Sales")
			b.Bystander("", "Sales")
			e := b.emp("Sales", 1)
			e.RowKey = "000" + sep.Rune + "001"
			if err := b.depts.Add(b.ctx, e); err != nil {
				t.Fatal(err)
			}
			if err := b.depts.Delete(b.ctx, "Sales", e.RowKey, nil); err != nil {
				t.Fatal(err)
			}
			if _, err := heterogeneous.Get[Employee](b.ctx, b.t, "Sales", e.RowKey); !errors.Is(err, repo.ErrNotFound) {
				t.Fatalf("the removed child is still there: %v", err)
			}
			d, err := heterogeneous.Get[Department](b.ctx, b.t, "Sales", b.l.deptKey)
			if err != nil || d.EmployeeCount != 0 {
				t.Fatalf("parent after the remove: %+v, %v", d, err)
			}
			b.MustHaveBystander("", "Sales")
		})
	}
}
