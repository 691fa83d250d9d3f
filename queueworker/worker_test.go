package queueworker

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tablepatterns/tablepatterns/internal/faultproxy"
)

// TestRenewal runs a handler three times longer than the lock: renewals must keep the
// message from being delivered again, each with the pop receipt the previous one returned.
func TestRenewal(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var deliveries atomic.Int64
	reg := NewRegistry()
	MustHandle(reg, "slow", func(ctx context.Context, m *Message[item]) error {
		deliveries.Add(1)
		select { // the handler's work: 5 s
		case <-time.After(5 * time.Second):
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	})
	cfg := b.config(reg)
	cfg.VisibilityTimeout = 2 * time.Second
	cfg.Concurrency = 4 // free slots: a redelivery would be picked up at once
	w := b.worker(cfg)
	b.enqueue("slow", "s", 1)
	b.drain(w)

	if n := deliveries.Load(); n != 1 {
		t.Fatalf("delivered %d times, want 1", n)
	}
	s := w.Stats()
	if s.Renewed < 3 || s.Lost != 0 || s.Processed != 1 {
		t.Fatalf("stats %+v: want >= 3 renewals, none lost, 1 processed", s)
	}
	// Every update and the delete used a receipt no earlier request had used: the new one.
	var receipts []string
	for _, r := range b.proxy.Requests() {
		if r.Method != http.MethodPut && r.Method != http.MethodDelete || !strings.Contains(r.Path, "/messages/") {
			continue
		}
		q, err := url.ParseQuery(r.RawQuery)
		if err != nil {
			t.Fatal(err)
		}
		receipts = append(receipts, r.Method+" "+q.Get("popreceipt"))
	}
	if len(receipts) != int(s.Renewed)+1 || !strings.HasPrefix(receipts[len(receipts)-1], http.MethodDelete) {
		t.Fatalf("requests on the message: %v", receipts)
	}
	seen := map[string]bool{}
	for _, r := range receipts {
		rc := r[strings.IndexByte(r, ' ')+1:]
		if rc == "" || seen[rc] {
			t.Fatalf("pop receipt reused: %v", receipts)
		}
		seen[rc] = true
	}
}

// TestShutdownMidBatch stops the worker while some handlers have finished and others are
// stuck: finished messages are deleted, stuck ones are released unharmed, and a second
// worker handles exactly those.
func TestShutdownMidBatch(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var mu sync.Mutex
	deliveries := map[string]int{}
	succeeded := map[string]int{}
	var blocked atomic.Int64
	reg := NewRegistry()
	MustHandle(reg, "job", func(ctx context.Context, m *Message[item]) error {
		mu.Lock()
		deliveries[m.ID]++
		mu.Unlock()
		if m.Payload.N%2 == 1 { // odd ones never finish by themselves
			blocked.Add(1)
			<-ctx.Done()
			return ctx.Err()
		}
		mu.Lock()
		succeeded[m.ID]++
		mu.Unlock()
		return nil
	})
	cfg := b.config(reg)
	cfg.BatchSize, cfg.Concurrency = 8, 8
	cfg.ShutdownTimeout = 300 * time.Millisecond
	w := b.worker(cfg)
	ids := b.enqueue("job", "j", 8)

	if err := w.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	eventually(t, "4 handlers finished and 4 stuck", func() bool {
		return w.Stats().Processed == 4 && blocked.Load() == 4
	})
	if err := w.Stop(t.Context()); err != nil { // bounded by ShutdownTimeout, then go test -timeout
		t.Fatalf("Stop: %v", err)
	}
	select {
	case <-w.Stopped():
	default:
		t.Fatal("Stopped not closed after Stop")
	}
	s := w.Stats()
	if s.Processed != 4 || s.Interrupted != 4 || s.Failed != 0 || s.InFlight != 0 {
		t.Fatalf("stats after stop %+v", s)
	}
	// The stuck ones are back in the queue, visible at once, their delivery not counted.
	texts := b.peekAll(b.direct)
	if len(texts) != 4 {
		t.Fatalf("queue holds %d visible messages after stop, want 4", len(texts))
	}
	for _, text := range texts {
		env, _, err := decodeEnvelope(text)
		if err != nil || env.Uncounted != 1 {
			t.Fatalf("released message %q (%v): want uncounted 1", text, err)
		}
	}

	// A restarted worker (odd ones now succeed) finishes the job.
	reg2 := NewRegistry()
	MustHandle(reg2, "job", func(ctx context.Context, m *Message[item]) error {
		mu.Lock()
		defer mu.Unlock()
		deliveries[m.ID]++
		succeeded[m.ID]++
		if m.DequeueCount != 2 || m.Uncounted != 1 {
			t.Errorf("redelivery of %s: count %d, uncounted %d", m.ID, m.DequeueCount, m.Uncounted)
		}
		return nil
	})
	cfg.Registry = reg2
	b.drain(b.worker(cfg))

	mu.Lock()
	defer mu.Unlock()
	for i, id := range ids {
		want := 1 + i%2
		if deliveries[id] != want || succeeded[id] != 1 {
			t.Errorf("%s: %d deliveries (want %d), %d successes (want 1)", id, deliveries[id], want, succeeded[id])
		}
	}
}

// TestGracefulStop lets handlers that finish within ShutdownTimeout complete and delete.
func TestGracefulStop(t *testing.T) {
	t.Parallel()
	b := setup(t)
	release := make(chan struct{})
	var started, done atomic.Int64
	reg := NewRegistry()
	MustHandle(reg, "job", func(ctx context.Context, m *Message[item]) error {
		started.Add(1)
		select {
		case <-release:
			done.Add(1)
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	})
	cfg := b.config(reg)
	cfg.Concurrency = 4
	w := b.worker(cfg)
	b.enqueue("job", "g", 4)
	ctx, cancelRun := context.WithCancel(context.Background())
	runErr := make(chan error, 1)
	go func() { runErr <- w.Run(ctx) }()
	eventually(t, "4 handlers running", func() bool { return started.Load() == 4 })
	if err := w.Start(context.Background()); !errors.Is(err, ErrAlreadyStarted) {
		t.Errorf("second Start = %v, want ErrAlreadyStarted", err)
	}
	cancelRun() // Run begins a graceful shutdown
	eventually(t, "dequeuing stopped", func() bool {
		select {
		case <-w.Stopped():
			return false
		default:
		}
		return w.current() != nil && w.current().fetchCtx.Err() != nil
	})
	close(release)
	if err := <-runErr; err != nil {
		t.Fatalf("Run: %v", err)
	}
	if s := w.Stats(); s.Processed != 4 || s.Interrupted != 0 || done.Load() != 4 {
		t.Fatalf("stats %+v, %d done", s, done.Load())
	}
	if n := b.count(b.direct); n != 0 {
		t.Errorf("%d messages left", n)
	}
}

// TestConcurrencyBound never lets more than Concurrency handlers run at once.
func TestConcurrencyBound(t *testing.T) {
	t.Parallel()
	for _, c := range []int{1, 3} {
		t.Run("c="+itoa(c), func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			var cur, peak, arrived atomic.Int64
			gate := make(chan struct{})
			reg := NewRegistry()
			MustHandle(reg, "job", func(ctx context.Context, m *Message[item]) error {
				n := cur.Add(1)
				defer cur.Add(-1)
				for {
					p := peak.Load()
					if n <= p || peak.CompareAndSwap(p, n) {
						break
					}
				}
				// The first c handlers wait for each other (a barrier, not a sleep): c run
				// at once. The c-th makes one round trip to the queue before it opens the
				// gate, time enough for a handler beyond the bound to start and show.
				if i := arrived.Add(1); i <= int64(c) {
					if i == int64(c) {
						if _, err := b.direct.GetProperties(ctx, nil); err != nil {
							return err
						}
						close(gate)
					}
					select {
					case <-gate:
					case <-ctx.Done():
						return ctx.Err()
					}
				}
				return nil
			})
			cfg := b.config(reg)
			cfg.BatchSize, cfg.Concurrency = 8, c
			w := b.worker(cfg)
			b.enqueue("job", "c", 24)
			b.drain(w)
			if p := peak.Load(); p != int64(c) {
				t.Errorf("peak concurrency %d, want exactly %d", p, c)
			}
			if s := w.Stats(); s.Processed != 24 {
				t.Errorf("stats %+v", s)
			}
		})
	}
}

// TestPollingBackoff checks that an empty queue is polled with growing waits, that the
// request rate drops accordingly, and that a message resets the waits.
func TestPollingBackoff(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var mu sync.Mutex
	var waits []time.Duration
	handled := make(chan struct{}, 1)
	reg := NewRegistry()
	MustHandle(reg, "job", func(ctx context.Context, m *Message[item]) error {
		select {
		case handled <- struct{}{}:
		default:
		}
		return nil
	})
	cfg := b.config(reg)
	cfg.MinPollInterval, cfg.MaxPollInterval = 20*time.Millisecond, 320*time.Millisecond
	w := b.worker(cfg)
	w.onPollWait = func(d time.Duration) {
		mu.Lock()
		waits = append(waits, d)
		mu.Unlock()
	}
	nWaits := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(waits)
	}
	if err := w.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	eventually(t, "8 empty polls", func() bool { return nWaits() >= 8 })
	mu.Lock()
	first := append([]time.Duration(nil), waits[:8]...)
	mu.Unlock()
	// 20, 40, 80, 160, 320 ms (±20 %), then capped at 320 ms.
	nominal := []time.Duration{20, 40, 80, 160, 320, 320, 320, 320}
	for i, d := range first {
		n := nominal[i] * time.Millisecond
		if d < n*8/10 || d > min(n*12/10, cfg.MaxPollInterval) {
			t.Errorf("wait %d = %v, want %v ±20%% (capped at %v)", i, d, n, cfg.MaxPollInterval)
		}
	}
	// At the cap, dequeues come at most every 256 ms (320 ms - 20 %): the time the next 5
	// take spans at least 4 whole waits. A loaded machine only makes that time longer, so
	// the bound is one load cannot cross; polling at MinPollInterval would take ~100 ms.
	gets := func() int {
		return b.proxy.CountMatching(func(r faultproxy.RequestInfo) bool { return r.Method == http.MethodGet })
	}
	start := gets()
	eventually(t, "the first dequeue at the cap", func() bool { return gets() > start })
	t0 := time.Now()
	eventually(t, "4 more dequeues at the cap", func() bool { return gets() >= start+5 })
	if d := time.Since(t0); d < 4*256*time.Millisecond {
		t.Errorf("4 dequeues in %v at a 320 ms cap, want at least %v", d, 4*256*time.Millisecond)
	}

	// A message resets the backoff: the next wait is MinPollInterval again.
	mark := nWaits()
	b.enqueue("job", "p", 1)
	<-handled // a message never handled hangs until go test -timeout
	eventually(t, "a wait after the message", func() bool { return nWaits() > mark+1 })
	mu.Lock()
	defer mu.Unlock()
	// waits[mark] may be the one already running when the message arrived; a reset wait
	// follows the first successful dequeue.
	found := false
	for _, d := range waits[mark:] {
		if d <= cfg.MinPollInterval*12/10 {
			found = true
			break
		}
	}
	if !found {
		t.Errorf("no reset after a message: waits after it %v", waits[mark:])
	}
}
