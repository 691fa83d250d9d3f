package keyspread_test

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/tablepatterns/tablepatterns/errs"
	"github.com/tablepatterns/tablepatterns/patterns/keyspread"
	"github.com/tablepatterns/tablepatterns/repo"
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

// NaN shares are not shares: like a NaN Target, they must be refused. Accepted, a NaN
// HotShare makes every comparison false, and a sample where one partition takes 95% of
// the writes is reported as spread.
func TestAdviseRefusesNaNShares(t *testing.T) {
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

// Extreme samples and options neither loop nor panic, and keep Buckets within [4, MaxBuckets]
// whenever a fix is advised.
func TestAdviseExtremesNeitherLoopNorPanic(t *testing.T) {
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
		<-done // an Advise that never returns hangs until go test -timeout
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
