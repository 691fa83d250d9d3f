package queueworker

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/tablepatterns/tablepatterns/internal/faultproxy"
)

// TestTransientFaults injects about 20 % failures (503 ServerBusy and lost responses) into
// every message call, enqueues included. Every message must be handled at least once and
// end deleted; handler-side dedupe on Message.ID makes the effect exactly once.
func TestTransientFaults(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.proxy.SetSeed(42)
	messageCalls := faultproxy.Any(faultproxy.IsEnqueue, faultproxy.IsDequeue, faultproxy.IsDeleteMessage, faultproxy.IsUpdateMessage)
	b.proxy.AddRule(faultproxy.Rule{Name: "busy", Match: messageCalls, Probability: 0.1, Action: faultproxy.Respond(503, "ServerBusy")})
	b.proxy.AddRule(faultproxy.Rule{Name: "drop", Match: messageCalls, Probability: 0.1, Action: faultproxy.DropAfterForward()})

	const n = 40
	ctx := context.Background()
	ids := make([]string, n)
	for i := range n {
		ids[i] = "f-" + itoa(i)
		if _, err := Enqueue(ctx, b.client, "job", ids[i], item{N: i}, nil); err != nil {
			t.Fatalf("Enqueue %d: %v", i, err)
		}
	}

	var mu sync.Mutex
	deliveries := map[string]int{}
	effects := map[string]int{} // the side effect, applied once per id
	reg := NewRegistry()
	MustHandle(reg, "job", func(ctx context.Context, m *Message[item]) error {
		mu.Lock()
		defer mu.Unlock()
		deliveries[m.ID]++
		if effects[m.ID] == 0 { // dedupe: a duplicate delivery does nothing
			effects[m.ID]++
		}
		return nil
	})
	cfg := b.config(reg)
	cfg.VisibilityTimeout = 2 * time.Second // messages of a lost dequeue response come back soon
	cfg.MaxDequeueCount = 50
	cfg.Concurrency = 8
	w := b.worker(cfg)
	b.drain(w)

	if b.proxy.Fired("busy") == 0 || b.proxy.Fired("drop") == 0 {
		t.Fatalf("faults did not fire: busy %d, drop %d", b.proxy.Fired("busy"), b.proxy.Fired("drop"))
	}
	mu.Lock()
	defer mu.Unlock()
	for _, id := range ids {
		if deliveries[id] < 1 || effects[id] != 1 {
			t.Errorf("%s: %d deliveries, effect applied %d times", id, deliveries[id], effects[id])
		}
	}
	if len(effects) != n {
		t.Errorf("%d distinct ids handled, want %d", len(effects), n)
	}
	if c := b.count(b.direct); c != 0 {
		t.Errorf("%d messages left in the queue", c)
	}
	s := w.Stats()
	if s.Poisoned != 0 {
		t.Errorf("stats %+v", s)
	}
	t.Logf("faults: busy %d, drop %d; %d requests; stats %+v", b.proxy.Fired("busy"), b.proxy.Fired("drop"), b.proxy.Count(), s)
}

// TestSnoozeAndRetryDelay: snoozed deliveries do not count towards MaxDequeueCount, and a
// failed message waits RetryDelay before its next delivery.
func TestSnoozeAndRetryDelay(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var mu sync.Mutex
	seen := map[string][]time.Time{}
	var last *Message[item]
	reg := NewRegistry()
	MustHandle(reg, "job", func(ctx context.Context, m *Message[item]) error {
		mu.Lock()
		defer mu.Unlock()
		seen[m.ID] = append(seen[m.ID], time.Now())
		k := len(seen[m.ID])
		switch m.ID {
		case "snoozer":
			last = m
			if k <= 3 {
				return Snooze(0)
			}
		case "failer":
			if k == 1 {
				return errors.New("first try fails")
			}
		}
		return nil
	})
	cfg := b.config(reg)
	cfg.MaxDequeueCount = 2 // three snoozes would poison without the uncounted record
	cfg.RetryDelay = time.Second
	w := b.worker(cfg)
	b.enqueue("job", "x", 0)
	ctx := context.Background()
	for _, id := range []string{"snoozer", "failer"} {
		if _, err := Enqueue(ctx, b.client, "job", id, item{}, nil); err != nil {
			t.Fatal(err)
		}
	}
	b.drain(w)

	mu.Lock()
	defer mu.Unlock()
	if len(seen["snoozer"]) != 4 || last.Uncounted != 3 || last.DequeueCount != 4 {
		t.Errorf("snoozer: %d deliveries, last %+v", len(seen["snoozer"]), last)
	}
	if f := seen["failer"]; len(f) != 2 || f[1].Sub(f[0]) < 900*time.Millisecond {
		t.Errorf("failer deliveries %v: want 2, at least ~1 s apart", f)
	}
	if s := w.Stats(); s.Snoozed != 3 || s.Poisoned != 0 || s.Failed != 1 || s.Retried != 1 || s.Processed != 2 {
		t.Errorf("stats %+v", s)
	}
}

// TestLostLock: when the message's receipt goes stale (here: another consumer takes it after
// the lock expired), the worker neither deletes nor releases it.
func TestLostLock(t *testing.T) {
	t.Parallel()
	b := setup(t)
	// The first renewal is answered as the service does for a stale receipt.
	b.proxy.AddRule(faultproxy.Rule{Name: "stale", Match: faultproxy.IsUpdateMessage, Times: 1, Action: faultproxy.Respond(400, "PopReceiptMismatch")})
	var deliveries sync.Map
	reg := NewRegistry()
	MustHandle(reg, "job", func(ctx context.Context, m *Message[item]) error {
		deliveries.Store(m.DequeueCount, true)
		if m.DequeueCount == 1 {
			// The handler's work lasts until the first renewal has been answered "stale"
			// (a barrier, not a sleep): the worker then waits for that renewal to finish
			// before it settles, and finds the lock lost.
			// A renewal that never comes hangs the drain until go test -timeout.
			for b.proxy.Fired("stale") == 0 {
				select {
				case <-ctx.Done():
					return ctx.Err() // fails the test: not Processed
				case <-time.After(5 * time.Millisecond): // polling the proxy, not synchronisation
				}
			}
		}
		return nil
	})
	cfg := b.config(reg)
	cfg.VisibilityTimeout = 2 * time.Second
	w := b.worker(cfg)
	b.enqueue("job", "l", 1)
	b.drain(w)
	s := w.Stats()
	if s.Lost != 1 || s.Processed != 1 || b.proxy.Fired("stale") != 1 {
		t.Fatalf("stats %+v (stale fired %d): want the first delivery lost, the second processed", s, b.proxy.Fired("stale"))
	}
	if _, ok := deliveries.Load(int64(2)); !ok {
		t.Error("the message was not delivered again after its lock was lost")
	}
}
