package wideentity_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/codec/keys"
	"github.com/tablepatterns/tablepatterns/internal/faultproxy"
	"github.com/tablepatterns/tablepatterns/patterns/internal/testbed"
	"github.com/tablepatterns/tablepatterns/patterns/wideentity"
	"github.com/tablepatterns/tablepatterns/repo"
	"github.com/tablepatterns/tablepatterns/repo/filter"
	"github.com/tablepatterns/tablepatterns/retry"
)

// chunksOf reads the physical chunks of a logical entity directly.
func chunksOf(t *testing.T, b *testbed.Bed, pk, rk string) []codec.Entity {
	t.Helper()
	all, err := b.Raw.Collect(b.Ctx, repo.Query{Filter: filter.RowKeyPrefix(pk, keys.Join(rk, ""))})
	if err != nil {
		t.Fatal(err)
	}
	return all
}

// checkWhole asserts that the stored chunks are exactly one write: n chunks, one revision.
func checkWhole(t *testing.T, b *testbed.Bed, pk, rk string, n int) string {
	t.Helper()
	chunks := chunksOf(t, b, pk, rk)
	if len(chunks) != n {
		t.Fatalf("%d chunks stored, want %d", len(chunks), n)
	}
	rev := chunks[0].Properties[wideentity.RevProperty]
	for _, c := range chunks {
		if c.Properties[wideentity.RevProperty] != rev {
			t.Fatalf("chunks of two revisions stored: %v and %v", rev, c.Properties[wideentity.RevProperty])
		}
	}
	return rev.(string)
}

// 365 daily counts go in as one transaction and come back with one query.
func TestInsertAndGet365Properties(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	s := store(t, b, nil)
	e := &wideentity.Entity{PartitionKey: "Sales", RowKey: "000123", Properties: year(7)}
	mark := b.Proxy().Count()
	if err := s.Insert(b.Ctx, e); err != nil {
		t.Fatal(err)
	}
	reqs := b.Proxy().Requests()[mark:]
	if len(reqs) != 1 || !strings.HasSuffix(reqs[0].Path, "$batch") {
		t.Fatalf("Insert sent %v, want one transaction", reqs)
	}
	rev := checkWhole(t, b, "Sales", "000123", wideentity.DefaultChunks)
	if e.Rev != rev {
		t.Fatalf("Insert set Rev %q, stored %q", e.Rev, rev)
	}
	for _, c := range chunksOf(t, b, "Sales", "000123") {
		if n := len(c.Properties) - 2; n > wideentity.PropertiesPerChunk || n < 100 {
			t.Fatalf("chunk %s holds %d properties", c.RowKey, n)
		}
	}
	mark = b.Proxy().Count()
	got, err := s.Get(b.Ctx, "Sales", "000123")
	if err != nil {
		t.Fatal(err)
	}
	if n := b.Proxy().Count() - mark; n != 1 {
		t.Fatalf("Get sent %d requests", n)
	}
	if !reflect.DeepEqual(got.Properties, year(7)) || got.Rev != rev {
		t.Fatalf("read back %d properties (rev %q), want the 366 written", len(got.Properties), got.Rev)
	}
	if err := s.Insert(b.Ctx, &wideentity.Entity{PartitionKey: "Sales", RowKey: "000123", Properties: year(1)}); !errors.Is(err, repo.ErrAlreadyExists) {
		t.Fatalf("second Insert: %v", err)
	}
	if _, err := s.Get(b.Ctx, "Sales", "000999"); !errors.Is(err, repo.ErrNotFound) {
		t.Fatalf("Get of a missing entity: %v", err)
	}
	// Another entity of the partition whose RowKey extends this one is not mixed in.
	if err := s.Insert(b.Ctx, &wideentity.Entity{PartitionKey: "Sales", RowKey: "000123!x", Properties: map[string]any{"D001": int32(1)}}); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Get(b.Ctx, "Sales", "000123"); err != nil || !reflect.DeepEqual(got.Properties, year(7)) {
		t.Fatalf("after a neighbour was written: %v", err)
	}
}

