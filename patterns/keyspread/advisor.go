package keyspread

import (
	"fmt"
	"iter"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/tablepatterns/tablepatterns/internal/errs"
)

// Scalability targets of one partition, in entities per second.
const (
	// TargetGuide is the target "Designing a scalable partitioning strategy" (2014) gives: 500 entities/s per partition.
	TargetGuide = 500
	// TargetToday is the target Azure documents today: 2,000 entities/s per partition.
	TargetToday = 2000
)

// Write is one write of a sample or a write log, for Advise.
type Write struct {
	// PartitionKey is the key written. Required.
	PartitionKey string
	// Time is when the write happened. Optional: with times, the advisor also measures the
	// peak rate of each partition against the target.
	Time time.Time
}

// Pattern is the shape the advisor found in the partition keys.
type Pattern int

const (
	// Spread: no hot spot found.
	Spread Pattern = iota
	// AppendOnly: nearly every write goes to the highest PartitionKey so far (increasing
	// keys: timestamps, order numbers), and no single partition takes more than
	// AdviseOptions.HotShare of them (that is a HotPartition, wherever its key sorts). With
	// range partitions, every insert hits the last partition server ("Designing a scalable
	// partitioning strategy").
	AppendOnly
	// PrependOnly: nearly every write goes to the lowest PartitionKey so far (decreasing
	// keys, e.g. inverted ticks used as PartitionKey): the same problem at the other end.
	PrependOnly
	// HotPartition: one partition takes a large share of the writes (more than
	// AdviseOptions.HotShare, even when it is the highest or lowest key), or more than the
	// target rate.
	HotPartition
)

// String returns the pattern's name: "spread", "append-only", "prepend-only" or
// "hot partition".
func (p Pattern) String() string {
	switch p {
	case AppendOnly:
		return "append-only"
	case PrependOnly:
		return "prepend-only"
	case HotPartition:
		return "hot partition"
	}
	return "spread"
}

// AdviseOptions configures Advise. nil means the zero value.
type AdviseOptions struct {
	// Target is the scalability target of one partition in entities/s. Defaults to
	// TargetToday (2,000); TargetGuide (500) is the guide's figure.
	Target float64
	// Window is the time window of the peak rates. Defaults to 1 second.
	Window time.Duration
	// MonotonicShare is the share of writes at the top (or bottom) of the keys so far above
	// which the keys are called append-only (prepend-only). Defaults to 0.9.
	MonotonicShare float64
	// HotShare is the share of the writes above which one partition is called hot.
	// Defaults to 0.5.
	HotShare float64
	// Top is how many of the hottest partitions the report lists. Defaults to 5.
	Top int
}

// PartitionLoad is one partition's part of the writes.
type PartitionLoad struct {
	PartitionKey string
	// Writes counts its writes; Share is Writes over all writes.
	Writes int
	Share  float64
	// PeakRate is its highest rate in entities/s over any Window (0 without times).
	PeakRate float64
}

// Report is what Advise found.
type Report struct {
	// Writes and Partitions count the writes and the distinct PartitionKeys.
	Writes, Partitions int
	// Pattern is the problem found, if any.
	Pattern Pattern
	// AppendShare is the share of writes (after the first) whose PartitionKey was at least
	// every earlier one; PrependShare at most every earlier one.
	AppendShare, PrependShare float64
	// Hottest lists the partitions with the most writes, most first.
	Hottest []PartitionLoad
	// Skew is the hottest partition's share of the writes.
	Skew float64
	// PeakRate is the highest rate, in entities/s over any Window, that one partition
	// took; PeakPartition names it. For append-only keys, where the insert point itself is
	// the hot spot, it is the rate of all writes. 0 without times.
	PeakRate      float64
	PeakPartition string
	// Target is the target rate compared with.
	Target float64
	// Buckets is the number of buckets the advisor suggests (0 when none is needed):
	// twice the peak over the target, rounded up to a power of two, at least 4 and at most
	// MaxBuckets; 16 without times.
	Buckets int
	// Suggestion is the fix in words.
	Suggestion string
}

