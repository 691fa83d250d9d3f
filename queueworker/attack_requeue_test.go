package queueworker

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

type bigItem struct {
	S string `json:"s"`
}

// A large job (its poison record would not fit in 64 KiB, so poisonText falls back to the
// original text as-is) that was snoozed once (the worker rewrote its envelope with
// "uncounted":1) and then failed MaxDequeueCount times. RequeuePoison puts the original
// text back with its "uncounted":1; on the fresh message (dequeue count 1) that counter
// contradicts the queue, so the worker poisons it as malformed without running it: the
// operator's requeue can never run the job again. A requeued message must start afresh.
func TestAttackRequeuedLargeSnoozedJobRunsAgain(t *testing.T) {
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
