package testenv_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tablepatterns/tablepatterns/internal/testenv"
)

// A run that keeps moving is never ended, however much longer than the stall bound it takes.
func TestUntilStalledWaitsWhileProgressing(t *testing.T) {
	t.Parallel()
	const stall = 100 * time.Millisecond
	var n atomic.Int64
	start := time.Now()
	err := testenv.UntilStalled(t.Context(), stall, n.Load, func(ctx context.Context) error {
		tick := time.NewTicker(stall / 10)
		defer tick.Stop()
		for time.Since(start) < 8*stall { // the work itself takes time: it is not a wait
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-tick.C:
				n.Add(1)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("a progressing run was ended: %v (after %v, progress %d)", err, time.Since(start), n.Load())
	}
}

// A run that stops moving is ended, and the error says so and keeps the run's own error.
func TestUntilStalledEndsARunThatStopsMoving(t *testing.T) {
	t.Parallel()
	var n atomic.Int64
	err := testenv.UntilStalled(t.Context(), 50*time.Millisecond, n.Load, func(ctx context.Context) error {
		n.Add(3)
		<-ctx.Done()
		return ctx.Err()
	})
	if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "no progress") {
		t.Fatalf("a stalled run returned %v, want context.Canceled after no progress", err)
	}
}

// The run's own result comes back as it is.
func TestUntilStalledReturnsTheRunsResult(t *testing.T) {
	t.Parallel()
	want := errors.New("handler failed")
	err := testenv.UntilStalled(t.Context(), 0, func() int64 { return 0 }, func(context.Context) error { return want })
	if err != want {
		t.Fatalf("got %v, want the run's own error", err)
	}
}
