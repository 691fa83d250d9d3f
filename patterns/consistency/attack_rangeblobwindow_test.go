package consistency

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/tablepatterns/tablepatterns/internal/faultproxy"
	"github.com/tablepatterns/tablepatterns/internal/testenv"
	"github.com/tablepatterns/tablepatterns/repo"
)

// The blob target's window between the batch's target reads (GetProperties) and its
// source read, held at the proxy: meanwhile a duplicate run moves the whole range (v1
// copies uploaded, sources deleted) and the application re-inserts
// one key (v2, same keys). The held run read "no blob" for every key; its source read
// then finds only v2. Its upload (If-None-Match *) must not overwrite the v1 copy blindly
// and then the source be deleted at a version the blob does not hold: the end is v2 in
// the blob, recording v2's ETag, and the source empty.
func TestAttackRangeBlobTargetDeleteReinsertInWindow(t *testing.T) {
	t.Parallel()
	ps := testenv.Proxies(t)
	b := setup(t, ps.ConnectionString)
	direct := directTable(t, b.current.Name())
	b.loadRange(t, []string{"Sales"}, 40)
	container := testenv.ContainerName(t)
	t.Cleanup(func() { _, _ = b.clients.Blobs.DeleteContainer(context.Background(), container, nil) })
	job := ArchiveRangeJob{Source: b.current.Name(), PartitionKey: "Sales", TargetContainer: container}
	src := "/" + b.current.Name() + "()"
	p := ps.Table.PauseAt("batch source read", func(r *http.Request) bool {
		return r.Method == http.MethodGet && faultproxy.IsListEntities(r) && strings.Contains(r.URL.Path, src) &&
			r.URL.Query().Get("$select") == ""
	}, 1)
	t.Cleanup(p.Release)
	done := make(chan error, 1)
	go func() { _, err := b.a.ArchiveRange(b.ctx, job); done <- err }()
	if err := p.Wait(b.ctx); err != nil {
		t.Fatal(err)
	}
	dup, err := New(directClients(t), &Options{Retry: fastRetry()})
	if err != nil {
		t.Fatal(err)
	}
	if rep, err := dup.ArchiveRange(b.ctx, job); err != nil || rep.Moved != 40 {
		t.Fatalf("duplicate: %+v %v", rep, err)
	}
	v2 := rangeEntity("Sales", 7, 2)
	if err := direct.Insert(b.ctx, v2); err != nil {
		t.Fatal(err)
	}
	p.Release()
	if err := <-done; err != nil {
		t.Fatalf("held run: %v", err)
	}
	got, err := b.a.ReadArchivedEntity(b.ctx, container, b.current.Name(), "Sales", v2.RowKey)
	if err != nil || got.Properties["Version"] != int32(2) {
		t.Fatalf("archived: %v %v", got, err)
	}
	st, err := b.a.blobState(b.ctx, ArchiveEntityJob{Source: b.current.Name(), PartitionKey: "Sales", RowKey: v2.RowKey, TargetContainer: container},
		EntityBlobName(b.current.Name(), "Sales", v2.RowKey))
	if err != nil || st.sourceETag != v2.ETag {
		t.Fatalf("recorded version %q, want %q: %v", st.sourceETag, v2.ETag, err)
	}
	if left, err := direct.Collect(b.ctx, repo.Query{}); err != nil || len(left) != 0 {
		t.Fatalf("source: %d left: %v", len(left), err)
	}
}
