package maintain

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
)

// calls records which items' calls ran and how they ended.
type calls struct {
	mu        sync.Mutex
	started   []int
	cancelled []int
	finished  []int
}

func (c *calls) add(list *[]int, i int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	*list = append(*list, i)
}

func (c *calls) sorted(list *[]int) []int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Sorted(slices.Values(*list))
}

func onePartition(int) string { return "p" }

func itemError(i int) error { return fmt.Errorf("item %d failed", i) }

// Without StopAtFailure every call runs, whatever the others return, and the failures
// come back joined.
func TestEachRunsEveryCallAndJoinsTheErrors(t *testing.T) {
	var c calls
	err := Each(t.Context(), []int{0, 1, 2, 3, 4, 5}, onePartition, EachOptions{Concurrency: 2}, func(_ context.Context, i int) error {
		c.add(&c.started, i)
		if i == 1 || i == 3 {
			return itemError(i)
		}
		return nil
	})
	if got := c.sorted(&c.started); !slices.Equal(got, []int{0, 1, 2, 3, 4, 5}) {
		t.Fatalf("calls %v ran, want every one", got)
	}
	if err == nil || err.Error() != itemError(1).Error()+"\n"+itemError(3).Error() {
		t.Fatalf("Each returned %v, want items 1's and 3's errors joined", err)
	}
}

// With StopAtFailure the first failure starts no new call and cancels none of the running
// ones: items 0 and 2 are held when item 1 fails; once every goroutine has settled,
// Stopped has run, nothing else started and neither held call is cancelled. Released,
// item 0 succeeds and item 2 fails, and Each returns both failures.
func TestEachStopAtFailureStartsNoNewCallAndLetsTheRunningFinish(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var c calls
		release := make(chan struct{})
		holding := make(chan struct{}, 2) // items 0 and 2 are held before item 1 fails
		var stops int
		done := make(chan error, 1)
		go func() {
			done <- Each(t.Context(), []int{0, 1, 2, 3, 4}, func(i int) string { return fmt.Sprint("p", i) },
				EachOptions{Concurrency: 3, StopAtFailure: true, Stopped: func() { stops++ }},
				func(ctx context.Context, i int) error {
					c.add(&c.started, i)
					switch i {
					case 1:
						<-holding
						<-holding
						return itemError(1)
					case 0, 2:
						holding <- struct{}{}
						select {
						case <-release:
						case <-ctx.Done():
							c.add(&c.cancelled, i)
							return ctx.Err()
						}
					}
					c.add(&c.finished, i)
					if i == 2 {
						return itemError(2)
					}
					return nil
				})
		}()
		synctest.Wait()
		if got, cancelled := c.sorted(&c.started), c.sorted(&c.cancelled); !slices.Equal(got, []int{0, 1, 2}) || len(cancelled) != 0 || stops != 1 {
			t.Fatalf("after item 1's failure: calls %v started, %v cancelled, Stopped ran %d times; want [0 1 2], none, once", got, cancelled, stops)
		}
		close(release)
		err := <-done
		if got := c.sorted(&c.finished); !slices.Equal(got, []int{0, 2}) {
			t.Fatalf("calls %v finished, want the running [0 2]", got)
		}
		if got := c.sorted(&c.started); !slices.Equal(got, []int{0, 1, 2}) {
			t.Fatalf("calls %v started, want none after the failure", got)
		}
		if err == nil || err.Error() != itemError(1).Error()+"\n"+itemError(2).Error() || errors.Is(err, errStopped) {
			t.Fatalf("Each returned %v, want items 1's and 2's errors joined", err)
		}
	})
}

// ctx's end cancels the running calls and starts no new one, with and without
// StopAtFailure, and its cause is returned.
func TestEachEndsWithCtx(t *testing.T) {
	for _, stop := range []bool{false, true} {
		t.Run(fmt.Sprint("StopAtFailure=", stop), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ctx, cancel := context.WithCancelCause(t.Context())
				cause := errors.New("caller gave up")
				var c calls
				done := make(chan error, 1)
				go func() {
					done <- Each(ctx, []int{0, 1, 2, 3}, onePartition, EachOptions{Concurrency: 2, StopAtFailure: stop}, func(ctx context.Context, i int) error {
						c.add(&c.started, i)
						<-ctx.Done()
						return ctx.Err()
					})
				}()
				synctest.Wait()
				cancel(cause)
				err := <-done
				if got := c.sorted(&c.started); !slices.Equal(got, []int{0, 1}) {
					t.Fatalf("calls %v started, want the running [0 1] only", got)
				}
				if !errors.Is(err, cause) || !errors.Is(err, context.Canceled) {
					t.Fatalf("Each returned %v, want ctx's cause and the calls' cancellation", err)
				}
			})
		})
	}
}
