package repo_test

import (
	"errors"
	"testing"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/repo"
	"github.com/tablepatterns/tablepatterns/repo/filter"
)

// A tracked table appends its write history to every tracked write: an entity that carries
// the tracking property itself would be written with the name twice (the service keeps
// one, reads hide it: the value is lost) or, for an upsert, store a history of the
// caller's making. Every kind of write of such an entity is refused before any request.
func TestTrackedTableRefusesItsWriteIDProperty(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	for _, prop := range []string{"", "Name"} {
		tbl := table[codec.Entity](t, b, &repo.Options{TrackWrites: true, WriteIDProperty: prop})
		want := prop
		if want == "" {
			want = repo.DefaultWriteIDProperty
		}
		if got := tbl.WriteIDProperty(); got != want {
			t.Fatalf("WriteIDProperty() = %q, want %q", got, want)
		}
		e := &codec.Entity{PartitionKey: "p", RowKey: "r", ETag: `W/"datetime'2026-01-01T00%3A00%3A00Z'"`, Properties: map[string]any{want: int32(1), "X": "y"}}
		mark := b.proxy.Count()
		for name, err := range map[string]error{
			"insert":       tbl.Insert(b.ctx, e),
			"upsert":       tbl.Upsert(b.ctx, e, nil),
			"upsert merge": tbl.Upsert(b.ctx, e, &repo.UpsertOptions{Mode: repo.Merge}),
			"update":       tbl.Update(b.ctx, e, nil),
			"update *":     tbl.Update(b.ctx, e, &repo.UpdateOptions{Unconditional: true}),
		} {
			var ie *repo.InvalidInputError
			if !errors.As(err, &ie) || ie.Field != want {
				t.Errorf("%s of an entity carrying %s: %v", name, want, err)
			}
		}
		if _, err := repo.Submit(b.ctx, tbl.InsertAction(e)); !errors.Is(err, repo.ErrInvalidInput) {
			t.Errorf("transaction: %v", err)
		}
		if n := requestsSince(b.proxy, mark); n != 0 {
			t.Fatalf("%d requests sent", n)
		}
	}
	untracked := table[codec.Entity](t, b, nil)
	if p := untracked.WriteIDProperty(); p != "" {
		t.Fatalf("untracked WriteIDProperty() = %q", p)
	}
}

// GetFunc and QueryFunc hand their decoder the entity without the tracking property, as
// the typed paths do: a decoder that keeps unmapped properties never sees the history.
func TestFuncReadsHideWriteHistory(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	tbl := table[codec.Entity](t, b, &repo.Options{TrackWrites: true})
	if err := tbl.Insert(b.ctx, &codec.Entity{PartitionKey: "p", RowKey: "r", Properties: map[string]any{"A": "a"}}); err != nil {
		t.Fatal(err)
	}
	raw := table[codec.Entity](t, b, &repo.Options{WriteIDProperty: "Other"}) // untracked: sees every property
	stored, err := repo.GetFunc(b.ctx, raw, "p", "r", func(data []byte, _ string) (*codec.Entity, error) { return codec.DecodeEntity(data) })
	if err != nil || stored.Properties[repo.DefaultWriteIDProperty] == nil {
		t.Fatalf("no history stored: %+v, %v", stored, err)
	}
	got, err := repo.GetFunc(b.ctx, tbl, "p", "r", func(data []byte, _ string) (*codec.Entity, error) { return codec.DecodeEntity(data) })
	if err != nil || got.Properties["A"] != "a" || got.Properties[repo.DefaultWriteIDProperty] != nil {
		t.Fatalf("GetFunc: %+v, %v", got, err)
	}
	n := 0
	for e, err := range repo.QueryFunc(b.ctx, tbl, repo.Query{Filter: filter.PartitionKey("p")}, codec.DecodeEntity) {
		if err != nil || e.Properties["A"] != "a" || e.Properties[repo.DefaultWriteIDProperty] != nil {
			t.Fatalf("QueryFunc: %+v, %v", e, err)
		}
		n++
	}
	if n != 1 {
		t.Fatalf("QueryFunc read %d entities", n)
	}
}

// An untracked Table of codec.Entity (dynamic) or a custom WriteIDProperty: does a read
// expose the tracking property, so that a write-back restores a stale history?
func TestUntrackedDynamicTableNeverSeesWriteHistory(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	tracked := table[Counter](t, b, &repo.Options{TrackWrites: true})
	mustInsertCounter(t, tracked, 5)
	dyn := table[codec.Entity](t, b, nil)
	e, err := dyn.Get(b.ctx, "c", "1")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := e.Properties[repo.DefaultWriteIDProperty]; ok {
		t.Errorf("untracked codec.Entity table exposes %s: %v", repo.DefaultWriteIDProperty, e.Properties)
	}
	// A tracked table with a custom property name; an untracked dynamic table with defaults.
	custom := table[Counter](t, b, &repo.Options{TrackWrites: true, WriteIDProperty: "MyIDs"})
	if err := custom.Insert(b.ctx, &Counter{PK: "c", RK: "2"}); err != nil {
		t.Fatal(err)
	}
	e, err = dyn.Get(b.ctx, "c", "2")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := e.Properties["MyIDs"]; ok {
		t.Logf("note: an untracked dynamic table exposes a custom tracking property MyIDs (it only knows the default name): %v", e.Properties)
	}
}
