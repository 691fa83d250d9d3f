package queueworker

import (
	"context"
	"encoding/base64"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// A forged "uncounted" in a raw JSON envelope must not make a message
// immortal. Counters that contradict the queue's dequeue count make it malformed:
// poisoned at its first delivery, the handler never runs.
func TestForgedUncountedIsPoisoned(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	var runs atomic.Int64
	reg := NewRegistry()
	MustHandle(reg, "job", func(ctx context.Context, m *Message[item]) error {
		runs.Add(1)
		return errors.New("always fails")
	})
	w := b.worker(b.config(reg))
	for _, text := range []string{
		`{"kind":"job","id":"raw","payload":{"n":1},"uncounted":1000000}`,
		base64.StdEncoding.EncodeToString([]byte(`{"kind":"job","id":"b64","payload":{"n":2},"uncounted":1}`)),
		`{"kind":"job","id":"negative","payload":{"n":3},"uncounted":-5}`,
	} {
		if _, err := b.direct.EnqueueMessage(ctx, text, nil); err != nil {
			t.Fatal(err)
		}
	}
	b.drain(w, 60*time.Second)
	if n := runs.Load(); n != 0 {
		t.Fatalf("the handler ran %d times for forged envelopes", n)
	}
	pms, err := PeekPoison(ctx, w.PoisonQueue(), 32)
	if err != nil || len(pms) != 3 {
		t.Fatalf("poison queue: %d messages, %v; want 3", len(pms), err)
	}
	for _, pm := range pms {
		if !strings.Contains(pm.Error, "contradict") || pm.OriginalDequeueCount != 1 {
			t.Fatalf("poison record %+v", pm)
		}
	}
}

// A legitimate uncounted (a snooze) is below the dequeue count and still works: the
// worker's own rewrite is never taken for a forgery.
func TestSnoozedEnvelopeIsNotMalformed(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var runs atomic.Int64
	reg := NewRegistry()
	MustHandle(reg, "job", func(ctx context.Context, m *Message[item]) error {
		if runs.Add(1) <= 3 {
			return Snooze(0)
		}
		return nil
	})
	cfg := b.config(reg)
	cfg.MaxDequeueCount = 1
	w := b.worker(cfg)
	if _, err := Enqueue(context.Background(), b.client, "job", "snoozer", item{N: 1}, nil); err != nil {
		t.Fatal(err)
	}
	b.drain(w, 60*time.Second)
	if s := w.Stats(); runs.Load() != 4 || s.Processed != 1 || s.Poisoned != 0 {
		t.Fatalf("runs %d, stats %+v", runs.Load(), s)
	}
}

// RequeuePoison handles at most the messages present when it started,
// even while a worker poisons every requeued message again at once.
func TestRequeuePoisonEndsWhileAWorkerRuns(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	reg := NewRegistry()
	MustHandle(reg, "job", func(ctx context.Context, m *Message[item]) error {
		return Cancel(errors.New("never works"))
	})
	w := b.worker(b.config(reg))
	const n = 40
	b.enqueue("job", "c", n)
	b.drain(w, 60*time.Second)
	if got := b.count(w.PoisonQueue()); got != n {
		t.Fatalf("poison queue holds %d, want %d", got, n)
	}
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	var moved int
	var rerr error
	go func() {
		defer close(done)
		moved, rerr = RequeuePoison(ctx, w.PoisonQueue(), b.client, 0)
	}()
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		t.Fatal("RequeuePoison did not end while a worker re-poisons its messages")
	}
	if rerr != nil || moved > n || moved == 0 {
		t.Fatalf("RequeuePoison = %d, %v; want 1 to %d", moved, rerr, n)
	}
	if err := w.Stop(ctx); err != nil {
		t.Fatal(err)
	}
}

