package maintain

import (
	"context"
	"errors"
	"sync/atomic"

	"github.com/tablepatterns/tablepatterns/retry"
)

// EachOptions configures Each. The zero value runs one call at a time, every call
// whatever the others return.
type EachOptions struct {
	// Concurrency bounds the calls running at once. Below 1 it is 1.
	Concurrency int
	// StopAtFailure makes the first failed call start no new call; the calls already
	// running finish (see Each). Defaults to false: every call runs, until ctx ends.
	StopAtFailure bool
	// Stopped, if set, runs once when StopAtFailure stops the run, in the failed call's
	// goroutine, after the stop is recorded and before the running calls end: the point
	// where a test releases a call it holds.
	Stopped func()
}

// errStopped tells Schedule that StopAtFailure stops the run; the failed call's own
// error is returned by Each.
var errStopped = errors.New("maintain: a call failed, the run stops")

// Each runs fn(ctx, v) for every item v of items on retry.Schedule, v writing partition
// part(v): at most o.Concurrency calls at once and at most 2
// (ScheduleOptions.PartitionConcurrency's default) at once in one partition, so that a
// backfill or repair keeps at most 2 writes in flight in any partition, each call's
// context marked with its partition so that the client's Gate slows a busy partition
// alone. It is the maintenance loop of secondaryindex and indexentity; they differ only
// in the error rule (o.StopAtFailure).
//
// A call is cancelled by ctx's end alone, never by another call's failure: a write whose
// client gives up may land at the service all the same (the request was sent), so a
// cancelled call could not say whether it wrote, and a caller that counts the writes of
// its calls would count less than was written. With StopAtFailure the first failure
// starts no new call, and Each returns once the calls already running have returned.
//
// Errors: the errors of the calls that failed, joined in item order, and ctx's cause
// when ctx ended before every call started (or ran); nil when every call ran and
// returned nil.
func Each[V any](ctx context.Context, items []V, part func(v V) string, o EachOptions, fn func(ctx context.Context, v V) error) error {
	parts := make([]string, len(items))
	for i, v := range items {
		parts[i] = part(v)
	}
	failed := make([]error, len(items))
	var stopped atomic.Bool
	sched := &retry.ScheduleOptions{Concurrency: max(o.Concurrency, 1), FinishRunning: true}
	err := retry.Schedule(ctx, parts, sched, func(ctx context.Context, i int) error {
		if stopped.Load() {
			return nil // started by Schedule before it heard of the failure: not run
		}
		failed[i] = fn(ctx, items[i])
		if failed[i] == nil || !o.StopAtFailure {
			return nil
		}
		if stopped.CompareAndSwap(false, true) && o.Stopped != nil {
			o.Stopped()
		}
		return errStopped
	})
	if errors.Is(err, errStopped) {
		err = nil // the failures are in failed
	}
	return errors.Join(append(failed, err)...)
}
