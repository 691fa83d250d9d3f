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
