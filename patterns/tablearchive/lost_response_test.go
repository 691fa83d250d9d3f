package tablearchive

import (
	"net/http"
	"testing"
	"time"

	"github.com/tablepatterns/tablepatterns/internal/faultproxy"
	"github.com/tablepatterns/tablepatterns/internal/testenv"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"

	"errors"
	"strings"
	"sync"
)

// The manifest upload lands but its response is lost: the retry meets 409, reads the
// stored manifest back, finds it is its own and goes on; the table is deleted after a
// complete generation, its data is kept, and a sweep (clock two hours ahead) removes
// nothing.
func TestLostManifestResponseKeepsData(t *testing.T) {
	t.Parallel()
	ps := testenv.Proxies(t)
	b := setup(t, ps.ConnectionString)
	container := testenv.ContainerName(t)
	name := b.current.Name()
	fillTable(t, b, name, 30, "a")
	ps.Blob.AddRule(faultproxy.Rule{Name: "lost manifest response", Times: 1, Action: faultproxy.DropAfterForward(),
		Match: faultproxy.All(faultproxy.MethodIs(http.MethodPut), faultproxy.PathContains("manifest.json"))})
	rep, err := b.a.ArchiveTable(b.ctx, ArchiveTableJob{Table: name, Container: container, Sealed: true})
	if err != nil || rep.Outcome != OutcomeMoved {
		t.Fatalf("archive after a lost manifest response: %+v %v", rep.Outcome, err)
	}
	if ps.Blob.Fired("lost manifest response") != 1 {
		t.Fatal("the rule did not fire")
	}
	s := sweeper(t, ps, 2*time.Hour)
	if swept, err := s.SweepAbortedExports(b.ctx, container, name, time.Hour, false); err != nil || len(swept) != 0 {
		t.Fatalf("sweep after a complete export: %v %v", swept, err)
	}
	assertRestorable(t, b, container, name, 30)
}

// A restore whose snapshot request landed but whose response was lost: the retry takes
// a second snapshot, and only that one is deleted at the end. The restore is not
// "stopped" (it succeeds), yet it leaves a snapshot behind on every such loss: a copy of
// the archive that nothing tracks and that, while it exists, makes a plain delete of the
// data blob fail (409 SnapshotsPresent). Expected: no snapshot left after a restore that
// returned success.
func TestRestoreSnapshotResponseLostLeaksSnapshot(t *testing.T) {
	t.Parallel()
	ps := testenv.Proxies(t)
	b := setup(t, ps.ConnectionString)
	cont := testenv.ContainerName(t)
	name := b.current.Name()
	fillTable(t, b, name, 30, "a")
	if _, err := b.a.ArchiveTable(b.ctx, ArchiveTableJob{Table: name, Container: cont, Sealed: true, KeepTable: true}); err != nil {
		t.Fatal(err)
	}
	ps.Blob.AddRule(faultproxy.Rule{Name: "lost snapshot response", Times: 1, Action: faultproxy.DropAfterForward(),
		Match: faultproxy.All(faultproxy.MethodIs(http.MethodPut), faultproxy.QueryContains("comp=snapshot"))})
	back := b.newTable(t, "Back")
	rep, err := b.a.RestoreTable(b.ctx, RestoreTableJob{Table: name, Container: cont, Target: back.Name()})
	if err != nil || rep.Outcome != OutcomeRestored {
		t.Fatalf("restore after a lost snapshot response: %+v %v", rep, err)
	}
	if ps.Blob.Fired("lost snapshot response") != 1 {
		t.Fatal("the rule did not fire")
	}
	var snaps []string
	pager := b.clients.Blobs.NewListBlobsFlatPager(cont, &azblob.ListBlobsFlatOptions{Include: container.ListBlobsInclude{Snapshots: true}})
	for pager.More() {
		page, err := pager.NextPage(b.ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range page.Segment.BlobItems {
			if it.Snapshot != nil && *it.Snapshot != "" {
				snaps = append(snaps, *it.Name+"@"+*it.Snapshot)
			}
		}
	}
	if len(snaps) != 0 {
		t.Fatalf("a successful restore left snapshots: %v", snaps)
	}
}

// The responses of the plan's create, of the generation manifest's create, of the
// combine's last touch and of the table's delete are lost after the requests landed:
// every retry recognizes its own write, one generation, the table deleted, whole.
func TestShardedLostResponses(t *testing.T) {
	t.Parallel()
	ps := testenv.Proxies(t)
	sb := setupShardsAt(t, ps.ConnectionString, 140)
	rules := map[string]faultproxy.Rule{
		"plan": {Times: 1, Action: faultproxy.DropAfterForward(),
			Match: faultproxy.All(faultproxy.MethodIs(http.MethodPut), faultproxy.PathContains("plan.json"))},
		"manifest": {Times: 1, Action: faultproxy.DropAfterForward(),
			Match: faultproxy.All(faultproxy.MethodIs(http.MethodPut), faultproxy.PathContains("manifest.json"))},
	}
	for name, r := range rules {
		r.Name = name
		ps.Blob.AddRule(r)
	}
	ps.Table.AddRule(faultproxy.Rule{Name: "delete", Times: 1, Action: faultproxy.DropAfterForward(),
		Match: faultproxy.MethodIs(http.MethodDelete)})
	cj, _ := sb.exportShards(t, sb.container, 3)
	sb.combined(t, cj)
	for name := range rules {
		if ps.Blob.Fired(name) != 1 {
			t.Errorf("rule %s did not fire", name)
		}
	}
	if ps.Table.Fired("delete") != 1 {
		t.Error("the table delete rule did not fire")
	}
	sb.assertArchivedOnce(t, cj.Generation)
}

// A shard manifest's upload lands but its response is lost: the retry meets 409, reads
// the stored manifest, finds its own and goes on; its data is kept (the combine checks
// it), and the table is archived whole.
func TestLostShardManifestResponse(t *testing.T) {
	t.Parallel()
	ps := testenv.Proxies(t)
	sb := setupShardsAt(t, ps.ConnectionString, 140)
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
func TestDuplicateShardDeliveriesAtOnce(t *testing.T) {
	t.Parallel()
	sb := setupShards(t, 140)
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
func TestCombineKilledAfterManifest(t *testing.T) {
	t.Parallel()
	sb := setupShards(t, 140)
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
	sb := setupShards(t, 140)
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
