package testenv

import (
	"testing"
	"time"
)

// Scale gives the small size unless TABLEPATTERNS_SOAK is exactly 1, for counts and
// durations alike.
func TestScaleIsSmallUnlessSoak(t *testing.T) {
	for _, c := range []struct {
		env  string
		n    int
		d    time.Duration
		soak bool
	}{{"", 4, time.Second, false}, {"0", 4, time.Second, false}, {"true", 4, time.Second, false}, {"1", 20, time.Minute, true}} {
		t.Setenv(EnvSoak, c.env)
		if got := Scale(4, 20); got != c.n {
			t.Errorf("%s=%q: Scale(4, 20) = %d, want %d", EnvSoak, c.env, got, c.n)
		}
		if got := Scale(time.Second, time.Minute); got != c.d {
			t.Errorf("%s=%q: Scale(1s, 1m) = %v, want %v", EnvSoak, c.env, got, c.d)
		}
		if Soak() != c.soak {
			t.Errorf("%s=%q: Soak() = %v", EnvSoak, c.env, Soak())
		}
	}
}
