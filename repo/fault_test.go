package repo_test

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/tablepatterns/tablepatterns/internal/faultproxy"
	"github.com/tablepatterns/tablepatterns/internal/testenv"
	"github.com/tablepatterns/tablepatterns/repo"
	"github.com/tablepatterns/tablepatterns/repo/filter"
	"github.com/tablepatterns/tablepatterns/retry"
)

// With 20 % of requests failing transiently — including drops after the write reached the
// server, so that the client does not know whether it happened — 500 inserts and 500
// updates (2,000 of each under make soak) all end stored exactly once with the right
// values, and every retry is logged.
func TestTransientFaultsExactlyOnce(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	core, logs := observer.New(zap.WarnLevel)
	emps := table[Employee](t, b, &repo.Options{
		Logger:      zap.New(core),
		TrackWrites: true, // inserts whose response was lost recognise their own write
		Retry:       retry.Policy{Delay: 2 * time.Millisecond, MinDelay: time.Millisecond, MaxDelay: 20 * time.Millisecond, MaxRetries: 30},
	})
	ctx := b.ctx
	// 1,000 writes meet about 200 faults, dozens of each kind, in 20 partitions.
	n := testenv.Scale(500, 2000)
	b.proxy.SetSeed(7)
	b.proxy.AddRule(faultproxy.Rule{Name: "busy", Probability: 0.07, Action: faultproxy.Respond(503, "ServerBusy")})
	b.proxy.AddRule(faultproxy.Rule{Name: "timeout", Probability: 0.03, Action: faultproxy.Respond(500, "OperationTimedOut")})
	b.proxy.AddRule(faultproxy.Rule{Name: "drop-before", Probability: 0.03, Action: faultproxy.DropBeforeForward()})
	b.proxy.AddRule(faultproxy.Rule{Name: "drop-after", Probability: 0.08, Action: faultproxy.DropAfterForward()})

	run := func(op string, f func(i int) error) {
		var wg sync.WaitGroup
		errs := make(chan error, n)
		sem := make(chan struct{}, 8)
		for i := 0; i < n; i++ {
			wg.Add(1)
			sem <- struct{}{}
			go func(i int) {
				defer wg.Done()
				defer func() { <-sem }()
				if err := f(i); err != nil {
					errs <- fmt.Errorf("%s %d: %w", op, i, err)
				}
			}(i)
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
	}
	key := func(i int) (string, string) { return fmt.Sprintf("P%02d", i%20), fmt.Sprintf("%05d", i) }
	run("insert", func(i int) error {
		pk, rk := key(i)
		e := employee(pk, rk)
		e.Age = int32(i % 1000)
		return emps.Insert(ctx, e)
	})
	run("update", func(i int) error {
		pk, rk := key(i)
		e := employee(pk, rk)
		e.Age = int32(i%1000) + 1
		e.LastName = "Updated"
		return emps.Update(ctx, e, &repo.UpdateOptions{Unconditional: true})
	})
	// Go's HTTP transport itself resends a GET whose reused connection was closed before
	// any response, so a dropped GET may never reach our retry layer; every other fault must.
	fired, mustLog := 0, 0
	for _, r := range b.proxy.Requests() {
		if r.Fired != "" {
			fired++
			if !(r.Method == "GET" && strings.HasPrefix(r.Fired, "drop")) {
				mustLog++
			}
		}
	}
	b.proxy.ClearRules()

	all, err := emps.Collect(ctx, repo.Query{Filter: filter.PartitionRange("P", "Q")})
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != n {
		t.Fatalf("%d entities stored, want %d", len(all), n)
	}
	for _, e := range all {
		var i int
		fmt.Sscanf(e.EmployeeID, "%05d", &i)
		if e.Age != int32(i%1000)+1 || e.LastName != "Updated" {
			t.Fatalf("%s/%s: %+v", e.Department, e.EmployeeID, e)
		}
	}
	if fired < n/5 {
		t.Fatalf("only %d faults fired over %d writes: the test did not exercise retries", fired, 2*n)
	}
	retries := logs.FilterMessageSnippet("retry").Len()
	if retries < mustLog || retries > fired {
		t.Fatalf("%d retries logged for %d injected faults (%d of them surely seen by the client)", retries, fired, mustLog)
	}
}
