package indexentity

import (
	"errors"
	"testing"

	"github.com/tablepatterns/tablepatterns/internal/errs"
)

// The promises "Their RowKeys occupy SamePartition.KeyRange, which entity RowKeys may not
// enter" and "No id is ever lost" hold through Delete, the one write that takes caller-given
// keys (an id from a URL): Delete of a RowKey inside the index's KeyRange must be refused
// before anything is sent, not delete the index entity of a value (every id listed under
// Jones lost while both Joneses still exist).
func TestSamePartitionDeleteRefusesKeyInsideKeyRange(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	ix := b.samePartition(nil)
	for _, id := range []string{"000101", "000102"} {
		if err := ix.Insert(b.Ctx, emp("Sales", id, "Jones")); err != nil {
			t.Fatal(err)
		}
	}
	loc, err := ix.location("Sales", "Jones")
	if err != nil {
		t.Fatal(err)
	}
	page := loc.rowKey(0)
	derr := ix.Delete(b.Ctx, "Sales", page, nil)
	ids, err := ix.IDs(b.Ctx, "Sales", "Jones")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("Delete(%q): %v; Jones lists %v", page, derr, ids)
	if !errors.Is(derr, errs.ErrInvalidInput) {
		t.Fatalf("Delete of the index entity %q through the index: %v, want ErrInvalidInput (Jones now lists %v)", page, derr, ids)
	}
	if len(ids) != 2 {
		t.Fatalf("Jones lists %v, want both ids", ids)
	}
}
