package main

import (
	"bufio"
	"cmp"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
)

// stated is a figure's range as a file states it: the expect column of a benchtable table.
type stated struct{ lo, hi float64 }

// checkFile checks every value of the benchmark output in against the ranges the table in
// path states, and prints one line per figure.
func checkFile(in io.Reader, out io.Writer, path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	ranges, err := readStated(f)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return check(in, out, ranges, path)
}

// readStated reads the first benchtable table of a file (BENCHMARKS.md indents it as a code
// block): the rows after the header line that starts with "benchmark" and names "expect",
// up to the first blank line.
func readStated(r io.Reader) (map[key]stated, error) {
	ranges := map[key]stated{}
	sc := bufio.NewScanner(r)
	in := false
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if !in {
			f := strings.Fields(line)
			in = len(f) > 0 && f[0] == "benchmark" && f[len(f)-1] == "expect"
			continue
		}
		if line == "" {
			break
		}
		k, s, err := parseRow(line)
		if err != nil {
			return nil, err
		}
		if _, dup := ranges[k]; dup {
			return nil, fmt.Errorf("the table states %s %s twice", k.name(), k.unit)
		}
		ranges[k] = s
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(ranges) == 0 {
		return nil, errors.New(`no table with an "expect" column (benchtable's output) in the file`)
	}
	return ranges, nil
}

// parseRow reads one row of benchtable's table from the right: [spread] expect-hi – expect-lo
// hi – lo median runs metric, and the benchmark's name (package and benchmark) before them.
func parseRow(line string) (key, stated, error) {
	f := strings.Fields(line)
	if len(f) > 0 && f[len(f)-1] == "spread" {
		f = f[:len(f)-1]
	}
	if len(f) < 11 || f[len(f)-2] != "–" || f[len(f)-5] != "–" {
		return key{}, stated{}, fmt.Errorf("not a row of benchtable's table: %q", line)
	}
	lo, err1 := strconv.ParseFloat(f[len(f)-3], 64)
	hi, err2 := strconv.ParseFloat(f[len(f)-1], 64)
	if err := errors.Join(err1, err2); err != nil || lo > hi {
		return key{}, stated{}, fmt.Errorf("row %q: the expected range is not two ordered numbers", line)
	}
	unit := f[len(f)-9]
	name := f[:len(f)-9]
	k := key{bench: name[len(name)-1], unit: unit}
	if len(name) > 1 {
		k.pkg = strings.Join(name[:len(name)-1], " ")
	}
	return k, stated{lo, hi}, nil
}

// check compares the values of the figures in in with ranges.
func check(in io.Reader, out io.Writer, ranges map[key]stated, file string) error {
	figures, order, err := parse(in, wanted)
	if err != nil {
		return err
	}
	if len(order) == 0 {
		return errors.New("no benchmark ratios in the input")
	}
	w := bufio.NewWriter(out)
	failed := 0
	for _, k := range order {
		s, ok := ranges[k]
		if !ok {
			failed++
			fmt.Fprintf(w, "%-58s %-26s not stated in %s\n", k.name(), k.unit, file)
			continue
		}
		var outside []string
		for _, v := range figures[k] {
			// Compared as the table prints it: an exact figure is stated to three digits.
			if p, _ := strconv.ParseFloat(format(v), 64); p < s.lo || p > s.hi {
				outside = append(outside, format(v))
			}
		}
		verdict := "ok"
		if outside != nil {
			failed++
			verdict = "OUTSIDE: " + strings.Join(outside, ", ")
		}
		fmt.Fprintf(w, "%-58s %-26s %4d runs in %s – %s  %s\n", k.name(), k.unit, len(figures[k]), format(s.lo), format(s.hi), verdict)
	}
	// A figure the file states that no run measured is not a figure the check has seen:
	// its benchmark is missing from the runs (make bench), so the file's claim goes
	// unchecked.
	unmeasured := 0
	for _, k := range sortedKeys(ranges) {
		if _, ok := figures[k]; !ok {
			unmeasured++
			fmt.Fprintf(w, "%-58s %-26s stated in %s, measured by no run\n", k.name(), k.unit, file)
		}
	}
	failed += unmeasured
	fmt.Fprintf(w, "%d of %d figures inside the ranges %s states\n", len(order)-failed+unmeasured, len(order)+unmeasured, file)
	if err := w.Flush(); err != nil {
		return err
	}
	if failed > 0 {
		return fmt.Errorf("%d figures outside the ranges of %s, not stated there, or stated and not measured", failed, file)
	}
	return nil
}

// sortedKeys returns the keys of ranges in the order the table prints them.
func sortedKeys(ranges map[key]stated) []key {
	out := make([]key, 0, len(ranges))
	for k := range ranges {
		out = append(out, k)
	}
	slices.SortFunc(out, func(a, b key) int {
		return cmp.Or(strings.Compare(a.name(), b.name()), strings.Compare(a.unit, b.unit))
	})
	return out
}
