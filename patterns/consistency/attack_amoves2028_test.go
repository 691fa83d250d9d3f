package consistency

import (
	"context"
	"testing"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/internal/testenv"
	"github.com/tablepatterns/tablepatterns/repo"
)

// A RowKey with U+2028 (valid; single requests handle it). On Azurite a delete action
// in a $batch that addresses such a key answers 404 ResourceNotFound although the entity
// is there (inserts in a $batch pass). The single move with a companion copy deletes in
// a transaction: the 404 is read as "gone", the target holds the version, and the move
// answers OutcomeMoved while the entity is still in the source. A 404 must not be
// taken as proof the source is gone without looking (the move's own documentation: a
// 404 counts as moved only when the copy records the version, and the entity is gone).
func TestAttackAmovesEntity404NotGone(t *testing.T) {
	t.Parallel()
	b := setupCompanion(t, nil)
	rk := "a\u2028"
	if err := b.current.Insert(b.ctx, employee("Sales", rk, 30)); err != nil {
		t.Fatal(err)
	}
	if err := b.current.Insert(b.ctx, &codec.Entity{PartitionKey: "Sales", RowKey: "copy-" + rk, Properties: map[string]any{"Of": rk}}); err != nil {
		t.Fatal(err)
	}
	out, err := b.a.ArchiveEntity(b.ctx, b.job("Sales", rk))
	_, gerr := b.current.Get(b.ctx, "Sales", rk)
	if err == nil && out == OutcomeMoved && gerr == nil {
		t.Fatalf("the move answered %v, and the entity is still in the source", out)
	}
}

// The same keys in a range move (table and blob targets): on Azurite the delete
// transaction answers 404 for an entity that is there (or 400 for U+2028 in the
// PartitionKey). Observed: the batch restarts until its retries end and the job fails
// (then poison), with the rest of the partition unarchived.
func TestAttackAmovesRangeLineSeparatorKeys(t *testing.T) {
	t.Parallel()
	for _, target := range []string{"table", "blob"} {
		t.Run(target, func(t *testing.T) {
			t.Parallel()
			b := setup(t, "")
			rks := []string{"a", "b\u2029", "c"}
			for _, rk := range rks {
				if err := b.current.Insert(b.ctx, &codec.Entity{PartitionKey: "Sales", RowKey: rk, Properties: map[string]any{"V": int32(1)}}); err != nil {
					t.Fatal(err)
				}
			}
			job := ArchiveRangeJob{Source: b.current.Name(), PartitionKey: "Sales", TargetTable: b.archive.Name()}
			if target == "blob" {
				c := testenv.ContainerName(t)
				t.Cleanup(func() { _, _ = b.clients.Blobs.DeleteContainer(context.Background(), c, nil) })
				job.TargetTable, job.TargetContainer = "", c
			}
			rep, err := b.a.ArchiveRange(b.ctx, job)
			left, lerr := b.current.Collect(b.ctx, repo.Query{})
			if err != nil || lerr != nil || len(left) != 0 {
				t.Fatalf("%+v %v; %d left in the source", rep, err, len(left))
			}
		})
	}
}
