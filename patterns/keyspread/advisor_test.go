package keyspread_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
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

func TestAdviseShapes(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(3, 4))
	n := 2000
	ascending := make([]string, n)
	descending := make([]string, n)
	random := make([]string, n)
	hot := make([]string, n)
	for i := range n {
		ascending[i] = fmt.Sprintf("%07d", 200000+i)
		descending[i] = fmt.Sprintf("%07d", 9000000-i)
		random[i] = fmt.Sprintf("dept%02d", rng.IntN(50))
		hot[i] = "Sales"
		if rng.IntN(10) < 3 {
			hot[i] = fmt.Sprintf("dept%02d", rng.IntN(50))
		}
	}
	cases := []struct {
		name string
		keys []string
		want keyspread.Pattern
	}{
		{"order numbers", ascending, keyspread.AppendOnly},
		{"inverted ticks as PartitionKey", descending, keyspread.PrependOnly},
		{"departments", random, keyspread.Spread},
		{"one big department", hot, keyspread.HotPartition},
		{"one partition", []string{"a", "a", "a"}, keyspread.HotPartition},
	}
	for _, c := range cases {
		rep, err := keyspread.AdviseKeys(c.keys, nil)
		if err != nil {
			t.Fatal(err)
		}
		if rep.Pattern != c.want {
			t.Errorf("%s: %v, want %v (report %+v)", c.name, rep.Pattern, c.want, rep)
		}
		if rep.Writes != len(c.keys) || rep.Skew <= 0 || rep.Suggestion == "" {
			t.Errorf("%s: report %+v", c.name, rep)
		}
		if (c.want == keyspread.Spread) != (rep.Buckets == 0) {
			t.Errorf("%s: suggests %d buckets", c.name, rep.Buckets)
		}
	}
	rep, _ := keyspread.AdviseKeys(hot, nil)
	if rep.Hottest[0].PartitionKey != "Sales" || rep.Skew < 0.6 || rep.Skew > 0.8 || !strings.Contains(rep.Suggestion, "Sales") {
		t.Fatalf("hot department: %+v", rep)
	}
	if _, err := keyspread.AdviseKeys(nil, nil); !errors.Is(err, repo.ErrInvalidInput) {
		t.Fatalf("empty sample: %v", err)
	}
	nan, inf := math.NaN(), math.Inf(1)
	for _, o := range []keyspread.AdviseOptions{{HotShare: 2}, {HotShare: -0.5}, {HotShare: inf}, {HotShare: nan}, {MonotonicShare: 1.5},
		{MonotonicShare: nan}, {Target: nan}, {Target: inf}, {Target: -1}, {Window: -time.Second}, {Top: -1}} {
		if _, err := keyspread.AdviseKeys(hot, &o); !errors.Is(err, repo.ErrInvalidInput) {
			t.Errorf("bad option %+v: %v", o, err)
		}
	}
}

// With times, the peak rate of one partition is compared with the target.
func TestAdviseRates(t *testing.T) {
	t.Parallel()
	start := time.Date(2014, 7, 31, 18, 0, 0, 0, time.UTC)
	// The access log keyed by the hour: 3,000 writes in one second, then a trickle.
	var log []keyspread.Write
	for i := range 3000 {
		log = append(log, keyspread.Write{PartitionKey: "2014-07-31T18", Time: start.Add(time.Duration(i) * time.Second / 3000)})
	}
	for i := range 100 {
		log = append(log, keyspread.Write{PartitionKey: "2014-07-31T18", Time: start.Add(time.Minute + time.Duration(i)*time.Second)})
	}
	seq := func(yield func(keyspread.Write) bool) {
		for _, w := range log {
			if !yield(w) {
				return
			}
		}
	}
	rep, err := keyspread.Advise(seq, &keyspread.AdviseOptions{Target: keyspread.TargetGuide})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Pattern != keyspread.HotPartition || rep.PeakRate != 3000 || rep.PeakPartition != "2014-07-31T18" {
		t.Fatalf("report %+v", rep)
	}
	if rep.Buckets != 16 { // 2 x 3000 / 500 = 12, rounded up to a power of two
		t.Fatalf("suggests %d buckets", rep.Buckets)
	}
	rep, _ = keyspread.Advise(seq, nil) // against 2,000/s: 3,000/s is still too much
	if rep.Buckets != 4 || rep.Target != keyspread.TargetToday {
		t.Fatalf("against today's target: %+v", rep)
	}

	// Ten departments at 100 writes/s each: spread and under the target.
	log = log[:0]
	for i := range 1000 {
		log = append(log, keyspread.Write{PartitionKey: fmt.Sprintf("dept%d", i%10), Time: start.Add(time.Duration(i) * time.Millisecond)})
	}
	rep, _ = keyspread.Advise(seq, nil)
	if rep.Pattern != keyspread.Spread || rep.PeakRate != 100 || rep.Buckets != 0 {
		t.Fatalf("spread departments: %+v", rep)
	}
}

func TestStress(t *testing.T) {
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

	// Bounded by time, with the service shedding a share of the load.
	proxy.SetSeed(7)
	proxy.AddRule(faultproxy.Rule{Match: faultproxy.IsInsertEntity, Probability: 0.3, Action: faultproxy.Respond(503, "ServerBusy")})
	noRetry, err := repo.New[Access](clients.Tables, tb.Name(), &repo.Options{Retry: retry.NoRetry()})
	if err != nil {
		t.Fatal(err)
	}
	insertRaw := func(ctx context.Context, worker, i int) (int, error) {
		err := noRetry.Insert(ctx, &Access{Partition: "Sales", RowKey: fmt.Sprintf("b%08d", i)})
		if err != nil {
			return 0, err
		}
		return 1, nil
	}
	began := time.Now()
	rep, err = keyspread.Stress(t.Context(), insertRaw, 300*time.Millisecond, &keyspread.StressOptions{Concurrency: 4, Target: keyspread.TargetGuide})
	if err != nil {
		t.Fatal(err)
	}
	if took := time.Since(began); took > 5*time.Second {
		t.Fatalf("a 300 ms stress test took %v", took)
	}
	if rep.Ops == 0 || rep.Errors == 0 || rep.Throttled != rep.Errors || rep.Codes["ServerBusy"] != rep.Errors || rep.Entities != rep.Ops-rep.Errors {
		t.Fatalf("report %+v", rep)
	}
	if rep.ErrorRate < 0.1 || rep.ErrorRate > 0.5 {
		t.Fatalf("error rate %.2f for 30%% injected", rep.ErrorRate)
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
