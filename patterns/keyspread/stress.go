package keyspread

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"

	"github.com/tablepatterns/tablepatterns/internal/errs"
	"github.com/tablepatterns/tablepatterns/retry"
)

// Limits of Stress, so that a stress test is always bounded in time and in count.
const (
	// MaxStressDuration is the longest Stress runs.
	MaxStressDuration = 10 * time.Minute
	// MaxStressConcurrency is the most workers Stress runs.
	MaxStressConcurrency = 256
)

// Operation is one application operation of a stress test against the target partition:
// an insert, a point read, a query, an entity group transaction... It returns how many
// entities it read or wrote (not counted when it fails). worker is the worker's number and i the operation's number in
// the whole run (unique), for building distinct keys.
type Operation func(ctx context.Context, worker, i int) (entities int, err error)

// StressOptions configures Stress. The zero value (or nil) gives the documented defaults.
type StressOptions struct {
	// MaxOps bounds the number of operations (0: only Duration bounds the run).
	MaxOps int
	// Concurrency is the number of workers calling Operation in a loop. Defaults to 16.
	Concurrency int
	// Target is the partition's scalability target in entities/s. Defaults to TargetToday
	// (2,000); TargetGuide (500) is the guide's figure.
	Target float64
}

// StressReport is the result of Stress.
type StressReport struct {
	// Ops counts operations; Entities the entities the successful ones reported; Errors the operations
	// that failed; Throttled the failures that were the service shedding load (server
	// busy, timeouts: what a partition beyond its target answers).
	Ops, Entities, Errors, Throttled int64
	// Elapsed is the run's duration.
	Elapsed time.Duration
	// EntitiesPerSecond is Entities over Elapsed: the load the partition took.
	EntitiesPerSecond float64
	// ErrorRate is Errors over Ops.
	ErrorRate float64
	// P50 and P99 are operation latencies (failures included).
	P50, P99 time.Duration
	// Codes counts the failures by service error code ("" for transport errors).
	Codes map[string]int64
	// Target is the rate compared with; OverTarget reports EntitiesPerSecond above it.
	Target     float64
	OverTarget bool
}

// String summarizes the report with the guide's reading of it ("Designing a scalable
// partitioning strategy").
func (r StressReport) String() string {
	verdict := "within the target: one partition can take this peak load"
	switch {
	case r.Throttled > 0 && r.Throttled*10 >= r.Ops:
		// A tenth of the operations or more were shed: the rate is the partition's limit,
		// not the load the application offered.
		verdict = "THROTTLED: the service shed load, so the rate measured is the partition's limit under this mix, not the load offered; spread the load over more partitions if the application needs more"
	case r.OverTarget:
		verdict = "OVER the target: in production this partition would be overloaded and throttled (503 Server Busy, timeouts); the PartitionKey is too coarse: spread the load over more partitions"
	}
	return fmt.Sprintf("%d ops, %d entities in %v: %.0f entities/s against a target of %.0f/s, error rate %.2f%% (%d throttled), latency p50 %v p99 %v: %s",
		r.Ops, r.Entities, r.Elapsed.Round(time.Millisecond), r.EntitiesPerSecond, r.Target, 100*r.ErrorRate, r.Throttled,
		r.P50.Round(10*time.Microsecond), r.P99.Round(10*time.Microsecond), verdict)
}

