package fanout

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"
)

func TestBoundAndAllCalls(t *testing.T) {
	var running, peak, calls atomic.Int64
	err := Do(t.Context(), 50, 4, func(ctx context.Context, i int) error {
		n := running.Add(1)
		for {
			p := peak.Load()
			if n <= p || peak.CompareAndSwap(p, n) {
				break
			}
		}
		time.Sleep(time.Millisecond) // hold the slot so that calls overlap
		running.Add(-1)
		calls.Add(1)
		return nil
	})
	if err != nil || calls.Load() != 50 {
		t.Fatalf("err %v, %d calls", err, calls.Load())
	}
	if p := peak.Load(); p > 4 || p < 2 {
		t.Fatalf("peak concurrency %d, want 2..4", p)
	}
}

func TestFirstErrorCancelsTheRest(t *testing.T) {
	boom := errors.New("boom")
	var started atomic.Int64
	err := Do(t.Context(), 100, 2, func(ctx context.Context, i int) error {
		started.Add(1)
		if i == 1 {
			return boom
		}
		<-ctx.Done() // call 0 holds its slot until the failure of call 1 cancels it
		return ctx.Err()
	})
	if !errors.Is(err, boom) {
		t.Fatalf("err %v, want boom", err)
	}
	if n := started.Load(); n > 10 {
		t.Fatalf("%d calls started after the failure should have stopped them", n)
	}
}

func TestParentCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	calls := 0
	err := Do(ctx, 10, 2, func(context.Context, int) error { calls++; return nil })
	if !errors.Is(err, context.Canceled) || calls != 0 {
		t.Fatalf("err %v, %d calls", err, calls)
	}
}
