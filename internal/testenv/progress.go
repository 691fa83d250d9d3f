package testenv

import (
	"context"
	"fmt"
	"time"
)

// DefaultStall is how long UntilStalled lets a run go without progress before it ends it.
// It bounds a hang, not a slow machine: a run that keeps making progress keeps going, and
// the overall bound is `go test -timeout`.
const DefaultStall = 3 * time.Minute

// UntilStalled runs do with a context that ends only when progress has returned the same
// value for stall (DefaultStall when 0), or when ctx ends. It returns do's error, wrapped
// with how long nothing moved when the run was ended for want of progress.
//
// Tests wait this way for work whose length depends on the machine's load (draining a
// queue, a backfill): a fixed deadline that a busy machine can miss would fail a run that
// was still working. progress is polled a few times a second; it must be safe to call
// concurrently with do (a sum of a worker's atomic counters, for example).
func UntilStalled(ctx context.Context, stall time.Duration, progress func() int64, do func(context.Context) error) error {
	if stall <= 0 {
		stall = DefaultStall
	}
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- do(runCtx) }()

	poll := min(stall/20, 250*time.Millisecond)
	tick := time.NewTicker(poll)
	defer tick.Stop()
	last, moved := progress(), time.Now()
	for {
		select {
		case err := <-done:
			return err
		case <-tick.C:
			if p := progress(); p != last {
				last, moved = p, time.Now()
				continue
			}
			if idle := time.Since(moved); idle >= stall {
				cancel()
				err := <-done
				if err == nil {
					return nil // it finished as it was being ended
				}
				return fmt.Errorf("no progress for %v: %w", idle.Round(time.Second), err)
			}
		}
	}
}
