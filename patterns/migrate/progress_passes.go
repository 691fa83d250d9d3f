package migrate

import (
	"cmp"
	"slices"

	"github.com/tablepatterns/tablepatterns/codec/keys"
)

// passes sums valid progress rows per pass: the ranges of one kind and one count of
// parts, apart from any range that overlaps one of the pass (Jobs at other bounds split
// the same work into as many parts: their ranges overlap, and summed together would
// count the shared entities twice). Each range joins the first pass, in key order, that
// it does not overlap.
func passes(rows []progressRow) []KindProgress {
	slices.SortFunc(rows, func(a, b progressRow) int {
		return cmp.Or(cmp.Compare(a.Kind, b.Kind), cmp.Compare(b.Parts, a.Parts), keys.Compare(a.From, b.From), compareTo(a.To, b.To))
	})
	type pass struct {
		k      KindProgress
		parts  int64
		ranges []progressRow
	}
	var all []*pass
	for _, r := range rows {
		var in *pass
		for _, p := range all {
			if p.k.Kind == r.Kind && p.parts == r.Parts && !slices.ContainsFunc(p.ranges, func(o progressRow) bool { return overlap(o, r) }) {
				in = p
				break
			}
		}
		if in == nil {
			in = &pass{k: KindProgress{Kind: r.Kind, Total: int(r.Parts), Counts: map[string]int64{}}, parts: r.Parts}
			all = append(all, in)
		}
		in.ranges = append(in.ranges, r)
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
		out = append(out, p.k)
	}
	return out
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

// overlap reports whether two ranges [From, To) share a key.
func overlap(a, b progressRow) bool {
	return startsBefore(a.From, b.To) && startsBefore(b.From, a.To)
}

// startsBefore reports whether a range starting at from has keys before the end to.
func startsBefore(from, to string) bool { return to == "" || keys.Compare(from, to) < 0 }
