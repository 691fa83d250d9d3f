// Command benchtable reads `go test -bench` output on standard input and prints the ratios
// the comparison benchmarks report (see package benchcmp), one row per benchmark and metric,
// with the number of runs, the median and the range. `make bench` pipes its output into it:
//
//	go test -run '^$' -bench . ./patterns/logtail/ | go run ./internal/benchcmp/cmd/benchtable
//
// A row is marked "spread" when its range is wider than a fifth of its median: a figure the
// load of the machine moves, to re-measure before quoting. Requests per operation are
// printed too, since they are what carries over to the real service. With -all it prints
// every metric the benchmarks report (each side's time per operation, items per second),
// not only ratios and requests.
//
// The last column, "expect", is the range a reader's run should fall in: the observed range
// widened by Tolerance on each side (SpreadTolerance for a spread row), or the exact value
// when every run measured the same (requests, allocations). BENCHMARKS.md states these
// ranges. With -check FILE, benchtable reads the stated table from FILE instead of printing
// one, and checks every value of the input against it: a value outside its stated range, or
// a figure FILE does not state, fails (exit status 1). `make bench-check` runs it.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
)

// key names one figure: a benchmark of a package and one of its metrics.
type key struct{ pkg, bench, unit string }

func main() {
	all := flag.Bool("all", false, "print every metric, not only ratios and requests per operation")
	check := flag.String("check", "", "check the input against the ranges stated in this file (BENCHMARKS.md) instead of printing a table")
	flag.Parse()
	keep := wanted
	if *all {
		keep = everyMetric
	}
	var err error
	if *check != "" {
		err = checkFile(os.Stdin, os.Stdout, *check)
	} else {
		err = run(os.Stdin, os.Stdout, keep)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchtable:", err)
		os.Exit(1)
	}
}

// The widening of an observed range into the range a reader's run should fall in. They
// were chosen on the quiet runs of 2026-11-24 (BENCHMARKS.md): with them, each set of
// three runs fell inside the ranges of the six others, for every ratio but one.
const (
	// Tolerance widens the range of a steady figure: [min/(1+Tolerance), max*(1+Tolerance)].
	Tolerance = 0.20
	// SpreadTolerance widens the range of a spread figure (range over a fifth of the median).
	SpreadTolerance = 0.30
)

func run(in io.Reader, out io.Writer, keep func(unit string) bool) error {
	figures, order, err := parse(in, keep)
	if err != nil {
		return err
	}
	if len(order) == 0 {
		return fmt.Errorf("no benchmark ratios in the input")
	}
	return print(out, figures, order)
}

// parse collects the values of the metrics keep accepts by figure, in the order they
// first appear.
func parse(in io.Reader, keep func(unit string) bool) (map[key][]float64, []key, error) {
	figures := map[key][]float64{}
	var order []key
	pkg := ""
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if p, ok := strings.CutPrefix(line, "pkg: "); ok {
			pkg = strings.TrimPrefix(strings.TrimSpace(p), "github.com/tablepatterns/tablepatterns/")
			continue
		}
		fields := strings.Fields(line)
		if len(fields) < 4 || !strings.HasPrefix(fields[0], "Benchmark") {
			continue
		}
		if _, err := strconv.Atoi(fields[1]); err != nil {
			continue // a benchmark's name printed by -v, or a log line
		}
		name := strings.TrimPrefix(trimProcs(fields[0]), "Benchmark")
		for i := 2; i+1 < len(fields); i += 2 {
			v, err := strconv.ParseFloat(fields[i], 64)
			if err != nil {
				return nil, nil, fmt.Errorf("%s: value %q of %s is not a number", name, fields[i], fields[i+1])
			}
			unit := fields[i+1]
			if !keep(unit) {
				continue
			}
			k := key{pkg, name, unit}
			if _, seen := figures[k]; !seen {
				order = append(order, k)
			}
			figures[k] = append(figures[k], v)
		}
	}
	return figures, order, sc.Err()
}

// trimProcs drops the -GOMAXPROCS suffix go test adds to a benchmark's name.
func trimProcs(name string) string {
	i := strings.LastIndexByte(name, '-')
	if i < 0 {
		return name
	}
	if _, err := strconv.Atoi(name[i+1:]); err != nil {
		return name
	}
	return name[:i]
}

// everyMetric accepts every metric a benchmark reports itself, not the testing package's.
func everyMetric(unit string) bool {
	return unit != "ns/op" && unit != "B/op" && unit != "allocs/op"
}

// wanted accepts the metrics printed by default: ratios and requests per operation.
func wanted(unit string) bool {
	return unit == "ratio" || strings.HasPrefix(unit, "ratio-") || unit == "alloc-ratio" || strings.HasSuffix(unit, "-req/op")
}

func print(out io.Writer, figures map[key][]float64, order []key) error {
	w := bufio.NewWriter(out)
	fmt.Fprintf(w, "%-58s %-26s %4s %10s  %-21s %-21s\n", "benchmark", "metric", "runs", "median", "range", "expect")
	for _, k := range order {
		vs := slices.Clone(figures[k])
		slices.Sort(vs)
		med := median(vs)
		lo, hi := vs[0], vs[len(vs)-1]
		rng := fmt.Sprintf("%s – %s", format(lo), format(hi))
		note := ""
		spread := len(vs) > 1 && med > 0 && (hi-lo)/med > 0.2
		if spread {
			note = "spread"
		}
		elo, ehi := expect(lo, hi, spread)
		exp := fmt.Sprintf("%s – %s", format(elo), format(ehi))
		fmt.Fprintf(w, "%-58s %-26s %4d %10s  %-21s %-21s %s\n", k.name(), k.unit, len(vs), format(med), rng, exp, note)
	}
	return w.Flush()
}

// name is how the table names the figure's benchmark: the package, then the benchmark.
func (k key) name() string {
	if k.pkg != "" {
		return k.pkg + " " + k.bench
	}
	return k.bench
}

// expect widens an observed range [lo, hi] into the range a next run should fall in
// (Tolerance, SpreadTolerance), rounded outwards to the three digits the table prints. A
// figure every run measured the same is exact (a count of requests or allocations).
func expect(lo, hi float64, spread bool) (float64, float64) {
	if lo == hi {
		return lo, hi
	}
	t := Tolerance
	if spread {
		t = SpreadTolerance
	}
	return round(lo/(1+t), math.Floor), round(hi*(1+t), math.Ceil)
}

// round rounds v to the digits format prints (three significant, or whole from 1,000 up) in
// the direction of dir (math.Floor or math.Ceil), so that the printed bound contains v.
func round(v float64, dir func(float64) float64) float64 {
	if v == 0 {
		return 0
	}
	if math.Abs(v) >= 1000 {
		return dir(v)
	}
	scale := math.Pow(10, 2-math.Floor(math.Log10(math.Abs(v))))
	return dir(v*scale) / scale
}

// median of sorted values.
func median(vs []float64) float64 {
	n := len(vs)
	if n%2 == 1 {
		return vs[n/2]
	}
	return (vs[n/2-1] + vs[n/2]) / 2
}

// format prints three significant digits, which is all a ratio measured here carries, and
// whole numbers from 1,000 up.
func format(v float64) string {
	if v >= 1000 {
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
	return strconv.FormatFloat(v, 'g', 3, 64)
}
