package dataseries_test

import (
	"errors"
	"testing"

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