// Advise reads a sample of writes (or a write log) in the order they happened and reports
// monotonic (append-only or prepend-only) partition keys, the skew of the load and, when
// the writes have times, the peak rate of the hottest partition against the target; and it
// suggests a fix ("Designing a scalable partitioning strategy" "range partitions", the Azure Table storage design guide prepend/append anti-pattern,
// Tablestore's primary key design guide hash prefixes). It keeps one counter per distinct key, and the times when
// given.
//
// Errors: errs.ErrInvalidInput for invalid options or an empty sample.
func Advise(writes iter.Seq[Write], opts *AdviseOptions) (Report, error) {
	o, err := adviseDefaults(opts)
	if err != nil {
		return Report{}, err
	}
	rep := Report{Target: o.Target}
	counts := map[string]int{}
	times := map[string][]time.Time{}
	var all []time.Time
	var maxKey, minKey string
	atTop, atBottom := 0, 0
	timed := true
	for w := range writes {
		if rep.Writes > 0 {
			if w.PartitionKey >= maxKey {
				atTop++
			}
			if w.PartitionKey <= minKey {
				atBottom++
			}
		}
		if rep.Writes == 0 || w.PartitionKey > maxKey {
			maxKey = w.PartitionKey
		}
		if rep.Writes == 0 || w.PartitionKey < minKey {
			minKey = w.PartitionKey
		}
		rep.Writes++
		counts[w.PartitionKey]++
		if w.Time.IsZero() {
			timed = false
		} else if timed {
			times[w.PartitionKey] = append(times[w.PartitionKey], w.Time)
			all = append(all, w.Time)
		}
	}
	if rep.Writes == 0 {
		return Report{}, errs.Invalid("writes", "the sample is empty")
	}
	rep.Partitions = len(counts)
	if rep.Writes > 1 {
		rep.AppendShare = float64(atTop) / float64(rep.Writes-1)
		rep.PrependShare = float64(atBottom) / float64(rep.Writes-1)
	}
	for pk, n := range counts {
		rep.Hottest = append(rep.Hottest, PartitionLoad{PartitionKey: pk, Writes: n, Share: float64(n) / float64(rep.Writes)})
	}
	if timed {
		for i := range rep.Hottest {
			rep.Hottest[i].PeakRate = peakRate(times[rep.Hottest[i].PartitionKey], o.Window)
		}
	}
	sort.Slice(rep.Hottest, func(i, j int) bool {
		a, b := rep.Hottest[i], rep.Hottest[j]
		if a.Writes != b.Writes {
			return a.Writes > b.Writes
		}
		return a.PartitionKey < b.PartitionKey
	})
	rep.Skew = rep.Hottest[0].Share
	for _, p := range rep.Hottest {
		if p.PeakRate > rep.PeakRate {
			rep.PeakRate, rep.PeakPartition = p.PeakRate, p.PartitionKey
		}
	}
	if len(rep.Hottest) > o.Top {
		rep.Hottest = rep.Hottest[:o.Top]
	}

	// A write to the current highest (lowest) key counts as an append (prepend): keys of
	// coarse time buckets take many writes each while they are the newest. But repeated
	// writes to one key are that partition being hot, not the insert point moving: when one
	// partition takes more than HotShare of the writes, it is the hot spot, wherever its key
	// sorts, and spreading it by row key is the fix (Key(natural) would keep it whole).
	monotonic := rep.Partitions > 1 && rep.Writes > 2 && rep.Skew <= o.HotShare
	switch {
	case monotonic && rep.AppendShare >= o.MonotonicShare:
		rep.Pattern = AppendOnly
	case monotonic && rep.PrependShare >= o.MonotonicShare:
		rep.Pattern = PrependOnly
	case rep.Skew > o.HotShare && rep.Partitions > 1, rep.Partitions == 1 && rep.Writes > 1, rep.PeakRate > o.Target:
		rep.Pattern = HotPartition
	}
	if (rep.Pattern == AppendOnly || rep.Pattern == PrependOnly) && timed {
		// The insert point is the hot spot: every write of the moment goes to the range
		// partition at the end, whatever its key.
		rep.PeakRate = peakRate(all, o.Window)
		rep.PeakPartition = "(the " + map[Pattern]string{AppendOnly: "highest", PrependOnly: "lowest"}[rep.Pattern] + " keys)"
	}
	rep.Buckets, rep.Suggestion = suggest(rep, timed)
	return rep, nil
}

// AdviseKeys is Advise for a list of PartitionKeys without times, in write order.
//
// Errors: as Advise.
func AdviseKeys(pks []string, opts *AdviseOptions) (Report, error) {
	return Advise(func(yield func(Write) bool) {
		for _, pk := range pks {
			if !yield(Write{PartitionKey: pk}) {
				return
			}
		}
	}, opts)
}