// SetProperty is one merge of one property on the chunk that holds it.
func TestSetPropertyMergesOneChunk(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	s := store(t, b, nil)
	e := &wideentity.Entity{PartitionKey: "Sales", RowKey: "000123", Properties: year(3)}
	if err := s.Insert(b.Ctx, e); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var sent []map[string]any
	b.Proxy().AddRule(faultproxy.Rule{Name: "capture", Match: func(r *http.Request) bool {
		if faultproxy.IsEntityWrite(r) {
			var m map[string]any
			raw, _ := io.ReadAll(r.Body)
			_ = json.Unmarshal(raw, &m)
			mu.Lock()
			sent = append(sent, m)
			mu.Unlock()
		}
		return false
	}})
	mark := b.Proxy().Count()
	if err := s.SetProperty(b.Ctx, "Sales", "000123", "D200", int32(1234)); err != nil {
		t.Fatal(err)
	}
	reqs := b.Proxy().Requests()[mark:]
	if len(reqs) != 1 || (reqs[0].Method != "MERGE" && reqs[0].Method != "PATCH") {
		t.Fatalf("SetProperty sent %v, want one merge", reqs)
	}
	wantKey := keys.Join("000123", "02", fmt.Sprintf("%02d", keys.Bucket("D200", 2)))
	if !strings.Contains(reqs[0].Path, "RowKey='"+wantKey+"'") {
		t.Fatalf("merged into %s, want the chunk %s", reqs[0].Path, wantKey)
	}
	mu.Lock()
	var props []string
	for k := range sent[0] {
		props = append(props, k)
	}
	mu.Unlock()
	slices.Sort(props)
	// The property alone: an unconditional merge carries no write id (repo's tracking
	// leaves the chunk's write history as it is).
	if !slices.Equal(props, []string{"D200", "PartitionKey", "RowKey"}) {
		t.Fatalf("merge body %v", props)
	}
	got, err := s.Get(b.Ctx, "Sales", "000123")
	if err != nil {
		t.Fatal(err)
	}
	want := year(3)
	want["D200"] = int32(1234)
	if !reflect.DeepEqual(got.Properties, want) || got.Rev != e.Rev {
		t.Fatalf("after SetProperty: D200=%v rev %q (was %q)", got.Properties["D200"], got.Rev, e.Rev)
	}
	// A new property goes to its chunk too.
	if err := s.SetProperty(b.Ctx, "Sales", "000123", "Team", "North"); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.Get(b.Ctx, "Sales", "000123"); got.Properties["Team"] != "North" {
		t.Fatal("new property lost")
	}
	if err := s.SetProperty(b.Ctx, "Sales", "nobody", "D001", int32(1)); !errors.Is(err, repo.ErrNotFound) {
		t.Fatalf("SetProperty of a missing entity: %v", err)
	}
}

// A crash during a write — the transaction dropped before it reaches the service, or its
// response lost after — leaves the old version or the new one, whole, never a mix; running
// the write again completes it. Also when the write changes the number of chunks.
func TestCrashDuringWriteLeavesOneWholeVersion(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name        string
		action      faultproxy.Action
		newApplied  bool
		chunksAfter int
	}{
		{"drop-before/same-layout", faultproxy.DropBeforeForward(), false, 2},
		{"drop-after/same-layout", faultproxy.DropAfterForward(), true, 2},
		{"drop-before/re-layout", faultproxy.DropBeforeForward(), false, 3},
		{"drop-after/re-layout", faultproxy.DropAfterForward(), true, 3},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, true)
			old := storeDirect(t, b, nil)
			if err := old.Insert(b.Ctx, &wideentity.Entity{PartitionKey: "P", RowKey: "E", Properties: year(1)}); err != nil {
				t.Fatal(err)
			}
			crashing := storeWith(t, b, &repo.Options{Retry: retry.NoRetry()}, &wideentity.Options{Chunks: c.chunksAfter}) // one attempt: the process "dies" with the request
			b.Proxy().AddRule(faultproxy.Rule{Name: "crash", Match: faultproxy.IsBatch, Times: 1, Action: c.action})
			if err := crashing.Put(b.Ctx, &wideentity.Entity{PartitionKey: "P", RowKey: "E", Properties: year(2)}); err == nil {
				t.Fatal("the crashed write reported success")
			}
			if b.Proxy().Fired("crash") != 1 {
				t.Fatal("the crash did not happen")
			}
			want, n := year(1), 2
			if c.newApplied {
				want, n = year(2), c.chunksAfter
			}
			checkWhole(t, b, "P", "E", n)
			got, err := old.Get(b.Ctx, "P", "E")
			if err != nil || !reflect.DeepEqual(got.Properties, want) {
				t.Fatalf("after the crash: %v, %q", err, got.Properties["Name"])
			}
			// The rerun completes the write.
			rerun := store(t, b, &wideentity.Options{Chunks: c.chunksAfter})
			if err := rerun.Put(b.Ctx, &wideentity.Entity{PartitionKey: "P", RowKey: "E", Properties: year(2)}); err != nil {
				t.Fatal(err)
			}
			checkWhole(t, b, "P", "E", c.chunksAfter)
			if got, err := rerun.Get(b.Ctx, "P", "E"); err != nil || !reflect.DeepEqual(got.Properties, year(2)) {
				t.Fatalf("after the rerun: %v", err)
			}
		})
	}
}

