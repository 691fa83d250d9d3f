package dataseries_test

import (
	"math"
	"testing"

	"github.com/tablepatterns/tablepatterns/internal/faultproxy"
	"github.com/tablepatterns/tablepatterns/patterns/dataseries"
)

// Whole doubles (Azurite stores them as Int32), -0 and NaN through Add with a lost response.
func TestAttackFloatSeriesWholeDoublesLostResponse(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	s, err := dataseries.New[float64](table(b, nil), dataseries.Layout{Points: 3}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i, d := range []float64{2, 3, math.Copysign(0, -1), 1e300} {
		b.Proxy().AddRule(faultproxy.Rule{Match: faultproxy.IsEntityWrite, Times: 1, Action: faultproxy.DropAfterForward()})
		if _, err := s.Add(b.Ctx, "p", "r", 0, d, nil); err != nil {
			t.Fatalf("add %d (%v): %v", i, d, err)
		}
	}
	got, err := s.Get(b.Ctx, "p", "r")
	if err != nil {
		t.Fatal(err)
	}
	if got.Points[0] != 5+1e300 {
		t.Fatalf("P0 = %v, want %v", got.Points[0], 5+1e300)
	}
}
