package retry

import (
	"context"
	"sync"
	"time"

	"github.com/tablepatterns/tablepatterns/internal/errs"
)

// ScheduleOptions configures Schedule. nil or zero fields give the defaults.
type ScheduleOptions struct {
	// Concurrency bounds the tasks running at once. Defaults to 8.
	Concurrency int
	// PartitionConcurrency bounds the tasks running at once in one partition, so that a
	// large partition never holds every worker while the others idle: a partition serves
	// about 2,000 entities/s ("Scalability and performance targets for Table storage"),
	// which two transactions of 100 in flight reach at a round trip of up to 100 ms.
	// Defaults to 2.
	PartitionConcurrency int
	// FinishRunning makes the first error stop only the tasks not yet started: the
	// running ones keep their context (only ctx's end cancels them), and Schedule returns
	// the first error once they have returned. A path that counts what its tasks wrote
	// sets it: a write whose client is cancelled may still land at the service (the
	// request was sent), so a cancelled task cannot say whether it wrote. Defaults to
	// false: the first error cancels the running tasks too, so that BulkWrite ends
	// without waiting for them.
	FinishRunning bool
}

func (o *ScheduleOptions) withDefaults() (ScheduleOptions, error) {
	var out ScheduleOptions
	if o != nil {
		out = *o
	}
	if out.Concurrency == 0 {
		out.Concurrency = 8
	}
	if out.PartitionConcurrency == 0 {
		out.PartitionConcurrency = 2
	}
	if out.Concurrency < 1 {
		return out, errs.Invalid("retry.ScheduleOptions.Concurrency", "must be at least 1, got %d", out.Concurrency)
	}
	if out.PartitionConcurrency < 1 {
		return out, errs.Invalid("retry.ScheduleOptions.PartitionConcurrency", "must be at least 1, got %d", out.PartitionConcurrency)
	}
	return out, nil
}

// Schedule runs fn(ctx, i) for every task i in [0, len(partitions)), task i addressing
// partition partitions[i]: the one scheduler of every path that writes many partitions
// (BulkWrite; range archives, restores, index backfills and repairs, sharded exports).
// The service's throughput is per partition, so a bulk path reaches the account's rate
// only when its concurrent requests spread over partitions ("Designing a scalable
// partitioning strategy"): Schedule runs at most Concurrency tasks at once, at most
// PartitionConcurrency of them in one partition, and starts next a task of the partition
// with the fewest tasks running, taking partitions in turn (round robin, in the order they
// first appear in partitions) among equals. The tasks of one partition start in index
// order.
//
// Each task's context is marked with its partition (WithPartition), so that a Gate in
// the client's pipeline slows a busy partition alone: its tasks wait for its own rate
// while the other partitions' go on.
//
// The first error a task returns cancels the context of the tasks still running and not
// yet started (with FinishRunning, it only stops those not yet started), and is
// returned; nil when every task succeeded. A task that must not stop the others returns
// nil and records its error itself. Schedule returns after every started task has
// returned, and returns ctx's cause if ctx ended first.
//
// Errors: an *InvalidInputError (ErrInvalidInput) for a negative Concurrency or
// PartitionConcurrency, before any task starts; else the first task's error, or ctx's.
func Schedule(ctx context.Context, partitions []string, opts *ScheduleOptions, fn func(ctx context.Context, i int) error) error {
	o, err := opts.withDefaults()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	hints := &readyHints{at: map[string]time.Time{}}
	ctx = context.WithValue(ctx, readyHintsKey{}, hints)
	q := newPartitionQueue(partitions, o.PartitionConcurrency, hints)
	type result struct {
		i   int
		err error
	}
	done := make(chan result)
	running, started := 0, 0
	var first error // with FinishRunning: the first error, its siblings left running
	finish := func(r result) {
		running--
		q.finished(r.i)
		switch {
		case r.err == nil:
		case !o.FinishRunning:
			cancel(r.err)
		case first == nil && ctx.Err() == nil:
			first = r.err
		}
	}
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	for started < len(partitions) && ctx.Err() == nil && first == nil {
		var wake <-chan time.Time
		if running < o.Concurrency {
			i, ok, until := q.next(time.Now())
			if ok {
				running++
				started++
				go func() {
					done <- result{i, fn(WithPartition(ctx, partitions[i]), i)}
				}()
				continue
			}
			if !until.IsZero() {
				// Every partition that may start a task is held by its rate: wait for the
				// first to be free rather than park a worker in its queue.
				timer.Reset(time.Until(until))
				wake = timer.C
			}
		}
		select {
		case r := <-done:
			finish(r)
		case <-wake:
		case <-ctx.Done():
		}
		if wake != nil && !timer.Stop() {
			select {
			case <-timer.C:
			default:
			}
		}
	}
	for running > 0 {
		finish(<-done)
	}
	if first != nil {
		return first
	}
	return context.Cause(ctx)
}

