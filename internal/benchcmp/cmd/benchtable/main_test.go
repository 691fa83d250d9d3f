package main

import (
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
		"ratio                         3       58.5  45 – 61",
		"spread", // 16 over a median of 58.5 is wider than a fifth
		"patterns/periodtable DropPeriod/x",
		"5900  5900 – 5900",
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
