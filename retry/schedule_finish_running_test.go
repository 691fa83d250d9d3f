package retry

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
)

// finishRunning runs Schedule with FinishRunning over three partitions, two tasks at
// once: task 0 waits until released or cancelled, task 1 fails, task 2 must never start.
type finishRunning struct {
	mu        sync.Mutex
	started   []int
	cancelled bool
	release   chan struct{}
	done      chan error
}

var errTask1 = errors.New("task 1 failed")

func runFinishRunning(ctx context.Context) *finishRunning {
	f := &finishRunning{release: make(chan struct{}), done: make(chan error, 1)}
	go func() {
		f.done <- Schedule(ctx, []string{"a", "b", "c"}, &ScheduleOptions{Concurrency: 2, FinishRunning: true}, func(ctx context.Context, i int) error {
			f.mu.Lock()
			f.started = append(f.started, i)
			f.mu.Unlock()
			switch i {
			case 0:
				select {
				case <-f.release:
					return nil
				case <-ctx.Done():
					f.mu.Lock()
					f.cancelled = true
					f.mu.Unlock()
					return ctx.Err()
				}
			case 1:
				return errTask1
			}
			return nil
		})
	}()
	return f
}

// check fails t unless exactly tasks 0 and 1 started and task 0 was cancelled as want says.
func (f *finishRunning) check(t *testing.T, when string, cancelled bool) {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	started := slices.Sorted(slices.Values(f.started))
	if !slices.Equal(started, []int{0, 1}) || f.cancelled != cancelled {
		t.Fatalf("%s: tasks %v started, task 0 cancelled %v; want [0 1], cancelled %v", when, started, f.cancelled, cancelled)
	}
}

// With FinishRunning the first error starts no new task and leaves the running one its
// context: task 0 is still waiting, uncancelled, once every goroutine has settled after
// task 1's failure; released, it ends, and Schedule returns task 1's error.
func TestScheduleFinishRunningLetsRunningTasksEnd(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := runFinishRunning(t.Context())
		synctest.Wait()
		f.check(t, "after task 1's failure", false)
		close(f.release)
		if err := <-f.done; !errors.Is(err, errTask1) {
			t.Fatalf("Schedule returned %v, want task 1's error", err)
		}
		f.check(t, "at the end", false)
	})
}

// The caller's context still ends a running task under FinishRunning, and Schedule still
// returns the first task's error.
func TestScheduleFinishRunningStillEndsWithCtx(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		f := runFinishRunning(ctx)
		synctest.Wait()
		cancel()
		if err := <-f.done; !errors.Is(err, errTask1) {
			t.Fatalf("Schedule returned %v, want task 1's error", err)
		}
		f.check(t, "at the end", true)
	})
}