// Drain returns soon after a long job ends, not a grown poll interval
// later: the end of a handler wakes the polling and resets its backoff.
func TestDrainEndsPromptlyAfterALongJob(t *testing.T) {
	t.Parallel()
	b := setup(t)
	release := make(chan struct{})
	started := make(chan struct{})
	reg := NewRegistry()
	MustHandle(reg, "job", func(ctx context.Context, m *Message[item]) error {
		close(started)
		<-release
		return nil
	})
	cfg := b.config(reg)
	cfg.MinPollInterval, cfg.MaxPollInterval = 50*time.Millisecond, time.Minute
	w := b.worker(cfg)
	var waits []time.Duration
	var waitsMu = make(chan struct{}, 1)
	waitsMu <- struct{}{}
	w.onPollWait = func(d time.Duration) { <-waitsMu; waits = append(waits, d); waitsMu <- struct{}{} }
	if _, err := Enqueue(context.Background(), b.client, "job", "long", item{N: 1}, nil); err != nil {
		t.Fatal(err)
	}
	drained := make(chan error, 1)
	go func() { drained <- w.Drain(context.Background()) }()
	<-started
	// Let the empty-queue polling grow while the job runs (poll until it passed 3 s).
	eventually(t, 60*time.Second, "the poll interval to grow", func() bool {
		<-waitsMu
		defer func() { waitsMu <- struct{}{} }()
		return len(waits) > 0 && waits[len(waits)-1] >= 3*time.Second
	})
	ended := time.Now()
	close(release)
	select {
	case err := <-drained:
		if err != nil {
			t.Fatal(err)
		}
		if d := time.Since(ended); d > 2*time.Second {
			t.Fatalf("Drain returned %v after the job ended", d)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("Drain did not return")
	}
}

type bigItem struct {
	S string `json:"s"`
}

// A large job (its poison record would not fit in 64 KiB, so poisonText falls back to the
// original text as-is) that was snoozed once (the worker rewrote its envelope with
// "uncounted":1) and then failed MaxDequeueCount times. Were RequeuePoison to put the
// original text back with its "uncounted":1, on the fresh message (dequeue count 1) that
// counter would contradict the queue and the worker would poison it as malformed without
// running it. A requeued message starts afresh, so the operator's requeue runs the job.
func TestRequeuedLargeSnoozedJobRunsAgain(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	var runs atomic.Int64
	var fixed atomic.Bool
	reg := NewRegistry()
	MustHandle(reg, "big", func(ctx context.Context, m *Message[bigItem]) error {
		n := runs.Add(1)
		switch {
		case fixed.Load():
			return nil
		case n == 1:
			return Snooze(0)
		}
		return errors.New(strings.Repeat("e", 2000)) // a long error: the record is larger than the original
	})
	cfg := b.config(reg)
	cfg.MaxDequeueCount = 2
	w := b.worker(cfg)
	if _, err := Enqueue(ctx, b.client, "big", "big-1", bigItem{S: strings.Repeat("x", 47000)}, nil); err != nil {
		t.Fatal(err)
	}
	b.drain(w, 60*time.Second)
	pms, err := PeekPoison(ctx, w.PoisonQueue(), 32)
	if err != nil || len(pms) != 1 {
		t.Fatalf("poison: %d %v", len(pms), err)
	}
	t.Logf("poisoned after %d runs; record kept: %v; original has uncounted: %v", runs.Load(), pms[0].Error != "", strings.Contains(pms[0].Original, "uncounted") || !strings.HasPrefix(pms[0].Original, "{"))
	// The operator fixes the cause and requeues.
	fixed.Store(true)
	before := runs.Load()
	if n, err := RequeuePoison(ctx, w.PoisonQueue(), b.client, 0); err != nil || n != 1 {
		t.Fatalf("requeue: %d %v", n, err)
	}
	b.drain(w, 60*time.Second)
	if runs.Load() == before {
		pms, _ := PeekPoison(ctx, w.PoisonQueue(), 32)
		var why string
		if len(pms) > 0 {
			why = pms[0].Error
		}
		t.Fatalf("the requeued job never ran: poisoned again at once (%d in poison; error %.200q)", len(pms), why)
	}
}
