package dataseries_test

import (
	"errors"
	"testing"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/errs"
	"github.com/tablepatterns/tablepatterns/patterns/dataseries"
	"github.com/tablepatterns/tablepatterns/repo"
)

// New refuses a table that tracks writes in one of the series' own properties (the
// applied operations, any point of the layout), and accepts one that tracks elsewhere.
func TestNewRefusesTrackingInSeriesProperties(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	layout := dataseries.Layout{Points: 24, Prefix: "H"}
	for _, prop := range []string{dataseries.OpsProperty, "H00", "H03", "H23"} {
		_, err := dataseries.New[int64](table(b, &repo.Options{WriteIDProperty: prop}), layout, nil)
		var ie *errs.InvalidInputError
		if !errors.As(err, &ie) || ie.Field != "repo.Options.WriteIDProperty" {
			t.Errorf("WriteIDProperty %q: %v", prop, err)
		}
	}
	if _, err := dataseries.New[int64](table(b, &repo.Options{WriteIDProperty: "H24"}), layout, nil); err != nil {
		t.Errorf("WriteIDProperty H24 (not a point of 24): %v", err)
	}
}

// A series of MaxPoints points, with its applied operations and the table's write history,
// stays within the service's 252 custom properties (Azurite does not enforce the limit:
// count what it stored).
func TestFullSeriesFitsWithHistory(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	s, err := dataseries.New[int64](table(b, nil), dataseries.Layout{Points: dataseries.MaxPoints}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Put(b.Ctx, &dataseries.Series[int64]{PartitionKey: "p", RowKey: "r", Points: make([]int64, dataseries.MaxPoints)}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Add(b.Ctx, "p", "r", 3, 5, &dataseries.AddOptions{OpID: "op-1"}); err != nil {
		t.Fatal(err)
	}
	resp, err := b.Raw.Client().GetEntity(b.Ctx, "p", "r", nil)
	if err != nil {
		t.Fatal(err)
	}
	n, err := codec.CountProperties(resp.Value)
	if err != nil {
		t.Fatal(err)
	}
	hist, _ := codec.StringProperties(resp.Value, repo.DefaultWriteIDProperty, dataseries.OpsProperty)
	if n > codec.MaxProperties || hist[0] == "" || hist[1] == "" {
		t.Fatalf("stored %d custom properties (limit %d); history %q, ops %q", n, codec.MaxProperties, hist[0], hist[1])
	}
}

// A table whose write history is kept in AppliedOps (dataseries.OpsProperty) would make
// each Add write AppliedOps twice, and the table's codec hides that property on reads, so
// an operation id would never be found again: New refuses the table, or an OpID counts
// once.
func TestOpIDCountsOnceWhateverTheTableTracksWritesIn(t *testing.T) {
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

// A table whose write history is kept in a point's own property (H03) would hide that
// point on reads: New refuses the table, or the point added to reads back.
func TestPointReadsBackWhateverTheTableTracksWritesIn(t *testing.T) {
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
