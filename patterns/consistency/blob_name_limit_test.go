package consistency

import (
	"context"
	"strings"
	"testing"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/internal/testenv"
	"github.com/tablepatterns/tablepatterns/repo"
)

// Blob names at the limit, mixed with normal keys in one batch: a name of exactly
// MaxBlobNameBytes is archived (the service takes it), one byte more is skipped and
// reported, and the keys around them move. Checks that the limit the move enforces is the
// one the blob service enforces, on both sides of it.
func TestBlobNameAtTheLimit(t *testing.T) {
	t.Parallel()
	b := setup(t, "")
	container := testenv.ContainerName(t)
	t.Cleanup(func() { _, _ = b.clients.Blobs.DeleteContainer(context.Background(), container, nil) })
	src := b.current.Name()
	base := len(EntityBlobName(src, "Sales", ""))
	// '.' escapes to three bytes: keys of under 512 UTF-16 units reach the limit.
	key := func(first string, n int) string {
		n -= 1
		return first + strings.Repeat(".", n/3) + strings.Repeat("a", n%3)
	}
	at := key("m", MaxBlobNameBytes-base)
	over := key("n", MaxBlobNameBytes-base+1)
	if n := len(EntityBlobName(src, "Sales", at)); n != MaxBlobNameBytes {
		t.Fatalf("name of %d bytes", n)
	}
	rks := []string{"000001", at, over, "zzz"}
	for _, rk := range rks {
		if err := b.current.Insert(b.ctx, &codec.Entity{PartitionKey: "Sales", RowKey: rk, Properties: map[string]any{"N": int32(1)}}); err != nil {
			t.Fatal(err)
		}
	}
	rep, err := b.a.ArchiveRange(b.ctx, ArchiveRangeJob{Source: src, PartitionKey: "Sales", TargetContainer: container})
	if err != nil {
		t.Fatalf("range: %+v %v", rep, err)
	}
	if rep.Moved != 3 || len(rep.Skipped) != 1 || rep.Skipped[0].RowKey != over {
		t.Fatalf("report moved %d skipped %d", rep.Moved, len(rep.Skipped))
	}
	left, err := b.current.Collect(b.ctx, repo.Query{})
	if err != nil || len(left) != 1 || left[0].RowKey != over {
		t.Fatalf("source left %d: %v", len(left), err)
	}
	for _, rk := range []string{"000001", at, "zzz"} {
		if _, err := b.a.ReadArchivedEntity(b.ctx, container, src, "Sales", rk); err != nil {
			t.Fatalf("archived %d-byte key: %v", len(rk), err)
		}
	}
}
