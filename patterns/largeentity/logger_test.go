package largeentity_test

import (
	"errors"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/tablepatterns/tablepatterns/patterns/internal/testbed"
	"github.com/tablepatterns/tablepatterns/patterns/largeentity"
	"github.com/tablepatterns/tablepatterns/repo"
)

// The Store logs through its table's logger (the logger of every pattern comes from the
// table): an orphan left by a crashed update is reported there when the sweeper deletes it.
func TestLogsThroughTheTableLogger(t *testing.T) {
	t.Parallel()
	b := setup(t, false, nil)
	core, logs := observer.New(zap.InfoLevel)
	table := testbed.NewTable[Employee](b.Bed, &repo.Options{Logger: zap.New(core)})
	s, err := largeentity.New(table, b.Clients.Blobs, b.cname, &largeentity.Options{Retry: fast})
	if err != nil {
		t.Fatal(err)
	}
	b.store = s
	if err := s.Insert(b.ctx, employee("000123", photo(1, 40<<10))); err != nil {
		t.Fatal(err)
	}
	e, err := s.Get(b.ctx, "Sales", "000123", nil)
	if err != nil {
		t.Fatal(err)
	}
	e.Photo = largeentity.NewBlob(photo(2, 40<<10), "image/jpeg")
	largeentity.CrashAfter(s, largeentity.StepUploaded)
	if err := s.Update(b.ctx, &e); !errors.Is(err, largeentity.ErrCrash) {
		t.Fatalf("crash hook did not fire: %v", err)
	}
	largeentity.CrashAfter(s, "")
	if rep := b.sweepAll(); rep.Deleted == 0 {
		t.Fatalf("the sweep deleted nothing: %+v", rep)
	}
	if n := logs.FilterMessage("largeentity: orphan blob deleted").Len(); n == 0 {
		t.Fatal("the sweep's deletion was not logged through the table's logger")
	}
}
