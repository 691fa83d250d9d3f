package keyspread_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tablepatterns/tablepatterns/internal/faultproxy"
	"github.com/tablepatterns/tablepatterns/patterns/keyspread"
	"github.com/tablepatterns/tablepatterns/repo"
	"github.com/tablepatterns/tablepatterns/repo/filter"
	"github.com/tablepatterns/tablepatterns/retry"
)

// The partition stress test stops at its count or its duration, whichever comes first,
// reports the entities per second the partition took, and counts the throttled
// operations and their error codes.
func TestStressReportsRateAndErrorsWithinItsBounds(t *testing.T) {
	t.Parallel()
	tb, proxy, clients := tableWithClients[Access](t, true)
	var inserted atomic.Int64
	insert := func(ctx context.Context, worker, i int) (int, error) {
		err := tb.Insert(ctx, &Access{Partition: "Sales", RowKey: fmt.Sprintf("%08d", i), Employee: fmt.Sprint(worker)})
		if err == nil {
			inserted.Add(1)
			return 1, nil
		}
		return 0, err
	}
	// Bounded by count.
	rep, err := keyspread.Stress(t.Context(), insert, time.Minute, &keyspread.StressOptions{MaxOps: 200, Concurrency: 8})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Ops != 200 || rep.Entities != 200 || rep.Errors != 0 || rep.EntitiesPerSecond <= 0 || rep.P99 < rep.P50 {
		t.Fatalf("report %+v", rep)
	}
	stored, err := tb.Collect(t.Context(), repo.Query{Filter: filter.PartitionKey("Sales")})
	if err != nil || len(stored) != 200 {
		t.Fatalf("%d entities stored, %v", len(stored), err)
	}
	if !strings.Contains(rep.String(), "entities/s") {
		t.Fatalf("summary %q", rep.String())
	}

	// Bounded by time, with the service shedding a share of the load. Each run's operations
	// get a context that ends at its 300 ms; runs repeat until they made 100 operations
	// between them, enough for the error rate to say 30 % (a busy machine makes few in one
	// run, and a rate of a few is chance).
	proxy.SetSeed(7)
	proxy.AddRule(faultproxy.Rule{Match: faultproxy.IsInsertEntity, Probability: 0.3, Action: faultproxy.Respond(503, "ServerBusy")})
	noRetry, err := repo.New[Access](clients.Tables, tb.Name(), &repo.Options{Retry: retry.NoRetry()})
	if err != nil {
		t.Fatal(err)
	}
	const bound = 300 * time.Millisecond
	var ops, failed int64
	for run := 0; ops < 100; run++ {
		var unbounded atomic.Int64
		insertRaw := func(ctx context.Context, worker, i int) (int, error) {
			// The run's context ends at most bound after the run began, so at most bound
			// from now, however late this operation starts.
			if dl, ok := ctx.Deadline(); !ok || time.Until(dl) > bound {
				unbounded.Add(1)
			}
			err := noRetry.Insert(ctx, &Access{Partition: "Sales", RowKey: fmt.Sprintf("b%03d-%08d", run, i)})
			if err != nil {
				return 0, err
			}
			return 1, nil
		}
		rep, err = keyspread.Stress(t.Context(), insertRaw, bound, &keyspread.StressOptions{Concurrency: 4, Target: keyspread.TargetGuide})
		if err != nil {
			t.Fatal(err)
		}
		if n := unbounded.Load(); n != 0 {
			t.Fatalf("run %d: %d operations ran past the %v the stress test was given", run, n, bound)
		}
		if rep.Throttled != rep.Errors || rep.Codes["ServerBusy"] != rep.Errors || rep.Entities != rep.Ops-rep.Errors {
			t.Fatalf("run %d: report %+v", run, rep)
		}
		if rep.Ops > 0 && rep.ErrorRate != float64(rep.Errors)/float64(rep.Ops) {
			t.Fatalf("run %d: error rate %v for %d errors in %d operations", run, rep.ErrorRate, rep.Errors, rep.Ops)
		}
		ops, failed = ops+rep.Ops, failed+rep.Errors
	}
	if rate := float64(failed) / float64(ops); failed == 0 || rate < 0.1 || rate > 0.5 {
		t.Fatalf("error rate %.2f (%d of %d operations) for 30%% injected", rate, failed, ops)
	}

	for name, c := range map[string]struct {
		op   keyspread.Operation
		d    time.Duration
		opts *keyspread.StressOptions
	}{
		"no operation": {nil, time.Second, nil},
		"no duration":  {insert, 0, nil},
		"too long":     {insert, keyspread.MaxStressDuration + 1, nil},
		"workers":      {insert, time.Second, &keyspread.StressOptions{Concurrency: keyspread.MaxStressConcurrency + 1}},
		"NaN target":   {insert, time.Second, &keyspread.StressOptions{Target: math.NaN()}},
		"Inf target":   {insert, time.Second, &keyspread.StressOptions{Target: math.Inf(1)}},
		"below zero":   {insert, time.Second, &keyspread.StressOptions{Target: -1}},
	} {
		if _, err := keyspread.Stress(t.Context(), c.op, c.d, c.opts); !errors.Is(err, repo.ErrInvalidInput) {
			t.Errorf("%s: %v", name, err)
		}
	}
}
