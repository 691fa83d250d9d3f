package tablearchive

import (
	"errors"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"

	"github.com/tablepatterns/tablepatterns/internal/faultproxy"
	"github.com/tablepatterns/tablepatterns/internal/testenv"
)

// shardWindow is the restore window of these tests: 140 sign-ins in two shards are
// written in three windows, the second spanning the shards' boundary.
const shardWindow = 50

// noSnapshotsLeft fails the test if any blob of container has a snapshot.
func noSnapshotsLeft(t *testing.T, b *bed, cont string) {
	t.Helper()
	pager := b.clients.Blobs.NewListBlobsFlatPager(cont, &azblob.ListBlobsFlatOptions{Include: container.ListBlobsInclude{Snapshots: true}})
	for pager.More() {
		page, err := pager.NextPage(b.ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range page.Segment.BlobItems {
			if it.Snapshot != nil && *it.Snapshot != "" {
				t.Errorf("snapshot left behind: %s@%s", *it.Name, *it.Snapshot)
			}
		}
	}
}

// A restore of a sharded generation whose windows' transactions land but lose their
// answers (the first three, the window across the shards' boundary among them) restores
// every entity exactly as archived.
func TestRestoreOfShardsThroughLostTransactionAnswersWritesEveryEntity(t *testing.T) {
	t.Parallel()
	ps := testenv.Proxies(t)
	sb := setupShardsAt(t, ps.ConnectionString, 140)
	cj, _ := sb.exportShards(t, sb.container, 2)
	cj.KeepTable = true
	sb.combined(t, cj)
	ps.Table.AddRule(faultproxy.Rule{Name: "lost answer", Times: 3, Action: faultproxy.DropAfterForward(), Match: faultproxy.IsBatch})
	a := sb.archiver(t, nil)
	a.seams.restoreWindow = shardWindow
	back := sb.newTable(t, "Back")
	if rep, err := a.RestoreTable(sb.ctx, RestoreTableJob{Table: sb.current.Name(), Container: sb.container, Target: back.Name()}); err != nil || rep.Outcome != OutcomeRestored {
		t.Fatalf("restore: %+v %v", rep, err)
	}
	if ps.Table.Fired("lost answer") != 3 {
		t.Fatalf("the rule fired %d times, want 3", ps.Table.Fired("lost answer"))
	}
	assertTableHolds(t, sb.bed, back, sb.want)
	noSnapshotsLeft(t, sb.bed, sb.container)
}

// A restore killed after its first window and rerun ("a rerun after a stop writes the
// same entities again") restores every entity exactly as archived, and neither run
// leaves a snapshot.
func TestRestoreOfShardsKilledBetweenWindowsAndRerun(t *testing.T) {
	t.Parallel()
	sb := setupShards(t, 140)
	cj, _ := sb.exportShards(t, sb.container, 2)
	cj.KeepTable = true
	sb.combined(t, cj)
	killed := errors.New("killed")
	a := sb.archiver(t, func(job, step string) error {
		if job == "restore-table" && step == "chunk" {
			return killed
		}
		return nil
	})
	a.seams.restoreWindow = shardWindow
	back := sb.newTable(t, "Back")
	job := RestoreTableJob{Table: sb.current.Name(), Container: sb.container, Target: back.Name()}
	if _, err := a.RestoreTable(sb.ctx, job); !errors.Is(err, killed) {
		t.Fatalf("first run: %v, want it killed after its first window", err)
	}
	a = sb.archiver(t, nil)
	a.seams.restoreWindow = shardWindow
	if rep, err := a.RestoreTable(sb.ctx, job); err != nil || rep.Outcome != OutcomeRestored {
		t.Fatalf("rerun: %+v %v", rep, err)
	}
	assertTableHolds(t, sb.bed, back, sb.want)
	noSnapshotsLeft(t, sb.bed, sb.container)
}

// Two restores of one sharded generation into one table at once: the first, its
// snapshots taken and verified, waits while the second runs whole (its snapshots
// deleted at its end), then writes. Both succeed (the second deleted its own snapshots
// only, not those the first writes from), the table holds every entity exactly as
// archived, and no snapshot is left.
func TestTwoRestoresOfShardsAtOnce(t *testing.T) {
	t.Parallel()
	sb := setupShards(t, 140)
	cj, _ := sb.exportShards(t, sb.container, 2)
	cj.KeepTable = true
	sb.combined(t, cj)
	back := sb.newTable(t, "Back")
	job := RestoreTableJob{Table: sb.current.Name(), Container: sb.container, Target: back.Name()}
	verified, other := make(chan struct{}), make(chan struct{})
	first := sb.archiver(t, func(j, s string) error {
		if j == "restore-table" && s == "verified" {
			close(verified)
			<-other
		}
		return nil
	})
	first.seams.restoreWindow = shardWindow
	done := make(chan error, 1)
	go func() { _, err := first.RestoreTable(sb.ctx, job); done <- err }()
	<-verified
	second := sb.archiver(t, nil)
	second.seams.restoreWindow = shardWindow
	_, err2 := second.RestoreTable(sb.ctx, job)
	close(other)
	if err1 := <-done; err1 != nil || err2 != nil {
		t.Fatalf("the first restore: %v; the second: %v", err1, err2)
	}
	assertTableHolds(t, sb.bed, back, sb.want)
	noSnapshotsLeft(t, sb.bed, sb.container)
}