// Stress is the guide's partition stress test ("Designing a scalable partitioning
// strategy"): with the test table loaded and the application's operations aimed at one
// partition (op, the application's operation mix), it drives peak load with Concurrency
// workers until duration (at most MaxStressDuration) passes or MaxOps operations ran, and
// reports the entities per second the partition took, against the
// target, and the error rate.
//
// Build the Operation on a table whose retry policy is retry.NoRetry to see every
// throttling answer as an error, or on the application's own policy to see what its users
// would. Errors of operations are counted, not returned.
//
// Errors: errs.ErrInvalidInput for a nil op, a duration out of range or invalid options
// (nothing runs); ctx's error if ctx ended before the run's end, with the report of what
// ran.
func Stress(ctx context.Context, op Operation, duration time.Duration, opts *StressOptions) (StressReport, error) {
	var cfg StressOptions
	if opts != nil {
		cfg = *opts
	}
	if cfg.Concurrency == 0 {
		cfg.Concurrency = 16
	}
	if cfg.Target == 0 {
		cfg.Target = TargetToday
	}
	switch {
	case op == nil:
		return StressReport{}, errs.Invalid("op", "is required")
	case duration <= 0 || duration > MaxStressDuration:
		return StressReport{}, errs.Invalid("duration", "must be positive and at most %v, got %v", MaxStressDuration, duration)
	case cfg.MaxOps < 0:
		return StressReport{}, errs.Invalid("StressOptions.MaxOps", "must not be negative, got %d", cfg.MaxOps)
	case cfg.Concurrency < 1 || cfg.Concurrency > MaxStressConcurrency:
		return StressReport{}, errs.Invalid("StressOptions.Concurrency", "must be 1 to %d, got %d", MaxStressConcurrency, cfg.Concurrency)
	case !(cfg.Target > 0 && cfg.Target <= math.MaxFloat64): // NaN and ±Inf too
		return StressReport{}, errs.Invalid("StressOptions.Target", "must be a positive rate, got %v", cfg.Target)
	}
	runCtx, cancel := context.WithTimeout(ctx, duration)
	defer cancel()

	var next, entities, failures, throttled atomic.Int64
	var mu sync.Mutex
	codes := map[string]int64{}
	lat := make([][]time.Duration, cfg.Concurrency)
	start := time.Now()
	var wg sync.WaitGroup
	for w := range cfg.Concurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for runCtx.Err() == nil {
				i := next.Add(1) - 1
				if cfg.MaxOps > 0 && i >= int64(cfg.MaxOps) {
					return
				}
				t0 := time.Now()
				n, err := op(runCtx, w, int(i))
				d := time.Since(t0)
				if err != nil && runCtx.Err() != nil && errors.Is(err, runCtx.Err()) {
					next.Add(-1) // cut short by the end of the run: not an operation
					return
				}
				lat[w] = append(lat[w], d)
				if err == nil {
					entities.Add(int64(n))
				} else {
					failures.Add(1)
					if retry.IsTransient(err) || errors.Is(err, errs.ErrTransient) {
						throttled.Add(1)
					}
					mu.Lock()
					codes[errorCode(err)]++
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	all := slices.Concat(lat...)
	slices.Sort(all)
	rep := StressReport{
		Ops: int64(len(all)), Entities: entities.Load(), Errors: failures.Load(), Throttled: throttled.Load(),
		Elapsed: elapsed, Codes: codes, Target: cfg.Target,
	}
	if elapsed > 0 {
		rep.EntitiesPerSecond = float64(rep.Entities) / elapsed.Seconds()
	}
	if rep.Ops > 0 {
		rep.ErrorRate = float64(rep.Errors) / float64(rep.Ops)
		rep.P50 = all[len(all)/2]
		rep.P99 = all[min(len(all)-1, len(all)*99/100)]
	}
	rep.OverTarget = rep.EntitiesPerSecond > cfg.Target
	if err := ctx.Err(); err != nil {
		return rep, err
	}
	return rep, nil
}

// errorCode returns the service error code of err, "" if it has none.
func errorCode(err error) string {
	var se *errs.ServiceError
	if errors.As(err, &se) {
		if se.Code != "" {
			return se.Code
		}
		if se.StatusCode != 0 {
			return fmt.Sprint(se.StatusCode)
		}
	}
	var re *azcore.ResponseError
	if errors.As(err, &re) {
		if re.ErrorCode != "" {
			return re.ErrorCode
		}
		return fmt.Sprint(re.StatusCode)
	}
	return ""
}
