// Package benchcmp runs the comparison benchmarks of BENCHMARKS.md: our implementation and
// the naive or hand-written ones, alternated operation by operation in one run, on the same
// server and data, so that a change of load on a shared machine hits every side alike and the
// ratio it reports is one a reader gets again.
//
// A comparison benchmark calls Run with its sides:
//
//	benchcmp.Run(b, &benchcmp.Options{Requests: counter.Count},
//		benchcmp.Side{Name: "logtail", Op: newest},
//		benchcmp.Side{Name: "scan", Op: scan})
//
// and gets, besides the usual ns/op of the whole loop, these metrics:
//
//   - <name>-ns/op: the time of one operation of each side, read around that operation
//     alone (Prepare and the other sides are not in it);
//   - ratio: the second side's time over the first's, how many times faster ours (the
//     first side) is; ratio-<name> the same for each further side;
//   - <name>-req/op, when Options.Requests is set: the requests each side sends per
//     operation, the figure that carries over to the real service;
//   - <name>-allocs/op and alloc-ratio (ours over the second side), when Options.Allocs is
//     set;
//   - <name>-<Unit>/s, when Options.Items is set: items per second of each side.
//
// cmd/benchtable reads `go test -bench` output and prints the ratios as a table, with the
// median and the range when the benchmarks ran several times (`make bench RUNS=3`).
package benchcmp

import (
	"fmt"
	"net"
	"net/http"
	"runtime"
	"sync/atomic"
	"testing"
	"time"
)

// Side is one implementation of the compared operation.
type Side struct {
	// Name labels the side's metrics: letters, digits and '-', no spaces.
	Name string
	// Prepare, if set, runs before each of the side's operations, untimed and uncounted:
	// fill a table the operation then drops. i is the operation's number, from 1.
	Prepare func(i int) error
	// Op is one operation. i is the operation's number, from 1, the same for every side
	// in one round, so that sides can derive the same key or value from it. An error
	// fails the benchmark.
	Op func(i int) error
}

// Options configures Run. nil means the defaults.
type Options struct {
	// Batch is how many operations each side runs in a row between two readings of the
	// clock: more than 1 for operations of a few hundred nanoseconds, where the clock
	// would weigh on the figure. Defaults to 1 (strict alternation).
	Batch int
	// Requests, if set, returns the number of requests sent so far (a Counter's Count, or
	// a fault proxy's); Run reads it around each operation and reports <name>-req/op. The
	// sides must not share the counter with other traffic while they run.
	Requests func() int64
	// Allocs reports each side's allocations per operation (<name>-allocs/op) and
	// alloc-ratio, ours over the second side's, measured with testing.AllocsPerRun before
	// the timed loop. Only for operations that need no Prepare. Defaults to false.
	Allocs bool
	// Items is how many items one operation handles (messages, entities); with it Run
	// reports <name>-<Unit>/s. Defaults to 0: not reported.
	Items int
	// Unit names the items of Items. Defaults to "items".
	Unit string
	// GC runs a garbage collection before each side's operations, untimed, so that the
	// garbage one side leaves (a scan of 10,000 entities) is not collected in the time of
	// the next side (a point read): what separate benchmarks got from the testing package.
	// Azurite's own collections still fall where they fall. Defaults to false; worth its
	// cost for operations of a millisecond and more.
	GC bool
	// Warmup is how many rounds run before the timed loop, untimed and uncounted, so that
	// connections are open and caches filled when the first timed round starts (it
	// matters at -benchtime=20x). Defaults to 1; -1: none, for operations of seconds.
	Warmup int
}

func (o *Options) withDefaults() Options {
	var d Options
	if o != nil {
		d = *o
	}
	if d.Batch <= 0 {
		d.Batch = 1
	}
	if d.Unit == "" {
		d.Unit = "items"
	}
	switch {
	case d.Warmup == 0:
		d.Warmup = 1
	case d.Warmup < 0:
		d.Warmup = 0
	}
	return d
}

// tally is what Run measures of one side.
type tally struct {
	elapsed  time.Duration
	requests int64
}

// Run alternates ours and theirs operation by operation inside b.Loop, round after round
// (ours, then each of theirs, in the order given), and reports the metrics of the package
// documentation. The benchmark's -benchtime counts rounds: -benchtime=100x runs 100
// operations of every side (times Options.Batch).
func Run(b *testing.B, o *Options, ours Side, theirs ...Side) {
	b.Helper()
	opts := o.withDefaults()
	sides := append([]Side{ours}, theirs...)
	for _, s := range sides {
		if s.Name == "" || s.Op == nil {
			b.Fatalf("benchcmp: every side needs a Name and an Op (got %q)", s.Name)
		}
	}
	b.ReportAllocs()
	var allocs []float64
	if opts.Allocs {
		allocs = measureAllocs(b, sides) // before the loop, whose start clears the metrics
	}
	tallies := make([]tally, len(sides))
	round := 0
	for range opts.Warmup {
		runRound(b, opts, sides, round, make([]tally, len(sides)))
		round++
	}
	for b.Loop() {
		runRound(b, opts, sides, round, tallies)
		round++
	}
	report(b, opts, sides, tallies, (round-opts.Warmup)*opts.Batch)
	reportAllocs(b, sides, allocs)
}

