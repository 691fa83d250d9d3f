package tablearchive

import (
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tablepatterns/tablepatterns/internal/faultproxy"
	"github.com/tablepatterns/tablepatterns/internal/testenv"
)

// A shard manifest's upload lands but its response is lost: the retry meets 409, reads
// the stored manifest, finds its own and goes on; its data is kept (the combine checks
// it), and the table is archived whole.
func TestAttackLostShardManifestResponse(t *testing.T) {
	t.Parallel()
	ps := testenv.Proxies(t)
	sb := setupShardsAt(t, ps.ConnectionString, 900)
	ps.Blob.AddRule(faultproxy.Rule{Name: "lost shard manifest response", Times: 1, Action: faultproxy.DropAfterForward(),
		Match: faultproxy.All(faultproxy.MethodIs(http.MethodPut), faultproxy.PathContains("shard-0001.json"))})
	cj, _ := sb.exportShards(t, sb.container, 3)
	if ps.Blob.Fired("lost shard manifest response") != 1 {
		t.Fatal("the rule did not fire")
	}
	sb.combined(t, cj)
	sb.assertArchivedOnce(t, cj.Generation)
}

// Two deliveries of one shard job at once, both held after their upload until both got
// there: both succeed, one shard manifest stands, the other attempt's data is removed,
// and the combine archives the table.
func TestAttackDuplicateShardDeliveriesAtOnce(t *testing.T) {
	t.Parallel()
	sb := setupShards(t, 900)
	job, gen := sb.planned(t, 2)
	hold := holdBoth("archive-table-shard", "exported")
	var wg sync.WaitGroup
	errsOut := make([]error, 2)
	for i, a := range []*Archiver{sb.archiver(t, hold), sb.archiver(t, hold)} {
		wg.Go(func() {
			_, errsOut[i] = a.ExportShard(sb.ctx, ShardJob{ArchiveTableJob: job, Generation: gen, Shard: 0})
		})
	}
	wg.Wait()
	for i, err := range errsOut {
		if err != nil {
			t.Fatalf("delivery %d: %v", i, err)
		}
	}
	var data []string
	for _, n := range blobNames(t, sb.bed, sb.container) {
		if strings.Contains(n, "/shard-0000-") {
			data = append(data, n)
		}
	}
	if len(data) != 1 {
		t.Fatalf("shard 0 has %d data blobs %v, want the one its manifest names", len(data), data)
	}
	if _, err := sb.a.ExportShard(sb.ctx, ShardJob{ArchiveTableJob: job, Generation: gen, Shard: 1}); err != nil {
		t.Fatal(err)
	}
	sb.combined(t, CombineJob{ArchiveTableJob: job, Generation: gen})
	sb.assertArchivedOnce(t, gen)
}

// A combine killed after the generation's manifest, before the delete: the table stays;
// the rerun takes the manifest it finds (the same content) and deletes the table; one
// generation.
func TestAttackCombineKilledAfterManifest(t *testing.T) {
	t.Parallel()
	sb := setupShards(t, 900)
	cj, _ := sb.exportShards(t, sb.container, 3)
	killed := sb.archiver(t, crashAt("archive-table-combine", "manifest"))
	if _, err := killed.CombineShards(sb.ctx, cj); !errors.Is(err, errCrash) {
		t.Fatalf("killed combine: %v", err)
	}
	if ok, _ := sb.current.Exists(sb.ctx); !ok {
		t.Fatal("the table is gone after a combine killed before its delete")
	}
	if rep := sb.combined(t, cj); rep.Manifest.Generation != cj.Generation {
		t.Fatalf("rerun of the combine: %+v", rep)
	}
	sb.assertArchivedOnce(t, cj.Generation)
}

// A redelivered archive-table job plans the same generation (messageGeneration) and
// finds the plan its first delivery wrote: the plan is not replaced, whatever the
// table holds now.
func TestRedeliveredPlanIsKept(t *testing.T) {
	t.Parallel()
	sb := setupShards(t, 700)
	insertion := time.Now()
	gen := messageGeneration(insertion, "message-1")
	if again := messageGeneration(insertion, "message-1"); again != gen || !validGeneration(gen) {
		t.Fatalf("generation of a redelivery %q, first %q", again, gen)
	}
	if other := messageGeneration(insertion, "message-2"); other == gen {
		t.Fatal("two messages plan one generation")
	}
	job := ArchiveTableJob{Table: sb.current.Name(), Container: sb.container, Sealed: true, Shards: 3}
	if _, err := sb.a.archiveTable(sb.ctx, job, gen); err != nil {
		t.Fatal(err)
	}
	first, err := sb.a.readPlan(sb.ctx, sb.container, job.Table, gen)
	if err != nil {
		t.Fatal(err)
	}
	job.Shards = 5 // a different plan would follow from this
	if _, err := sb.a.archiveTable(sb.ctx, job, gen); err != nil {
		t.Fatal(err)
	}
	second, err := sb.a.readPlan(sb.ctx, sb.container, job.Table, gen)
	if err != nil || second.Planned != first.Planned || len(second.Bounds) != len(first.Bounds) || len(first.Bounds) != 2 {
		t.Fatalf("plan after a redelivery %+v (%v), first %+v", second, err, first)
	}
}
