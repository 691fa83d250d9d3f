package migrate

import (
	"errors"
	"testing"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/internal/errs"
	"github.com/tablepatterns/tablepatterns/patterns/internal/rangejob"
)

// A schema rewrite acts only on rows inside its partitions: a page the store returns
// with a row outside [from, to) (a store that broke the filter, or a forged answer) is
// refused before any row of it is written.
func TestSchemaRewriteRefusesRowsOutsideItsPartitions(t *testing.T) {
	sel := rangejob.Selection{PartitionKeyFrom: "b", PartitionKeyTo: "d"}
	inside := []codec.Entity{{PartitionKey: "b", RowKey: "1"}, {PartitionKey: "c", RowKey: ""}, {PartitionKey: "c\uffff", RowKey: "9"}}
	if err := inSelection(sel, inside); err != nil {
		t.Fatalf("rows inside [b, d): %v", err)
	}
	for _, pk := range []string{"a", "d", "d0", "\U0001F600"} {
		rows := append(append([]codec.Entity{}, inside...), codec.Entity{PartitionKey: pk, RowKey: "1"})
		if err := inSelection(sel, rows); !errors.Is(err, errs.ErrInvalidInput) {
			t.Errorf("a row in partition %q outside [b, d): %v, want ErrInvalidInput", pk, err)
		}
	}
	open := rangejob.Selection{}
	if err := inSelection(open, []codec.Entity{{PartitionKey: "", RowKey: "x"}, {PartitionKey: "zz", RowKey: "y"}}); err != nil {
		t.Fatalf("rows of a whole-table rewrite: %v", err)
	}
}