// Concurrent read-modify-writes of one logical entity lose no update.
func TestConcurrentUpdatesLoseNothing(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	s := store(t, b, nil)
	const writers, each = 6, 8
	var wg sync.WaitGroup
	errc := make(chan error, writers*each)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range each {
				_, err := s.Update(b.Ctx, "P", "E", func(e *wideentity.Entity) error {
					total, _ := e.Properties["Total"].(int32)
					mine, _ := e.Properties[fmt.Sprintf("W%d", w)].(int32)
					e.Properties["Total"] = total + 1
					e.Properties[fmt.Sprintf("W%d", w)] = mine + 1
					return nil
				})
				if err != nil {
					errc <- err
				}
			}
		}()
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Fatal(err)
	}
	got, err := s.Get(b.Ctx, "P", "E")
	if err != nil {
		t.Fatal(err)
	}
	if got.Properties["Total"] != int32(writers*each) {
		t.Fatalf("Total = %v, want %d", got.Properties["Total"], writers*each)
	}
	for w := range writers {
		if got.Properties[fmt.Sprintf("W%d", w)] != int32(each) {
			t.Fatalf("W%d = %v", w, got.Properties[fmt.Sprintf("W%d", w)])
		}
	}
	checkWhole(t, b, "P", "E", 2)
}

// Put of an entity read earlier is conditional on every chunk; a Put of a built entity
// overwrites; an error of fn writes nothing.
func TestPutConcurrencyAndUpdateErrors(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	s := store(t, b, nil)
	if err := s.Insert(b.Ctx, &wideentity.Entity{PartitionKey: "P", RowKey: "E", Properties: year(1)}); err != nil {
		t.Fatal(err)
	}
	e, err := s.Get(b.Ctx, "P", "E")
	if err != nil {
		t.Fatal(err)
	}
	// Someone changes one property of one chunk.
	if err := s.SetProperty(b.Ctx, "P", "E", "D010", int32(-1)); err != nil {
		t.Fatal(err)
	}
	e.Properties["Name"] = "stale write"
	if err := s.Put(b.Ctx, e); !errors.Is(err, repo.ErrPreconditionFailed) {
		t.Fatalf("Put over a changed chunk: %v", err)
	}
	fresh := &wideentity.Entity{PartitionKey: "P", RowKey: "E", Properties: map[string]any{"Only": "this"}}
	if err := s.Put(b.Ctx, fresh); err != nil {
		t.Fatal(err)
	}
	got, _ := s.Get(b.Ctx, "P", "E")
	if !reflect.DeepEqual(got.Properties, map[string]any{"Only": "this"}) {
		t.Fatalf("overwrite: %v", got.Properties)
	}
	boom := errors.New("boom")
	if _, err := s.Update(b.Ctx, "P", "E", func(e *wideentity.Entity) error { e.Properties["Only"] = "no"; return boom }); err != boom {
		t.Fatalf("fn error: %v", err)
	}
	notFound := fmt.Errorf("lookup: %w", repo.ErrNotFound) // an fn error that looks retryable is not retried
	calls := 0
	if _, err := s.Update(b.Ctx, "P", "E", func(*wideentity.Entity) error { calls++; return notFound }); err != notFound || calls != 1 {
		t.Fatalf("fn error %v after %d calls", err, calls)
	}
	if got, _ := s.Get(b.Ctx, "P", "E"); got.Properties["Only"] != "this" {
		t.Fatal("a failed Update wrote")
	}
}

