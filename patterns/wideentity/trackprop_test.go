package wideentity_test

import (
	"errors"
	"testing"

	"github.com/tablepatterns/tablepatterns/errs"
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
