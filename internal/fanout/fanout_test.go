package fanout

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
)

// The first calls are held at a barrier until limit of them run at once (with a deadline,
// so a fan-out that never reaches its limit fails instead of hanging): the peak must then
// be exactly the limit, never above it, and every call must run.
func TestBoundAndAllCalls(t *testing.T) {
	const n, limit = 50, 4
	var running, peak, calls atomic.Int64
	full := make(chan struct{}) // closed once limit calls run at once
	var once sync.Once
	// limit calls that never run at once (a bound below limit) hang until go test
	// -timeout: a fixed deadline is one a loaded machine can miss.
	barrier := t.Context()
	err := Do(t.Context(), n, limit, func(ctx context.Context, i int) error {
		r := running.Add(1)
		defer running.Add(-1)
		for {
			p := peak.Load()
			if r <= p || peak.CompareAndSwap(p, r) {
				break
			}
		}
		if r >= limit {
			once.Do(func() { close(full) })
		}
		select {
		case <-full:
		case <-barrier.Done():
			return fmt.Errorf("call %d: %d calls never ran at once (peak %d)", i, limit, peak.Load())
		}
		calls.Add(1)
		return nil
	})
	if err != nil || calls.Load() != n {
		t.Fatalf("err %v, %d calls", err, calls.Load())
	}
	if p := peak.Load(); p != limit {
		t.Fatalf("peak concurrency %d, want %d", p, limit)
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

func TestEachRunsEveryCallAndJoinsTheErrors(t *testing.T) {
	const n, limit = 40, 3
	var running, peak, calls atomic.Int64
	errOdd := errors.New("odd")
	err := Each(t.Context(), n, limit, func(ctx context.Context, i int) error {
		r := running.Add(1)
		defer running.Add(-1)
		for {
			p := peak.Load()
			if r <= p || peak.CompareAndSwap(p, r) {
				break
			}
		}
		calls.Add(1)
		if ctx.Err() != nil {
			return fmt.Errorf("call %d ran with a cancelled context", i)
		}
		if i%2 == 1 {
			return fmt.Errorf("call %d: %w", i, errOdd)
		}
		return nil
	})
	if calls.Load() != n {
		t.Fatalf("%d calls of %d: an error stopped the others", calls.Load(), n)
	}
	if p := peak.Load(); p > limit {
		t.Fatalf("peak concurrency %d over the limit %d", p, limit)
	}
	if !errors.Is(err, errOdd) {
		t.Fatalf("err = %v, want the calls' errors", err)
	}
	joined, ok := err.(interface{ Unwrap() []error })
	if !ok || len(joined.Unwrap()) != n/2 {
		t.Fatalf("err = %v, want the %d errors joined", err, n/2)
	}
	if err := Each(t.Context(), n, limit, func(context.Context, int) error { return nil }); err != nil {
		t.Fatalf("no call failed, err = %v", err)
	}
}

func TestEachStopsStartingWhenTheContextEnds(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	var calls atomic.Int64
	err := Each(ctx, 100, 1, func(ctx context.Context, i int) error {
		if calls.Add(1) == 5 {
			cancel()
		}
		return nil
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if c := calls.Load(); c < 5 || c > 6 {
		t.Fatalf("%d calls started after the cancel at the fifth", c)
	}
}
