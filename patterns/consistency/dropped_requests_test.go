package consistency

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/tablepatterns/tablepatterns/internal/faultproxy"
	"github.com/tablepatterns/tablepatterns/internal/testenv"
	"github.com/tablepatterns/tablepatterns/repo"

	"errors"
)

// dropSteps is how many requests the sweeps below lose in turn (every request of
// a clean run of their job, and a few more for the restarts).
const dropSteps = 24

// The response of the k-th table request of a range move is lost after the service
// applied it, for every k of the run: the scan, the target read, the source read, the
// companion's reads, the copy transaction and the delete transaction (with the
// companion's actions). Every run ends with each entity archived once at its version,
// no entity and no companion copy row left in the source.
func TestRangeDropEveryTableStep(t *testing.T) {
	t.Parallel()
	for k := 1; k <= dropSteps; k++ {
		t.Run(fmt.Sprint(k), func(t *testing.T) {
			t.Parallel()
			ps := testenv.Proxies(t)
			b := setup(t, ps.ConnectionString)
			comp := &copyRows{t: b.current, asked: map[string]int{}}
			a, err := New(b.clients, &Options{Retry: fastRetry(), Companions: map[string][]Companion{b.current.Name(): {comp}}})
			if err != nil {
				t.Fatal(err)
			}
			b.loadCopies(t, "Sales", 6)
			want := map[RangeKey]string{}
			all, err := b.current.Collect(b.ctx, repo.Query{})
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range all {
				if strings.HasPrefix(e.RowKey, "e_") {
					want[RangeKey{e.PartitionKey, e.RowKey}] = e.ETag
				}
			}
			var n atomic.Int32
			ps.Table.AddRule(faultproxy.Rule{Name: "lost", Match: func(*http.Request) bool { return n.Add(1) == int32(k) }, Action: faultproxy.DropAfterForward()})
			job := ArchiveRangeJob{Source: b.current.Name(), PartitionKey: "Sales", RowKeyFrom: "e_", RowKeyTo: "e`", TargetTable: b.archive.Name()}
			if _, err := a.ArchiveRange(b.ctx, job); err != nil {
				t.Fatalf("range (request %d lost): %v", k, err)
			}
			left, err := b.current.Collect(b.ctx, repo.Query{})
			if err != nil || len(left) != 0 {
				t.Fatalf("left in the source (copies included): %d %v", len(left), err)
			}
			archived, err := b.archive.Collect(b.ctx, repo.Query{})
			if err != nil || len(archived) != len(want) {
				t.Fatalf("archived %d of %d: %v", len(archived), len(want), err)
			}
			for _, e := range archived {
				if e.Properties[SourceETagProperty] != want[RangeKey{e.PartitionKey, e.RowKey}] {
					t.Fatalf("(%s) archived at %v", e.RowKey, e.Properties[SourceETagProperty])
				}
			}
		})
	}
}

// The same for a blob target: the k-th blob request (target reads, uploads) loses its
// response after it was applied.
func TestRangeDropEveryBlobStep(t *testing.T) {
	t.Parallel()
	for k := 1; k <= 14; k++ {
		t.Run(fmt.Sprint(k), func(t *testing.T) {
			t.Parallel()
			ps := testenv.Proxies(t)
			b := setup(t, ps.ConnectionString)
			want := b.loadRange(t, []string{"Sales"}, 5)
			container := testenv.ContainerName(t)
			t.Cleanup(func() { _, _ = directClients(t).Blobs.DeleteContainer(context.Background(), container, nil) })
			var n atomic.Int32
			ps.Blob.AddRule(faultproxy.Rule{Name: "lost", Match: func(*http.Request) bool { return n.Add(1) == int32(k) }, Action: faultproxy.DropAfterForward()})
			job := ArchiveRangeJob{Source: b.current.Name(), PartitionKey: "Sales", TargetContainer: container}
			if _, err := b.a.ArchiveRange(b.ctx, job); err != nil {
				t.Fatalf("range (blob request %d lost): %v", k, err)
			}
			left, err := b.current.Collect(b.ctx, repo.Query{})
			if err != nil || len(left) != 0 {
				t.Fatalf("left in the source: %d %v", len(left), err)
			}
			for key, etag := range want {
				st, err := b.a.blobState(b.ctx, ArchiveEntityJob{Source: b.current.Name(), PartitionKey: key.PartitionKey, RowKey: key.RowKey, TargetContainer: container},
					EntityBlobName(b.current.Name(), key.PartitionKey, key.RowKey))
				if err != nil || st.sourceETag != etag {
					t.Fatalf("(%s) blob records %q, want %q: %v", key.RowKey, st.sourceETag, etag, err)
				}
			}
		})
	}
}

// The single move with a companion copy in the entity's partition: the response of its
// k-th table request (target read, source read, the companion's read, the copy, the
// delete transaction) is lost after the service applied it, for every k. The move ends
// moved or already archived, the entity and its copy row gone, the archive holding the
// entity's version, and After run at least once.
func TestEntityDropEveryStep(t *testing.T) {
	t.Parallel()
	for k := 1; k <= 10; k++ {
		t.Run(fmt.Sprint(k), func(t *testing.T) {
			t.Parallel()
			b := setupCompanion(t, nil)
			b.insertWithCopy(t, "000001")
			src, err := b.current.Get(b.ctx, "Sales", "000001")
			if err != nil {
				t.Fatal(err)
			}
			var n atomic.Int32
			b.ps.Table.AddRule(faultproxy.Rule{Name: "lost", Match: func(*http.Request) bool { return n.Add(1) == int32(k) }, Action: faultproxy.DropAfterForward()})
			out, err := b.a.ArchiveEntity(b.ctx, b.job("Sales", "000001"))
			if err != nil || (out != OutcomeMoved && out != OutcomeAlreadyArchived) {
				t.Fatalf("move (request %d lost): %v %v", k, out, err)
			}
			for _, rk := range []string{"000001", "copy-000001"} {
				if _, err := b.current.Get(b.ctx, "Sales", rk); !errors.Is(err, repo.ErrNotFound) {
					t.Fatalf("%s still in the source: %v", rk, err)
				}
			}
			cp, err := b.archive.Get(b.ctx, "Sales", "000001")
			if err != nil || cp.Properties[SourceETagProperty] != src.ETag {
				t.Fatalf("archive copy: %v %v", cp.Properties[SourceETagProperty], err)
			}
			if b.sib.afts.Load() == 0 {
				t.Fatalf("After never ran (outcome %v)", out)
			}
		})
	}
}
