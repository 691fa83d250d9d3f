package retry

import (
	"context"
	"sync"
	"testing"
	"time"
)

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
func TestAttackGateLiftsWhileStillThrottled(t *testing.T) {
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
func TestAttackGateCancelledWaitersHoldSlots(t *testing.T) {
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
func TestAttackGateScatteredFaults(t *testing.T) {
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
func TestAttackGateBurstThenSilence(t *testing.T) {
	c := &fakeClock{t: time.Unix(1_000_000, 0)}
	g := gateAt(t, c)
	throttleHard(t, g, c)
	c.add(11 * time.Second)
	if d := g.reserve(); d != 0 || g.Rate() != 0 {
		t.Errorf("after 11 s of silence the limit is still %v (wait %v)", g.Rate(), d)
	}
}

// Concurrency under -race: many goroutines with mixed answers and cancellations.
func TestAttackGateConcurrent(t *testing.T) {
	g := mustGate(t, &GateOptions{Quiet: 200 * time.Millisecond, CutInterval: 10 * time.Millisecond})
	var wg sync.WaitGroup
	deadline := time.Now().Add(1500 * time.Millisecond)
	for i := 0; i < 64; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			for n := 0; time.Now().Before(deadline); n++ {
				ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
				if g.Wait(ctx) == nil {
					g.Observe((i+n)%3 == 0)
				}
				cancel()
				_ = g.Rate()
			}
		}(i)
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("deadlock")
	}
}
