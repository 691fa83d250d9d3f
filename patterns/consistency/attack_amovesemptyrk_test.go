package consistency

import (
	"context"
	"testing"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/internal/testenv"
	"github.com/tablepatterns/tablepatterns/repo"
)

// An entity with an empty RowKey (valid, and addressable) is the first of its partition:
// a range job archives it with the others, to a table and to a blob, and a single move
// archives it too.
func TestAttackAmovesEmptyRowKey(t *testing.T) {
	t.Parallel()
	for _, target := range []string{"table", "blob"} {
		t.Run(target, func(t *testing.T) {
			t.Parallel()
			b := setup(t, "")
			b.loadRange(t, []string{"Sales"}, 3)
			if err := b.current.Insert(b.ctx, &codec.Entity{PartitionKey: "Sales", RowKey: "", Properties: map[string]any{"N": int32(-1)}}); err != nil {
				t.Fatal(err)
			}
			job := ArchiveRangeJob{Source: b.current.Name(), PartitionKey: "Sales", TargetTable: b.archive.Name()}
			if target == "blob" {
				c := testenv.ContainerName(t)
				t.Cleanup(func() { _, _ = b.clients.Blobs.DeleteContainer(context.Background(), c, nil) })
				job.TargetTable, job.TargetContainer = "", c
			}
			rep, err := b.a.ArchiveRange(b.ctx, job)
			if err != nil || rep.Moved != 4 {
				t.Fatalf("%+v %v", rep, err)
			}
			left, err := b.current.Collect(b.ctx, repo.Query{})
			if err != nil || len(left) != 0 {
				t.Fatalf("left %d: %v", len(left), err)
			}
		})
	}
}
