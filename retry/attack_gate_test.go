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

// "Early in an episode refusals come back before the accepted answers: judge by what was
// sent so far". An episode of a long-lived client starts when throttling starts, not when
// the client sent its first request an hour ago: the same burst must give the same limit.
func TestAttackGateEpisodeStartsAtClientBirth(t *testing.T) {
	burst := func(g *Gate, c *fakeClock) float64 {
		for i := 0; i < 50; i++ { // 50 concurrent requests at once
			g.reserve()
		}
		c.add(100 * time.Millisecond)
		for i := 0; i < 50; i++ { // all refused: a partition moved, or a hot spot
			g.Observe(true)
		}
		return g.Rate()
	}
	c1 := &fakeClock{t: time.Unix(1_000_000, 0)}
	fresh := burst(gateAt(t, c1), c1)

	c2 := &fakeClock{t: time.Unix(1_000_000, 0)}
	old := gateAt(t, c2)
	old.reserve()
	old.Observe(false) // one request an hour ago, accepted
	c2.add(time.Hour)
	aged := burst(old, c2)
	t.Logf("limit after the burst: fresh client %.1f/s, client idle for an hour %.1f/s", fresh, aged)
	if aged < fresh/2 {
		t.Errorf("the same burst limits a long-lived client to %.1f/s but a new one to %.1f/s: the episode's start is the client's first request", aged, fresh)
	}
}

// "lifts it after Quiet": requests already queued when the limit lifts keep the slots they
// reserved under the limit, so a client with many operations in flight stays slow long
// after the lift.
func TestAttackGateQueuedRequestsOutliveTheLift(t *testing.T) {
	g := mustGate(t, &GateOptions{Quiet: 500 * time.Millisecond})
	for i := 0; i < 10; i++ {
		g.reserve()
		g.Observe(true)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	late := 0
	for i := 0; i < 30; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
			defer cancel()
			if g.Wait(ctx) != nil {
				mu.Lock()
				late++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	t.Logf("rate now %v", g.Rate())
	if late > 0 {
		t.Errorf("%d of 30 requests still waiting 3 s after a limit that lifts after 0.5 s", late)
	}
}

// One hot partition among many: 30 % of a client's traffic goes to a partition the service
// throttles (every answer 503), 70 % to cold partitions that accept everything. The Gate
// is per client, so the cold partitions are throttled too.
func TestAttackGateHotPartitionSlowsColdOnes(t *testing.T) {
	c := &fakeClock{t: time.Unix(1_000_000, 0)}
	g := gateAt(t, c)
	cold := 0
	start := c.t
	for i := 0; c.t.Sub(start) < 10*time.Second; i++ {
		d := g.reserve()
		if d < time.Millisecond {
			d = time.Millisecond // the client offers 1000 req/s
		}
		c.add(d)
		hot := i%10 < 3
		g.Observe(hot)
		if !hot {
			cold++
		}
	}
	t.Logf("cold-partition requests in 10 s: %d (unthrottled: ~7000); limit %.0f/s", cold, g.Rate())
	if cold < 3500 {
		t.Errorf("one throttled partition halved the client's traffic to healthy partitions: %d of ~7000", cold)
	}
}
