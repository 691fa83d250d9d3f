package consistency

import (
	"errors"
	"fmt"
	"testing"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/internal/errs"
)

// An entity whose copy would exceed the service's property limit once its hop's
// provenance names are added (250 properties of its own, a hop adds 3) is never half
// moved: the single move fails permanently before anything is written, the range
// leaves it in the source and reports it skipped, and no copy is written.
func TestProvenanceNamesOverThePropertyLimitNeverHalfMove(t *testing.T) {
	t.Parallel()
	b := setup(t, "")
	for _, rk := range []string{"single", "range"} {
		props := map[string]any{SourceETagProperty: "own", SourceTableProperty + "2": "Elsewhere"}
		for i := len(props); i < codec.MaxProperties-2; i++ {
			props[fmt.Sprintf("P%03d", i)] = int32(i)
		}
		if err := b.current.Insert(b.ctx, &codec.Entity{PartitionKey: "p", RowKey: rk, Properties: props}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := b.a.ArchiveEntity(b.ctx, b.job("p", "single")); !errors.Is(err, errs.ErrInvalidInput) {
		t.Fatalf("single move: %v, want ErrInvalidInput", err)
	}
	rep, err := b.a.ArchiveRange(b.ctx, ArchiveRangeJob{Source: b.current.Name(), PartitionKey: "p", RowKeyFrom: "range", RowKeyTo: "rangz", TargetTable: b.archive.Name()})
	if err != nil || rep.Moved != 0 || len(rep.Skipped) != 1 {
		t.Fatalf("range: %+v %v, want the entity skipped", rep, err)
	}
	for _, rk := range []string{"single", "range"} {
		if _, err := b.current.Get(b.ctx, "p", rk); err != nil {
			t.Errorf("%s: not in the source: %v", rk, err)
		}
		if _, err := b.archive.Get(b.ctx, "p", rk); err == nil {
			t.Errorf("%s: a copy was written", rk)
		}
	}
}