// Changing Options.Chunks: SetProperty aimed at the new layout finds no chunk and rewrites
// the entity in it; nothing of the old layout is left.
func TestLayoutChange(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	two := store(t, b, nil)
	three := store(t, b, &wideentity.Options{Chunks: 3})
	if err := two.Insert(b.Ctx, &wideentity.Entity{PartitionKey: "P", RowKey: "E", Properties: year(6)}); err != nil {
		t.Fatal(err)
	}
	if got, err := three.Get(b.Ctx, "P", "E"); err != nil || !reflect.DeepEqual(got.Properties, year(6)) {
		t.Fatalf("a 3-chunk store reads a 2-chunk entity: %v", err)
	}
	if err := three.SetProperty(b.Ctx, "P", "E", "D001", int32(500)); err != nil {
		t.Fatal(err)
	}
	checkWhole(t, b, "P", "E", 3)
	want := year(6)
	want["D001"] = int32(500)
	if got, err := two.Get(b.Ctx, "P", "E"); err != nil || !reflect.DeepEqual(got.Properties, want) {
		t.Fatalf("after the re-layout: %v", err)
	}
}

// A Delete given the revision a read returned (opts.ETag = Entity.Rev) is refused once the
// entity was written since, and removes it while that revision is current.
func TestDeleteConditionalOnTheRevisionRead(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	s := store(t, b, nil)
	if err := s.Insert(b.Ctx, &wideentity.Entity{PartitionKey: "P", RowKey: "E", Properties: year(1)}); err != nil {
		t.Fatal(err)
	}
	old, err := s.Get(b.Ctx, "P", "E")
	if err != nil {
		t.Fatal(err)
	}
	cur, err := s.Update(b.Ctx, "P", "E", func(e *wideentity.Entity) error { e.Properties["Extra"] = "x"; return nil })
	if err != nil {
		t.Fatal(err)
	}
	if cur.Rev == old.Rev {
		t.Fatal("the update kept the revision")
	}
	if err := s.Delete(b.Ctx, "P", "E", &repo.DeleteOptions{ETag: old.ETag()}); !errors.Is(err, repo.ErrPreconditionFailed) {
		t.Fatalf("delete of a stale revision: %v, want ErrPreconditionFailed", err)
	}
	checkWhole(t, b, "P", "E", 2)
	if err := s.Delete(b.Ctx, "P", "E", &repo.DeleteOptions{ETag: cur.ETag()}); err != nil {
		t.Fatal(err)
	}
	if n := len(chunksOf(t, b, "P", "E")); n != 0 {
		t.Fatalf("%d chunks left", n)
	}
}

