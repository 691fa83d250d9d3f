package consistency

import (
	"errors"
	"strings"
	"testing"

	"net/http"

	"github.com/tablepatterns/tablepatterns/internal/faultproxy"
	"github.com/tablepatterns/tablepatterns/internal/testenv"
	"github.com/tablepatterns/tablepatterns/repo"

	"context"
)

// The window between the move's target read and its source read, held exactly at the
// proxy: the source GET is paused, the application updates the source (v1 -> v2) and a
// duplicate delivery moves v2 (and the application re-creates the entity as v3), then the
// held read goes on. Every variant must end with the newest version archived, once, and
// the source gone. Keys carry a dot, a quote, a percent and non-ASCII characters.
func TestArchiveEntitySourceChangedBetweenTargetAndSourceRead(t *testing.T) {
	t.Parallel()
	ps := testenv.Proxies(t)
	b := setup(t, ps.ConnectionString)
	container := testenv.ContainerName(t)
	for i, tc := range []struct {
		name, target  string
		dup, recreate bool
	}{
		{"update/table", "table", false, false},
		{"update/blob", "blob", false, false},
		{"dup/table", "table", true, false},
		{"dup/blob", "blob", true, false},
		{"dup-recreate/table", "table", true, true},
		{"dup-recreate/blob", "blob", true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pk, rk := "o'brien.100% ü", "..%2E"+string(rune('a'+i))
			job := b.job(pk, rk)
			if tc.target == "blob" {
				job = ArchiveEntityJob{Source: b.current.Name(), PartitionKey: pk, RowKey: rk, TargetContainer: container}
			}
			if err := b.current.Insert(b.ctx, employee(pk, rk, 1)); err != nil {
				t.Fatal(err)
			}
			src := "/" + b.current.Name() + "("
			p := ps.Table.PauseAt("source read", func(r *http.Request) bool {
				return r.Method == http.MethodGet && faultproxy.IsGetEntity(r) && strings.Contains(r.URL.Path, src)
			}, 1)
			t.Cleanup(p.Release)
			first := b.another(t)
			done := make(chan error, 1)
			go func() { _, err := first.ArchiveEntity(b.ctx, job); done <- err }()
			if err := p.Wait(b.ctx); err != nil {
				t.Fatal(err)
			}
			// Only the held request is paused; let everything else through.
			want := int32(2)
			if err := b.current.Update(b.ctx, employee(pk, rk, 2), &repo.UpdateOptions{Unconditional: true}); err != nil {
				t.Fatal(err)
			}
			if tc.dup {
				p2 := b.another(t)
				// The pause rule still matches GETs (it counts them) but holds only the 1st.
				if out, err := p2.ArchiveEntity(b.ctx, job); err != nil || out != OutcomeMoved {
					t.Fatalf("duplicate: %v %v", out, err)
				}
				if tc.recreate {
					if err := b.current.Insert(b.ctx, employee(pk, rk, 3)); err != nil {
						t.Fatal(err)
					}
					want = 3
				}
			}
			p.Release()
			if err := <-done; err != nil {
				t.Fatalf("held delivery: %v", err)
			}
			if tc.recreate {
				// The held delivery must have moved v3 too (or a rerun does).
				if _, err := b.a.ArchiveEntity(b.ctx, job); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := b.current.Get(b.ctx, pk, rk); !errors.Is(err, repo.ErrNotFound) {
				t.Fatalf("source still there: %v", err)
			}
			if age := b.archivedAge(t, job); age != want {
				t.Fatalf("archive holds v%d, want v%d", age, want)
			}
		})
	}
}

// The blob target's window between the batch's target reads (GetProperties) and its
// source read, held at the proxy: meanwhile a duplicate run moves the whole range (v1
// copies uploaded, sources deleted) and the application re-inserts
// one key (v2, same keys). The held run read "no blob" for every key; its source read
// then finds only v2. Its upload (If-None-Match *) must not overwrite the v1 copy blindly
// and then the source be deleted at a version the blob does not hold: the end is v2 in
// the blob, recording v2's ETag, and the source empty.
func TestRangeBlobTargetDeleteReinsertInWindow(t *testing.T) {
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
