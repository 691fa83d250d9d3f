package keyspread_test

import (
	"errors"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/tablepatterns/tablepatterns/errs"
	"github.com/tablepatterns/tablepatterns/patterns/keyspread"
)

// NaN shares are not shares: like a NaN Target, they must be refused. Accepted, a NaN
// HotShare makes every comparison false, and a sample where one partition takes 95% of
// the writes is reported as spread.
func TestAttackAdvisorNaNShares(t *testing.T) {
	t.Parallel()
	keys := make([]string, 0, 100)
	for i := range 100 {
		if i%20 == 0 {
			keys = append(keys, fmt.Sprintf("z%02d", i))
		} else {
			keys = append(keys, "hot")
		}
	}
	for _, o := range []keyspread.AdviseOptions{{HotShare: math.NaN()}, {MonotonicShare: math.NaN()}} {
		rep, err := keyspread.AdviseKeys(keys, &o)
		if errors.Is(err, errs.ErrInvalidInput) {
			continue
		}
		t.Errorf("options %+v accepted (err %v): pattern %v, skew %.2f, suggestion %q", o, err, rep.Pattern, rep.Skew, rep.Suggestion)
	}
}

// Extremes that must neither loop nor panic, and keep Buckets within [4, MaxBuckets]
// whenever a fix is advised.
func TestAttackAdvisorExtremes(t *testing.T) {
	t.Parallel()
	t0 := time.Unix(0, 0)
	burst := func(n int, step time.Duration) []keyspread.Write {
		w := make([]keyspread.Write, n)
		for i := range w {
			w[i] = keyspread.Write{PartitionKey: fmt.Sprintf("k%06d", i), Time: t0.Add(time.Duration(i) * step)}
		}
		return w
	}
	cases := []struct {
		name   string
		writes []keyspread.Write
		opts   keyspread.AdviseOptions
	}{
		{"tiny target", burst(1000, time.Nanosecond), keyspread.AdviseOptions{Target: math.SmallestNonzeroFloat64}},
		{"tiny window", burst(1000, 0), keyspread.AdviseOptions{Window: time.Nanosecond}},
		{"huge window", burst(1000, time.Hour), keyspread.AdviseOptions{Window: time.Duration(math.MaxInt64)}},
		{"times far apart", []keyspread.Write{{PartitionKey: "a", Time: time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC)}, {PartitionKey: "a", Time: time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC)}}, keyspread.AdviseOptions{}},
		{"one write", []keyspread.Write{{PartitionKey: "", Time: t0}}, keyspread.AdviseOptions{Window: time.Nanosecond}},
	}
	for _, c := range cases {
		done := make(chan struct{})
		var rep keyspread.Report
		var err error
		go func() {
			defer close(done)
			rep, err = keyspread.Advise(func(yield func(keyspread.Write) bool) {
				for _, w := range c.writes {
					if !yield(w) {
						return
					}
				}
			}, &c.opts)
		}()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: Advise did not return", c.name)
		}
		if err != nil {
			continue
		}
		if rep.Pattern != keyspread.Spread && (rep.Buckets < 4 || rep.Buckets > keyspread.MaxBuckets) {
			t.Errorf("%s: pattern %v, %d buckets", c.name, rep.Pattern, rep.Buckets)
		}
		if math.IsNaN(rep.PeakRate) || math.IsInf(rep.PeakRate, 0) {
			t.Errorf("%s: peak rate %v", c.name, rep.PeakRate)
		}
	}
}
