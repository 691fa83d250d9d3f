package main

import (
	"os"
	"strings"
	"testing"
)

const sample = `goos: linux
pkg: github.com/tablepatterns/tablepatterns/patterns/logtail
BenchmarkNewest-2   	      20	 290000000 ns/op	 4770000 logtail-ns/op	 1.000 logtail-req/op	 58.50 ratio	 1.000 scan-req/op
BenchmarkNewest-2   	      20	 290000000 ns/op	 4770000 logtail-ns/op	 1.000 logtail-req/op	 45.00 ratio	 1.000 scan-req/op
BenchmarkNewest-2   	      20	 290000000 ns/op	 4770000 logtail-ns/op	 1.000 logtail-req/op	 61.00 ratio	 1.000 scan-req/op
PASS
pkg: github.com/tablepatterns/tablepatterns/patterns/periodtable
BenchmarkDropPeriod/x-2 	       2	 9000000000 ns/op	 5900 ratio	 1390 ratio-batched
`

func TestTableHasMedianAndRange(t *testing.T) {
	var out strings.Builder
	if err := run(strings.NewReader(sample), &out, wanted); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	for _, want := range []string{
		"patterns/logtail Newest",
		"ratio                         3       58.5  45 – 61               34.6 – 79.3",
		"spread", // 16 over a median of 58.5 is wider than a fifth
		"patterns/periodtable DropPeriod/x",
		"5900  5900 – 5900           5900 – 5900",
		"ratio-batched",
		"logtail-req/op                3          1  1 – 1",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "logtail-ns/op") {
		t.Errorf("times are not summarised, only ratios and requests:\n%s", got)
	}
}

func TestAllPrintsEverySidesTime(t *testing.T) {
	var out strings.Builder
	if err := run(strings.NewReader(sample), &out, everyMetric); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "logtail-ns/op                 3    4770000") {
		t.Errorf("-all lacks the sides' times:\n%s", out.String())
	}
}

func TestNoRatiosIsAnError(t *testing.T) {
	if err := run(strings.NewReader("PASS\nok x 1s\n"), &strings.Builder{}, wanted); err == nil {
		t.Fatal("an input without ratios printed an empty table")
	}
	if err := run(strings.NewReader("BenchmarkX-2 10 5 ns/op zz ratio\n"), &strings.Builder{}, wanted); err == nil {
		t.Fatal("a malformed value was accepted")
	}
}

func TestExpectWidensAndRoundsOutwards(t *testing.T) {
	for _, c := range []struct {
		lo, hi         float64
		spread         bool
		wantLo, wantHi float64
	}{
		{10, 12, false, 8.33, 14.4},                 // 10/1.2 = 8.333 down, 12*1.2 = 14.4
		{10, 12, true, 7.69, 15.6},                  // 10/1.3 = 7.692 down, 12*1.3 = 15.6
		{0.03145, 0.03145, false, 0.03145, 0.03145}, // exact stays exact
		{2589, 4171, true, 1991, 5423},              // whole numbers from 1,000 up
	} {
		lo, hi := expect(c.lo, c.hi, c.spread)
		if lo != c.wantLo || hi != c.wantHi {
			t.Errorf("expect(%v, %v, %v) = %v – %v, want %v – %v", c.lo, c.hi, c.spread, lo, hi, c.wantLo, c.wantHi)
		}
		if lo > c.lo || hi < c.hi {
			t.Errorf("expect(%v, %v) = %v – %v does not contain the observed range", c.lo, c.hi, lo, hi)
		}
	}
}

// The table benchtable prints is the one -check reads back.
func TestCheckReadsTheTableItPrints(t *testing.T) {
	var table strings.Builder
	if err := run(strings.NewReader(sample), &table, wanted); err != nil {
		t.Fatal(err)
	}
	doc := "# Benchmarks\n\nSome text.\n\n" + indent(table.String()) + "\nMore text.\n"
	ranges, err := readStated(strings.NewReader(doc))
	if err != nil {
		t.Fatal(err)
	}
	if got := ranges[key{"patterns/logtail", "Newest", "ratio"}]; got != (stated{34.6, 79.3}) {
		t.Errorf("logtail ratio read as %+v", got)
	}
	if got := ranges[key{"patterns/periodtable", "DropPeriod/x", "ratio-batched"}]; got != (stated{1390, 1390}) {
		t.Errorf("exact figure read as %+v", got)
	}

	var out strings.Builder
	if err := check(strings.NewReader(sample), &out, ranges, "B.md"); err != nil {
		t.Fatalf("the runs a table was made of fell outside it: %v\n%s", err, out.String())
	}

	inside := strings.ReplaceAll(sample, "58.50 ratio", "70.00 ratio")
	if err := check(strings.NewReader(inside), &strings.Builder{}, ranges, "B.md"); err != nil {
		t.Errorf("70 is inside 34.6 – 79.3 but failed: %v", err)
	}
	outside := strings.ReplaceAll(sample, "58.50 ratio", "80.00 ratio")
	out.Reset()
	if err := check(strings.NewReader(outside), &out, ranges, "B.md"); err == nil || !strings.Contains(out.String(), "OUTSIDE: 80") {
		t.Errorf("80 is outside 34.6 – 79.3 but passed (%v):\n%s", err, out.String())
	}
	changed := strings.ReplaceAll(sample, "1.000 logtail-req/op", "2.000 logtail-req/op")
	if err := check(strings.NewReader(changed), &strings.Builder{}, ranges, "B.md"); err == nil {
		t.Error("an exact request count that changed passed")
	}
	unstated := sample + "pkg: github.com/tablepatterns/tablepatterns/repo\nBenchmarkNew-2 10 5 ns/op 2.0 ratio\n"
	out.Reset()
	if err := check(strings.NewReader(unstated), &out, ranges, "B.md"); err == nil || !strings.Contains(out.String(), "not stated in B.md") {
		t.Errorf("a figure the file does not state passed (%v):\n%s", err, out.String())
	}
	ranges[key{"patterns/migrate", "BackfillThrottled", "ratio-ceiling"}] = stated{0.5, 1.25}
	out.Reset()
	if err := check(strings.NewReader(sample), &out, ranges, "B.md"); err == nil || !strings.Contains(out.String(), "measured by no run") {
		t.Errorf("a figure the file states that no run measured passed (%v):\n%s", err, out.String())
	}
}

func TestCheckRefusesAFileWithoutATable(t *testing.T) {
	if _, err := readStated(strings.NewReader("# Benchmarks\n\n| a | b |\n")); err == nil {
		t.Error("a file without benchtable's table was accepted")
	}
	bad := "    benchmark metric runs median range expect\n    repo X ratio 3 1 1 – 2 3 – x\n"
	if _, err := readStated(strings.NewReader(bad)); err == nil {
		t.Error("a row whose range is not numbers was accepted")
	}
}

func indent(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i, l := range lines {
		lines[i] = "    " + l
	}
	return strings.Join(lines, "\n") + "\n"
}

// BENCHMARKS.md states the ranges `make bench-check` checks: its table must stay readable.
func TestBenchmarksFileStatesItsRanges(t *testing.T) {
	f, err := os.Open("../../../../BENCHMARKS.md")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ranges, err := readStated(f)
	if err != nil {
		t.Fatalf("make bench-check cannot read BENCHMARKS.md: %v", err)
	}
	ratios := 0
	for k := range ranges {
		if wanted(k.unit) && strings.HasPrefix(k.unit, "ratio") {
			ratios++
		}
	}
	if ratios < 30 {
		t.Errorf("BENCHMARKS.md states %d ratios; make bench reports more than 30", ratios)
	}
}
