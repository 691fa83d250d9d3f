package wideentity_test

import (
	"errors"
	"testing"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/errs"
	"github.com/tablepatterns/tablepatterns/patterns/internal/testbed"
	"github.com/tablepatterns/tablepatterns/patterns/wideentity"
	"github.com/tablepatterns/tablepatterns/repo"
)

// New refuses a table tracking writes in a property every chunk carries; a logical entity
// may not use the table's tracking property (nor the default one) as a property of its own:
// refused before any request, by Insert, Put and SetProperty.
func TestTrackingPropertyReserved(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	for _, prop := range []string{wideentity.RevProperty, wideentity.ChunksProperty} {
		_, err := wideentity.New(mustTable(t, b, &repo.Options{TrackWrites: true, WriteIDProperty: prop}), nil)
		if !errors.Is(err, errs.ErrInvalidInput) {
			t.Errorf("New on a table tracking in %s: %v", prop, err)
		}
	}
	s, err := wideentity.New(mustTable(t, b, &repo.Options{TrackWrites: true, WriteIDProperty: "Name"}), nil)
	if err != nil {
		t.Fatal(err)
	}
	mark := b.Proxy().Count()
	for _, name := range []string{"Name", repo.DefaultWriteIDProperty} {
		e := &wideentity.Entity{PartitionKey: "Sales", RowKey: "1", Properties: map[string]any{name: "x", "D001": int32(1)}}
		if err := s.Insert(b.Ctx, e); !errors.Is(err, errs.ErrInvalidInput) {
			t.Errorf("Insert of property %s: %v", name, err)
		}
		if err := s.Put(b.Ctx, e); !errors.Is(err, errs.ErrInvalidInput) {
			t.Errorf("Put of property %s: %v", name, err)
		}
		if err := s.SetProperty(b.Ctx, "Sales", "1", name, "x"); !errors.Is(err, errs.ErrInvalidInput) {
			t.Errorf("SetProperty %s: %v", name, err)
		}
	}
	if n := b.Proxy().Count() - mark; n != 0 {
		t.Fatalf("%d requests sent", n)
	}
}

// A table whose write-tracking property is one of wideentity's own (_Rev) would write _Rev
// twice on every chunk and hide it on reads: New refuses it, or the entity reads back.
func TestNewRefusesTrackingPropertyNamedLikeChunkProperty(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	table := mustTable(t, b, &repo.Options{TrackWrites: true, WriteIDProperty: wideentity.RevProperty})
	s, err := wideentity.New(table, nil)
	if err != nil {
		return // refused: held
	}
	e := &wideentity.Entity{PartitionKey: "Sales", RowKey: "000123", Properties: year(3)}
	if err := s.Insert(b.Ctx, e); err != nil {
		t.Fatalf("New accepted WriteIDProperty %q, then Insert: %v", wideentity.RevProperty, err)
	}
	if _, err := s.Get(b.Ctx, "Sales", "000123"); err != nil {
		t.Fatalf("New accepted WriteIDProperty %q; an entity it inserted does not read back: %v", wideentity.RevProperty, err)
	}
}

// A table whose write-tracking property is a name the caller uses for data: the history
// would be appended under the same name and the value lost, so the write is refused before
// any request, or the value reads back.
func TestWritesRefuseDataNamedLikeTrackingProperty(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	table := mustTable(t, b, &repo.Options{TrackWrites: true, WriteIDProperty: "Name"})
	s, err := wideentity.New(table, nil)
	if err != nil {
		t.Fatal(err)
	}
	e := &wideentity.Entity{PartitionKey: "Sales", RowKey: "000124", Properties: year(5)}
	if err := s.Insert(b.Ctx, e); err != nil {
		return // refused: held
	}
	got, err := s.Get(b.Ctx, "Sales", "000124")
	if err != nil {
		t.Fatalf("Insert of property Name on a table tracking in Name succeeded, Get: %v", err)
	}
	if got.Properties["Name"] != "version 5" {
		t.Fatalf("Insert of Name=%q succeeded on a table tracking writes in Name; Get returns Name=%v (stored: %v)",
			"version 5", got.Properties["Name"], rawProp(t, b, "Sales", "000124", "Name"))
	}
}

// Data written through a table tracking under the default name, then opened through one
// that tracks in another property: the stored history must not show up as a property of the
// entity, so Get returns only the caller's properties and Update of what it returned works.
func TestGetAndUpdateIgnoreHistoryAfterTrackingPropertyChanges(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	s1, err := wideentity.New(mustTable(t, b, &repo.Options{TrackWrites: true}), nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := s1.Insert(b.Ctx, &wideentity.Entity{PartitionKey: "Sales", RowKey: "000125", Properties: year(7)}); err != nil {
		t.Fatal(err)
	}
	s2, err := wideentity.New(mustTable(t, b, &repo.Options{TrackWrites: true, WriteIDProperty: "TpOther"}), nil)
	if err != nil {
		return // refused: held
	}
	got, err := s2.Get(b.Ctx, "Sales", "000125")
	if err != nil {
		t.Fatal(err)
	}
	var leaked []string
	for name := range got.Properties {
		if name == repo.DefaultWriteIDProperty {
			leaked = append(leaked, name)
		}
	}
	_, uerr := s2.Update(b.Ctx, "Sales", "000125", func(e *wideentity.Entity) error {
		e.Properties["D001"] = int32(42)
		return nil
	})
	if len(leaked) > 0 || uerr != nil {
		t.Fatalf("reopened with WriteIDProperty TpOther: Get shows %v as user properties; Update: %v", leaked, uerr)
	}
}

func mustTable(t *testing.T, b *testbed.Bed, o *repo.Options) *repo.Table[codec.Entity] {
	t.Helper()
	o.Retry = testbed.FastRetry()
	tb, err := repo.New[codec.Entity](b.Clients.Tables, b.Table, o)
	if err != nil {
		t.Fatal(err)
	}
	return tb
}

// rawProp returns the stored values of prop in the chunks of a logical entity.
func rawProp(t *testing.T, b *testbed.Bed, pk, rk, prop string) []any {
	t.Helper()
	var out []any
	for _, c := range chunksOf(t, b, pk, rk) {
		if v, ok := c.Properties[prop]; ok {
			out = append(out, v)
		}
	}
	return out
}