func adviseDefaults(opts *AdviseOptions) (AdviseOptions, error) {
	var o AdviseOptions
	if opts != nil {
		o = *opts
	}
	if o.Target == 0 {
		o.Target = TargetToday
	}
	if o.Window == 0 {
		o.Window = time.Second
	}
	if o.MonotonicShare == 0 {
		o.MonotonicShare = 0.9
	}
	if o.HotShare == 0 {
		o.HotShare = 0.5
	}
	if o.Top == 0 {
		o.Top = 5
	}
	// Each check negates the valid range, so that NaN (false in every comparison) is
	// refused: a NaN share would make every comparison with it false and report a hot
	// partition as spread.
	switch {
	case !(o.Target > 0 && o.Target <= math.MaxFloat64):
		return o, errs.Invalid("AdviseOptions.Target", "must be a positive rate, got %v", o.Target)
	case !(o.Window > 0):
		return o, errs.Invalid("AdviseOptions.Window", "must be positive, got %v", o.Window)
	case !(o.MonotonicShare > 0 && o.MonotonicShare <= 1):
		return o, errs.Invalid("AdviseOptions.MonotonicShare", "must be in (0, 1], got %v", o.MonotonicShare)
	case !(o.HotShare > 0 && o.HotShare <= 1):
		return o, errs.Invalid("AdviseOptions.HotShare", "must be in (0, 1], got %v", o.HotShare)
	case o.Top < 1:
		return o, errs.Invalid("AdviseOptions.Top", "must be at least 1, got %d", o.Top)
	}
	return o, nil
}

// peakRate returns the most writes in any window of length w, per second.
func peakRate(ts []time.Time, w time.Duration) float64 {
	if len(ts) == 0 {
		return 0
	}
	ts = slices.Clone(ts)
	slices.SortFunc(ts, func(a, b time.Time) int { return a.Compare(b) })
	best, lo := 0, 0
	for hi := range ts {
		for ts[hi].Sub(ts[lo]) >= w {
			lo++
		}
		best = max(best, hi-lo+1)
	}
	return float64(best) / w.Seconds()
}

func suggest(rep Report, timed bool) (int, string) {
	buckets := 16
	if timed && rep.PeakRate > 0 {
		buckets = 4
		// Capped: a tiny Target makes the ratio huge (or +Inf), and doubling past
		// MaxBuckets would overflow and never end.
		for buckets < MaxBuckets && float64(buckets) < 2*rep.PeakRate/rep.Target {
			buckets *= 2
		}
	}
	buckets = min(buckets, MaxBuckets)
	rate := ""
	if timed {
		rate = fmt.Sprintf(" (peak %.0f entities/s against a target of %.0f/s)", rep.PeakRate, rep.Target)
	}
	var b strings.Builder
	switch rep.Pattern {
	case AppendOnly, PrependOnly:
		share := rep.AppendShare
		if rep.Pattern == PrependOnly {
			share = rep.PrependShare
		}
		fmt.Fprintf(&b, "%s PartitionKeys: %.0f%% of writes go to the %s key so far%s, so every insert lands in the range partition at that end (Designing a scalable partitioning strategy). ",
			rep.Pattern, 100*share, map[Pattern]string{AppendOnly: "highest", PrependOnly: "lowest"}[rep.Pattern], rate)
		fmt.Fprintf(&b, "Spread them: keyspread.Buckets with %d buckets (Key(natural); ranges of keys are read with ReadRange, %d queries) or, for keys read only by point queries, keyspread.HashPrefix (Tablestore's primary key design guide).", buckets, buckets)
		return buckets, b.String()
	case HotPartition:
		hot := rep.Hottest[0]
		fmt.Fprintf(&b, "hot partition %q takes %.0f%% of the writes%s. ", hot.PartitionKey, 100*hot.Share, rate)
		fmt.Fprintf(&b, "Spread it over %d buckets with keyspread.Buckets.KeyBy(natural, rowKey) and read it back with ReadPartition, or choose a finer PartitionKey (Designing a scalable partitioning strategy).", buckets)
		return buckets, b.String()
	}
	if timed {
		return 0, fmt.Sprintf("no hot spot: the busiest partition peaks at %.0f entities/s, under the target of %.0f/s", rep.PeakRate, rep.Target)
	}
	return 0, fmt.Sprintf("no hot spot: the keys are not monotonic and the hottest partition takes %.0f%% of the writes", 100*rep.Skew)
}