// runRound runs one round: Batch operations of each side in turn, adding their time and
// requests to tallies.
func runRound(b *testing.B, opts Options, sides []Side, round int, tallies []tally) {
	b.Helper()
	for k, s := range sides {
		first := round*opts.Batch + 1
		if s.Prepare != nil {
			for i := first; i < first+opts.Batch; i++ {
				if err := s.Prepare(i); err != nil {
					b.Fatalf("%s: prepare %d: %v", s.Name, i, err)
				}
			}
		}
		if opts.GC {
			runtime.GC()
		}
		var before int64
		if opts.Requests != nil {
			before = opts.Requests()
		}
		start := time.Now()
		for i := first; i < first+opts.Batch; i++ {
			if err := s.Op(i); err != nil {
				b.Fatalf("%s: operation %d: %v", s.Name, i, err)
			}
		}
		tallies[k].elapsed += time.Since(start)
		if opts.Requests != nil {
			tallies[k].requests += opts.Requests() - before
		}
	}
}

func report(b *testing.B, opts Options, sides []Side, tallies []tally, ops int) {
	if ops == 0 {
		return
	}
	n := float64(ops)
	for k, s := range sides {
		b.ReportMetric(float64(tallies[k].elapsed.Nanoseconds())/n, s.Name+"-ns/op")
		if opts.Requests != nil {
			b.ReportMetric(float64(tallies[k].requests)/n, s.Name+"-req/op")
		}
		if opts.Items > 0 && tallies[k].elapsed > 0 {
			b.ReportMetric(n*float64(opts.Items)/tallies[k].elapsed.Seconds(), s.Name+"-"+opts.Unit+"/s")
		}
	}
	ours := tallies[0].elapsed
	if ours <= 0 {
		return
	}
	for k := 1; k < len(sides); k++ {
		unit := "ratio"
		if k > 1 {
			unit = "ratio-" + sides[k].Name
		}
		b.ReportMetric(float64(tallies[k].elapsed)/float64(ours), unit)
	}
}

// measureAllocs measures each side's allocations per operation, outside the timed loop.
func measureAllocs(b *testing.B, sides []Side) []float64 {
	allocs := make([]float64, len(sides))
	for k, s := range sides {
		i := 0
		var failed error
		allocs[k] = testing.AllocsPerRun(100, func() {
			i++
			if err := s.Op(i); err != nil && failed == nil {
				failed = err
			}
		})
		if failed != nil {
			b.Fatalf("%s: %v", s.Name, failed)
		}
	}
	return allocs
}

func reportAllocs(b *testing.B, sides []Side, allocs []float64) {
	if allocs == nil {
		return
	}
	for k, s := range sides {
		b.ReportMetric(allocs[k], s.Name+"-allocs/op")
	}
	if len(sides) > 1 && allocs[1] > 0 {
		b.ReportMetric(allocs[0]/allocs[1], "alloc-ratio")
	}
}

// Counter is an HTTP transport (an azcore policy.Transporter) that counts the requests it
// sends: give it to the clients of every side (repo.ClientOptions.Transport) and Count to
// Options.Requests. It sends through its own connection pool, sized like the Azure SDK's
// default one (10 idle connections per host), so that the sides see the same transport as
// without it. A Counter is safe for concurrent use.
type Counter struct {
	n      atomic.Int64
	client *http.Client
}

// NewCounter returns a Counter with no request counted.
func NewCounter() *Counter {
	t := &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:          100,
		MaxIdleConnsPerHost:   10,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: time.Second,
	}
	return &Counter{client: &http.Client{Transport: t}}
}

// Do counts req and sends it.
func (c *Counter) Do(req *http.Request) (*http.Response, error) {
	c.n.Add(1)
	return c.client.Do(req)
}

// Count returns the number of requests sent so far.
func (c *Counter) Count() int64 { return c.n.Load() }

// Check returns an error naming what when got differs from want: the sides' own check that
// they did the work, so that a benchmark never times an operation that did nothing.
func Check[T comparable](what string, got, want T) error {
	if got != want {
		return fmt.Errorf("%s: got %v, want %v", what, got, want)
	}
	return nil
}
