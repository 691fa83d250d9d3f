package consistency

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/repo"
)

// bigCopyRows keeps, for every primary "e_<n>", a copy row "copy_e_<n>" of about 120 KB in
// the same partition; its Removal updates the copy (marks it Orphaned, keeping its
// content) If-Match the ETag it read: an update, as Companion's documentation allows.
type bigCopyRows struct{ t *repo.Table[codec.Entity] }

func (c *bigCopyRows) Removal(ctx context.Context, e *codec.Entity) (Removal, error) {
	if !strings.HasPrefix(e.RowKey, "e_") {
		return Removal{}, nil
	}
	cp, err := c.t.Get(ctx, e.PartitionKey, "copy_"+e.RowKey)
	if errors.Is(err, repo.ErrNotFound) {
		return Removal{}, nil
	}
	if err != nil {
		return Removal{}, err
	}
	cp.Properties["Orphaned"] = true
	return Removal{Actions: []repo.Action{c.t.UpdateAction(&cp, nil)}}, nil
}

// 100 entities of one partition whose companion updates a 120 KB copy row each: the
// delete transactions are cut by action count only (50 entities and 50 updates), about
// 6 MB, so the delete is refused before it is sent (ErrInvalidInput: permanent, the
// worker cancels the job) and nothing is ever archived, although every entity and its
// companion action fit a transaction. Expected: the delete transactions are cut by
// payload size too, and the range is archived.
func TestAttackRangeCompanionUpdatesOver4MiB(t *testing.T) {
	t.Parallel()
	b := setup(t, "")
	a, err := New(b.clients, &Options{Retry: fastRetry(), Companions: map[string][]Companion{b.current.Name(): {&bigCopyRows{t: b.current}}}})
	if err != nil {
		t.Fatal(err)
	}
	fill := strings.Repeat("c", 30000)
	var items []*codec.Entity
	for i := 0; i < 100; i++ {
		rk := fmt.Sprintf("e_%03d", i)
		items = append(items,
			&codec.Entity{PartitionKey: "Sales", RowKey: rk, Properties: map[string]any{"N": int32(i)}},
			&codec.Entity{PartitionKey: "Sales", RowKey: "copy_" + rk, Properties: map[string]any{
				"Of": rk, "A": fill, "B": fill, "C": fill, "D": fill}})
	}
	if err := b.current.BulkWrite(b.ctx, items, nil); err != nil {
		t.Fatal(err)
	}
	job := ArchiveRangeJob{Source: b.current.Name(), PartitionKey: "Sales", RowKeyFrom: "e_", RowKeyTo: "e`", TargetTable: b.archive.Name()}
	rep, err := a.ArchiveRange(b.ctx, job)
	if err != nil {
		t.Fatalf("%+v: %v (permanent: %v)", rep, err, permanent(err))
	}
	if rep.Moved != 100 {
		t.Fatalf("moved %d", rep.Moved)
	}
}
