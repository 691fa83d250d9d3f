package retry

import (
	"context"
	"errors"
	"math"
	"testing"
	"time"

	"sync"
	"sync/atomic"

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

// throttleHard drives g (on clock c) into a limit while every answer is 503.
func throttleHard(t *testing.T, g *Gate, c *fakeClock) {
	t.Helper()
	for i := 0; i < 10; i++ {
		g.reserve()
		g.Observe(true)
	}
	if g.Rate() == 0 {
		t.Fatal("no limit after 10 refusals out of 10")
	}
}

// GateOptions.Quiet: "how long without a throttled answer lifts the limit". An account that
// refuses every request for a minute must keep the client limited for the whole minute.
func TestGateStaysLimitedWhileEveryAnswerIsThrottled(t *testing.T) {
	c := &fakeClock{t: time.Unix(1_000_000, 0)}
	g := gateAt(t, c)
	throttleHard(t, g, c)
	// The service keeps refusing everything for 60 s; the client sends as fast as the Gate lets it.
	var lifted time.Duration
	start := c.t
	for c.t.Sub(start) < 60*time.Second {
		d := g.reserve()
		if g.Rate() == 0 && lifted == 0 {
			lifted = c.t.Sub(start)
		}
		if d <= 0 {
			d = 10 * time.Millisecond // unlimited: the client sends at full speed
		}
		c.add(d)
		g.Observe(true) // still throttled
	}
	if lifted != 0 {
		t.Errorf("limit lifted after %v although every answer of the last %v was 503 (Quiet promises a lift only after 10 s WITHOUT a throttled answer)", lifted, lifted)
	}
}

// "never blocks a request past its context"/"never starves": a request whose context ended
// while it waited must not keep its slot, or live requests wait for the dead ones.
func TestGateCancelledWaitersGiveBackTheirSlots(t *testing.T) {
	g := mustGate(t, nil)
	for i := 0; i < 10; i++ { // every answer refused: limit ~1 req/s
		g.reserve()
		g.Observe(true)
	}
	if r := g.Rate(); r == 0 || r > 10 {
		t.Fatalf("rate %v", r)
	}
	var wg sync.WaitGroup
	for i := 0; i < 30; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
			defer cancel()
			_ = g.Wait(ctx) // gives up: nothing was sent
		}()
	}
	wg.Wait()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Second)
	defer cancel()
	t0 := time.Now()
	err := g.Wait(ctx)
	t.Logf("rate %.2f/s, live request waited %v, err %v", g.Rate(), time.Since(t0), err)
	if err != nil {
		t.Errorf("a live request at a limit of %.1f/s with nothing sent for 1 s was starved by 30 cancelled waiters: %v", g.Rate(), err)
	}
}

// Scattered faults: 10 % random 503 at a steady rate never limit the client.
func TestGateIgnoresTenPercentScatteredRefusalsAtASteadyRate(t *testing.T) {
	c := &fakeClock{t: time.Unix(1_000_000, 0)}
	g := gateAt(t, c)
	for i := 0; i < 20000; i++ {
		g.reserve()
		c.add(5 * time.Millisecond)
		g.Observe(i%10 == 3)
		if g.Rate() != 0 {
			t.Fatalf("limited at answer %d by 10%% scattered 503", i)
		}
	}
}

// Scattered faults bunched at the start of an episode: a quiet client (1 request/s) that
// meets five 503 in a row after a failover is limited; does it recover at once?
func TestGateLiftsAfterQuietFollowingABurstOfRefusals(t *testing.T) {
	c := &fakeClock{t: time.Unix(1_000_000, 0)}
	g := gateAt(t, c)
	throttleHard(t, g, c)
	c.add(11 * time.Second)
	if d := g.reserve(); d != 0 || g.Rate() != 0 {
		t.Errorf("after 11 s of silence the limit is still %v (wait %v)", g.Rate(), d)
	}
}

// Concurrency under -race: many goroutines with mixed answers and cancellations. Each
// goroutine makes a fixed number of calls, not calls for a time window, so a busy machine
// makes the test slower, never different. A call waits 50 ms at most: a deadlock is no call
// returning for a minute, however slowly the machine runs.
func TestGateConcurrentWaitersAndCancellationsNeverDeadlock(t *testing.T) {
	g := mustGate(t, &GateOptions{Quiet: 200 * time.Millisecond, CutInterval: 10 * time.Millisecond})
	const goroutines, calls = 64, 30
	var wg sync.WaitGroup
	var returned, admitted atomic.Int64
	for i := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := range calls {
				ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
				if g.Wait(ctx) == nil {
					admitted.Add(1)
					g.Observe((i+n)%3 == 0)
				}
				cancel()
				_ = g.Rate()
				returned.Add(1)
			}
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	last, moved := returned.Load(), time.Now()
	for {
		select {
		case <-done:
			if n := returned.Load(); n != goroutines*calls || admitted.Load() == 0 {
				t.Fatalf("%d of %d calls returned, %d admitted", n, goroutines*calls, admitted.Load())
			}
			return
		case <-tick.C:
			if n := returned.Load(); n != last {
				last, moved = n, time.Now()
			} else if idle := time.Since(moved); idle > time.Minute {
				t.Fatalf("deadlock: no call returned for %v; %d of %d returned", idle.Round(time.Second), n, goroutines*calls)
			}
		}
	}
}

// NaN is not a fraction or a factor: NewGate must refuse it as it refuses 0 < Cut < 1
// violations. Accepted, a NaN Cut makes the limit NaN once the service throttles: the Gate
// then limits nothing (or never lifts), whatever the throttling.
func TestGateRefusesNaNOptions(t *testing.T) {
	t.Parallel()
	nan := math.NaN()
	for name, o := range map[string]GateOptions{"Cut": {Cut: nan}, "Raise": {Raise: nan}, "Threshold": {Threshold: nan}} {
		g, err := NewGate(&o)
		if err != nil {
			continue
		}
		c := &fakeClock{t: time.Unix(1_000_000, 0)}
		g.now = c.now
		var waits time.Duration
		for range 50 {
			waits += max(g.reserve(), 0)
			g.Observe(true)
			c.add(10 * time.Millisecond)
		}
		t.Errorf("NewGate accepted %s NaN; after 50 throttled answers: rate %v, total wait %v", name, g.Rate(), waits)
	}
}
