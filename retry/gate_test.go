package retry

import (
	"context"
	"errors"
	"math"
	"testing"
	"time"

	"github.com/tablepatterns/tablepatterns/internal/errs"
)

// fakeClock is a clock the test moves by hand.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time           { return c.t }
func (c *fakeClock) add(d time.Duration)      { c.t = c.t.Add(d) }
func gateAt(t *testing.T, c *fakeClock) *Gate { g := mustGate(t, nil); g.now = c.now; return g }

func mustGate(t *testing.T, o *GateOptions) *Gate {
	t.Helper()
	g, err := NewGate(o)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func TestGateLimitsNothingUntilThrottled(t *testing.T) {
	c := &fakeClock{t: time.Unix(1e9, 0)}
	g := gateAt(t, c)
	for range 1000 {
		if d := g.reserve(); d != 0 {
			t.Fatalf("an unthrottled request waited %v", d)
		}
		g.Observe(false)
	}
	if g.Rate() != 0 {
		t.Fatalf("rate %v without a throttled answer", g.Rate())
	}
}

// Throttled after a steady 100 accepted/s, the gate limits the client to 70/s, spaces the
// requests by that rate, raises it on accepted answers, cuts at most once per interval, and
// lifts the limit once the service has been quiet.
func TestGateCutsSpacesRaisesAndLifts(t *testing.T) {
	c := &fakeClock{t: time.Unix(1e9, 0)}
	g := gateAt(t, c)
	for range 300 { // 3 s at 100/s, all accepted
		g.reserve()
		g.Observe(false)
		c.add(10 * time.Millisecond)
	}
	for range 60 { // more than a fifth of the last two seconds' answers are throttled
		g.Observe(true)
	}
	if r := g.Rate(); r < 69 || r > 71 {
		t.Fatalf("rate after the cut %v, want 70/s (0.7 x 100 accepted/s)", r)
	}
	g.Observe(true) // a second throttled answer within the interval does not cut again
	if r := g.Rate(); r < 69 {
		t.Fatalf("cut twice within a second: %v", r)
	}
	// Requests started at once are spaced by 1/70 s.
	var waits []time.Duration
	for range 3 {
		waits = append(waits, g.reserve())
	}
	step := time.Duration(float64(time.Second) / g.Rate())
	if waits[0] != 0 || waits[1] != step || waits[2] != 2*step {
		t.Fatalf("waits %v, want 0, %v, %v", waits, step, 2*step)
	}
	before := g.Rate()
	g.Observe(false)
	if g.Rate() <= before {
		t.Fatal("an accepted answer did not raise the rate")
	}
	c.add(11 * time.Second)
	if d := g.reserve(); d != 0 || g.Rate() != 0 {
		t.Fatalf("after a quiet period: wait %v, rate %v; want no limit", d, g.Rate())
	}
}

// Early in an episode, refusals come back before any accepted answer: the gate judges by
// what was sent, never limiting to zero.
func TestGateEarlyCutUsesTheSendRate(t *testing.T) {
	c := &fakeClock{t: time.Unix(1e9, 0)}
	g := gateAt(t, c)
	for range 50 {
		g.reserve()
	}
	c.add(500 * time.Millisecond)
	for range 5 {
		g.Observe(true)
	}
	if r := g.Rate(); r < 34.9 || r > 35.1 {
		t.Fatalf("rate %v, want 0.7 x 50 sent over at least a second", r)
	}
}

func TestGateWaitEndsWithTheContext(t *testing.T) {
	g := mustGate(t, nil)
	g.rate, g.lastCut = 0.5, time.Now()
	g.slot = time.Now().Add(time.Hour)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := g.Wait(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Wait with an ended context: %v", err)
	}
}

func TestGateOptionsValidated(t *testing.T) {
	inf := math.Inf(1)
	for _, o := range []GateOptions{{Cut: 1}, {Cut: -0.5}, {Cut: inf}, {Raise: 0.9}, {Raise: inf}, {Raise: -inf},
		{Threshold: 1}, {Threshold: -0.1}, {Threshold: inf}, {Quiet: -1}, {CutInterval: -1}} {
		if _, err := NewGate(&o); !errors.Is(err, errs.ErrInvalidInput) {
			t.Errorf("%+v: %v", o, err)
		}
	}
}

// Scattered throttled answers (the service moving a partition, a 7 % fault rate) are not a
// limit the client exceeds: the gate never cuts for them.
func TestGateIgnoresScatteredRefusals(t *testing.T) {
	c := &fakeClock{t: time.Unix(1e9, 0)}
	g := gateAt(t, c)
	for i := range 3000 {
		g.reserve()
		g.Observe(i%14 == 0)
		c.add(5 * time.Millisecond)
	}
	if g.Rate() != 0 {
		t.Fatalf("rate %v after 7 %% scattered refusals, want no limit", g.Rate())
	}
}
