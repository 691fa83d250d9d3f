package dataseries_test

import (
	"testing"

	"github.com/tablepatterns/tablepatterns/patterns/dataseries"
	"github.com/tablepatterns/tablepatterns/repo"
)

// A table tracking writes in AppliedOps (dataseries.OpsProperty) tracks writes, so New
// accepts it; each Add then writes AppliedOps twice, and the table's codec hides AppliedOps
// on reads, so an operation id is never found again. Expected: New refuses the table, or
// an OpID counts once.
func TestAttackSeriesTrackPropIsOps(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	s, err := dataseries.New[int64](table(b, &repo.Options{WriteIDProperty: dataseries.OpsProperty}), dataseries.Layout{Points: 24, Prefix: "H"}, nil)
	if err != nil {
		return // refused: held
	}
	for range 2 {
		if _, err := s.Add(b.Ctx, "msgs", "2026-11-24", 3, 5, &dataseries.AddOptions{OpID: "msg-1"}); err != nil {
			t.Fatal(err)
		}
	}
	got, err := s.Get(b.Ctx, "msgs", "2026-11-24")
	if err != nil {
		t.Fatal(err)
	}
	if got.Points[3] != 5 {
		t.Fatalf("New accepted WriteIDProperty %q; two Adds of 5 with one OpID give %d, want 5", dataseries.OpsProperty, got.Points[3])
	}
}

// A table tracking writes in a point's own name (H03): Add of that point succeeds and the
// point reads 0. Expected: New refuses the table, or the point reads back.
func TestAttackSeriesTrackPropIsPoint(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	s, err := dataseries.New[int64](table(b, &repo.Options{WriteIDProperty: "H03"}), dataseries.Layout{Points: 24, Prefix: "H"}, nil)
	if err != nil {
		return // refused: held
	}
	v, err := s.Add(b.Ctx, "msgs", "2026-11-25", 3, 5, nil)
	if err != nil {
		return // refused: held
	}
	got, err := s.Get(b.Ctx, "msgs", "2026-11-25")
	if err != nil {
		t.Fatalf("Add returned %d, Get: %v", v, err)
	}
	if got.Points[3] != 5 {
		raw, _ := b.Raw.Get(b.Ctx, "msgs", "2026-11-25")
		t.Fatalf("New accepted WriteIDProperty H03; Add(H03, 5) returned %d, Get reads %d (stored H03=%v)", v, got.Points[3], raw.Properties["H03"])
	}
}
