package tablearchive

import (
	"net/http"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"

	"github.com/tablepatterns/tablepatterns/internal/faultproxy"
	"github.com/tablepatterns/tablepatterns/internal/testenv"
)

// A restore whose snapshot request landed but whose response was lost: the retry takes
// a second snapshot, and only that one is deleted at the end. The restore is not
// "stopped" (it succeeds), yet it leaves a snapshot behind on every such loss: a copy of
// the archive that nothing tracks and that, while it exists, makes a plain delete of the
// data blob fail (409 SnapshotsPresent). Expected: no snapshot left after a restore that
// returned success.
func TestAttackRestoreSnapshotResponseLostLeaksSnapshot(t *testing.T) {
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
