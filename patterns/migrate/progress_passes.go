package migrate

import (
	"cmp"
	"math"
	"slices"

	"github.com/tablepatterns/tablepatterns/codec/keys"
)

// maxPasses bounds the passes of one kind and count of parts: splits of the same work
// at other bounds, as many as an operator enqueues; ranges past them are skipped.
const maxPasses = 64

// passes sums valid progress rows per pass: the ranges of one kind and one count of
// parts, apart from any range that overlaps one of the pass (Jobs at other bounds split
// the same work into as many parts: their ranges overlap, and summed together would
// count the shared entities twice). Each range joins the first pass, in key order, that
// it does not overlap. A range that would start a pass past maxPasses, or whose counts
// would take a sum of its pass past the largest int64, is skipped (forged: no job writes
// it) and counted in the second result.
func passes(rows []progressRow) ([]KindProgress, int) {
	slices.SortFunc(rows, func(a, b progressRow) int {
		return cmp.Or(cmp.Compare(a.Kind, b.Kind), cmp.Compare(b.Parts, a.Parts), keys.Compare(a.From, b.From), compareTo(a.To, b.To))
	})
	type pass struct {
		k   KindProgress
		end string // the furthest To of its ranges ("": no end)
	}
	var all, group []*pass
	skipped := 0
	for i, r := range rows {
		if i == 0 || r.Kind != rows[i-1].Kind || r.Parts != rows[i-1].Parts {
			group = nil
		}
		// The ranges are in order of From: r overlaps a pass when it starts before
		// the furthest end of the pass's ranges.
		var in *pass
		for _, p := range group {
			if !startsBefore(r.From, p.end) {
				in = p
				break
			}
		}
		switch {
		case in == nil && len(group) == maxPasses:
			skipped++
			continue
		case in == nil:
			in = &pass{k: KindProgress{Kind: r.Kind, Total: int(r.Parts), Counts: map[string]int64{}}}
			group = append(group, in)
			all = append(all, in)
		}
		if overflows(in.k.Counts, &r) {
			skipped++
			continue
		}
		if in.k.Started == 0 || compareTo(r.To, in.end) > 0 {
			in.end = r.To
		}
		in.k.Started++
		if r.Done {
			in.k.Done++
		}
		for i, c := range r.counts() {
			if *c != 0 {
				in.k.Counts[countNames[i]] += *c
			}
		}
	}
	out := make([]KindProgress, 0, len(all))
	for _, p := range all {
		if p.k.Started > 0 {
			out = append(out, p.k)
		}
	}
	return out, skipped
}

// overflows reports whether adding r's counts to sums would take one past math.MaxInt64.
func overflows(sums map[string]int64, r *progressRow) bool {
	for i, c := range r.counts() {
		if sums[countNames[i]] > math.MaxInt64-*c {
			return true
		}
	}
	return false
}

// compareTo orders range ends: "" (no end) after every key.
func compareTo(a, b string) int {
	switch {
	case a == b:
		return 0
	case a == "":
		return 1
	case b == "":
		return -1
	}
	return keys.Compare(a, b)
}

// startsBefore reports whether a range starting at from has keys before the end to.
func startsBefore(from, to string) bool { return to == "" || keys.Compare(from, to) < 0 }