// Delete removes every chunk in one transaction and is idempotent; a crash before the
// transaction leaves the entity whole, and the rerun deletes it.
func TestDelete(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	s := store(t, b, nil)
	if err := s.Insert(b.Ctx, &wideentity.Entity{PartitionKey: "P", RowKey: "E", Properties: year(1)}); err != nil {
		t.Fatal(err)
	}
	crashing := storeWith(t, b, &repo.Options{Retry: retry.NoRetry()}, nil)
	b.Proxy().AddRule(faultproxy.Rule{Name: "crash", Match: faultproxy.IsBatch, Times: 1, Action: faultproxy.DropBeforeForward()})
	if err := crashing.Delete(b.Ctx, "P", "E", nil); err == nil {
		t.Fatal("the crashed delete reported success")
	}
	checkWhole(t, b, "P", "E", 2)
	for range 2 {
		if err := s.Delete(b.Ctx, "P", "E", nil); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(chunksOf(t, b, "P", "E")); n != 0 {
		t.Fatalf("%d chunks left", n)
	}
	if _, err := s.Get(b.Ctx, "P", "E"); !errors.Is(err, repo.ErrNotFound) {
		t.Fatalf("Get after Delete: %v", err)
	}
}

// Limits are checked before any request, and the error names the chunk.
func TestLimitsRefusedWithoutRequest(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	s := store(t, b, nil)
	single := store(t, b, &wideentity.Options{Chunks: 1})
	broken := store(t, b, &wideentity.Options{ChunkOf: func(string, int) int { return 7 }})
	many := make(map[string]any, 600)
	for i := range 600 {
		many[fmt.Sprintf("P%03d", i)] = int32(i)
	}
	big := make(map[string]any, 20)
	for i := range 20 {
		big[fmt.Sprintf("Text%02d", i)] = strings.Repeat("x", 30000) // 60 KB each as UTF-16
	}
	mark := b.Proxy().Count()
	var ie *repo.InvalidInputError
	err := s.Insert(b.Ctx, &wideentity.Entity{PartitionKey: "P", RowKey: "E", Properties: many})
	if !errors.As(err, &ie) || !strings.HasPrefix(ie.Field, "chunk ") || ie.Limit != wideentity.PropertiesPerChunk {
		t.Fatalf("600 properties in 2 chunks: %v", err)
	}
	calls := map[string]error{
		"over 1 MiB in a chunk": single.Insert(b.Ctx, &wideentity.Entity{PartitionKey: "P", RowKey: "E", Properties: big}),
		"reserved name":         s.Insert(b.Ctx, &wideentity.Entity{PartitionKey: "P", RowKey: "E", Properties: map[string]any{wideentity.RevProperty: "x"}}),
		"invalid name":          s.Put(b.Ctx, &wideentity.Entity{PartitionKey: "P", RowKey: "E", Properties: map[string]any{"a-b": "x"}}),
		"bad value":             s.Insert(b.Ctx, &wideentity.Entity{PartitionKey: "P", RowKey: "E", Properties: map[string]any{"X": struct{}{}}}),
		"bad key":               s.Insert(b.Ctx, &wideentity.Entity{PartitionKey: "P/1", RowKey: "E"}),
		"empty partition":       s.SetProperty(b.Ctx, "", "E", "X", "y"),
		"long key":              s.SetProperty(b.Ctx, "P", strings.Repeat("k", 510), "X", "y"),
		"set reserved":          s.SetProperty(b.Ctx, "P", "E", wideentity.ChunksProperty, int32(1)),
		"set bad value":         s.SetProperty(b.Ctx, "P", "E", "X", []int{1}),
		"chunkOf out of range":  broken.Insert(b.Ctx, &wideentity.Entity{PartitionKey: "P", RowKey: "E", Properties: map[string]any{"X": "y"}}),
		"nil entity":            s.Put(b.Ctx, nil),
		"delete bad key":        s.Delete(b.Ctx, "P", "E#", nil),
	}
	_, calls["get bad key"] = s.Get(b.Ctx, "P?", "E")
	_, calls["update nil fn"] = s.Update(b.Ctx, "P", "E", nil)
	for name, err := range calls {
		if !errors.Is(err, repo.ErrInvalidInput) {
			t.Errorf("%s: %v, want ErrInvalidInput", name, err)
		}
	}
	if n := b.Proxy().Count() - mark; n != 0 {
		t.Fatalf("%d requests sent for refused input", n)
	}
	// Spread over more chunks, the same data fits.
	wide := store(t, b, &wideentity.Options{Chunks: 3})
	p := maps.Clone(many)
	if err := wide.Insert(b.Ctx, &wideentity.Entity{PartitionKey: "P", RowKey: "many", Properties: p}); err != nil {
		t.Fatalf("600 properties in 3 chunks: %v", err)
	}
	mark = b.Proxy().Count()
	tracked := testbed.NewTable[codec.Entity](b, &repo.Options{TrackWrites: true})
	for _, o := range []*wideentity.Options{{Chunks: -1}, {Chunks: 101}, {TornRetry: retry.Policy{MaxRetries: -3}}} {
		if _, err := wideentity.New(tracked, o); !errors.Is(err, repo.ErrInvalidInput) {
			t.Errorf("New(%+v): %v", o, err)
		}
	}
	if _, err := wideentity.New(testbed.NewTable[codec.Entity](b, nil), nil); !errors.As(err, &ie) || !strings.Contains(ie.Field, "TrackWrites") {
		t.Errorf("a table without TrackWrites: %v, want an *InvalidInputError naming the option", err)
	}
	if _, err := wideentity.New(nil, nil); !errors.As(err, &ie) {
		t.Errorf("a nil table: %v, want an *InvalidInputError", err)
	}
	if n := b.Proxy().Count() - mark; n != 0 {
		t.Fatalf("%d requests sent by New", n)
	}
}