// partitionQueue picks the next task: of a partition that its rate lets send now (see
// readyHints), with the fewest tasks running (below the bound), partitions in turn among
// equals.
type partitionQueue struct {
	bound  int
	parts  []*schedPartition // in the order they first appear
	of     []int             // task -> index in parts
	cursor int               // where the next turn starts
	hints  *readyHints
}

type schedPartition struct {
	key     string
	tasks   []int // not started, in index order
	running int
}

func newPartitionQueue(partitions []string, bound int, hints *readyHints) *partitionQueue {
	q := &partitionQueue{bound: bound, of: make([]int, len(partitions)), hints: hints}
	index := map[string]int{}
	for i, key := range partitions {
		p, ok := index[key]
		if !ok {
			p = len(q.parts)
			index[key] = p
			q.parts = append(q.parts, &schedPartition{key: key})
		}
		q.parts[p].tasks = append(q.parts[p].tasks, i)
		q.of[i] = p
	}
	return q
}

// next returns the task to start now. When none may start now, it returns false and the
// time the first partition held by its rate will be free (zero if none is held: only a
// task's end can free one).
func (q *partitionQueue) next(now time.Time) (task int, ok bool, until time.Time) {
	best, bestRunning := -1, q.bound
	for k := range q.parts {
		p := (q.cursor + k) % len(q.parts)
		sp := q.parts[p]
		if len(sp.tasks) == 0 || sp.running >= q.bound {
			continue
		}
		if t := q.hints.readyAt(sp.key); t.After(now) {
			if until.IsZero() || t.Before(until) {
				until = t
			}
			continue
		}
		if sp.running < bestRunning {
			best, bestRunning = p, sp.running
			if bestRunning == 0 {
				break
			}
		}
	}
	if best < 0 {
		return 0, false, until
	}
	q.cursor = best + 1
	sp := q.parts[best]
	task, sp.tasks = sp.tasks[0], sp.tasks[1:]
	sp.running++
	return task, true, time.Time{}
}

// finished records the end of task i.
func (q *partitionQueue) finished(i int) { q.parts[q.of[i]].running-- }

// readyHints are what a Gate tells the Schedule whose tasks it serves (through their
// context): the time before which a partition's rate would hold a new request. Schedule
// starts the tasks of free partitions first, so that its workers wait in no partition's
// queue while another partition could send.
type readyHints struct {
	mu sync.Mutex
	at map[string]time.Time
	// paceRate is the rate a partition of the Schedule was last cut to (at paceAt): the
	// first guess of the others' (see pace).
	paceRate float64
	paceAt   time.Time
}

type readyHintsKey struct{}

// hintsOf returns the hints of the Schedule that ctx belongs to, nil if none.
func hintsOf(ctx context.Context) *readyHints {
	h, _ := ctx.Value(readyHintsKey{}).(*readyHints)
	return h
}

// heldUntil records that partition's rate holds new requests until t (zero: not at all).
func (h *readyHints) heldUntil(partition string, t time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if t.IsZero() {
		delete(h.at, partition)
		return
	}
	h.at[partition] = t
}

func (h *readyHints) readyAt(partition string) time.Time {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.at[partition]
}
