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
	b.drain(w)
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
	b.drain(w)
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
	b.drain(w)
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
	<-done // a RequeuePoison that chases the re-poisoned messages forever hangs until go test -timeout
	if rerr != nil || moved > n || moved == 0 {
		t.Fatalf("RequeuePoison = %d, %v; want 1 to %d", moved, rerr, n)
	}
	if err := w.Stop(ctx); err != nil {
		t.Fatal(err)
	}
}

// Drain returns soon after a long job ends, not a grown poll interval later: the end of a
// handler wakes the polling and resets its backoff. The job ends just as a poll wait of
// 5 s or more begins; Drain must return before that wait would have run out, which only
// the handler's end can make it do. Load slows the worker but not its timer, so the
// assertion is on causality (woken, not timed out), not on a fixed gap.
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
	cfg.MinPollInterval, cfg.MaxPollInterval = 50*time.Millisecond, time.Hour
	w := b.worker(cfg)
	type wait struct {
		d  time.Duration
		at time.Time
	}
	grown := make(chan wait, 1)
	w.onPollWait = func(d time.Duration) {
		if d >= 5*time.Second {
			select {
			case grown <- wait{d, time.Now()}:
			default:
			}
		}
	}
	if _, err := Enqueue(context.Background(), b.client, "job", "long", item{N: 1}, nil); err != nil {
		t.Fatal(err)
	}
	drained := make(chan error, 1)
	go func() { drained <- w.Drain(t.Context()) }()
	<-started
	// The empty-queue polling grows while the job runs (50 ms doubling: about 6 s).
	pending := <-grown
	close(release)
	if err := <-drained; err != nil {
		t.Fatal(err)
	}
	if d := time.Since(pending.at); d >= pending.d {
		t.Fatalf("Drain returned %v into a poll wait of %v: the wait ran out; the job's end did not wake the polling", d, pending.d)
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
	b.drain(w)
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
	b.drain(w)
	if runs.Load() == before {
		pms, _ := PeekPoison(ctx, w.PoisonQueue(), 32)
		var why string
		if len(pms) > 0 {
			why = pms[0].Error
		}
		t.Fatalf("the requeued job never ran: poisoned again at once (%d in poison; error %.200q)", len(pms), why)
	}
}
