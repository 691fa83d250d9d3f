package app

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/tablepatterns/tablepatterns/patterns/consistency"
)

// rangeSummary adds up, per archive-range job (its deliveries: the first and its
// continuations), what the run's deliveries selected, moved, skipped and left, and the
// warnings of its conditions, for the run's summary.
type rangeSummary struct {
	mu   sync.Mutex
	jobs map[string]*rangeTotal
}

type rangeTotal struct {
	label                             string // the job as printed (describeRange, values cut short)
	selected, moved, skipped, changed int
	failed                            int
	warnings                          []string
}

// add is consistency.Options.RangeDone.
func (s *rangeSummary) add(job consistency.ArchiveRangeJob, rep consistency.RangeReport, err error) {
	job.After = nil // one job, whichever page
	if job.Validate() != nil {
		// Text from the queue that no check passed (sizes, names) is never echoed: its
		// deliveries add up under one line, their errors are in the poison queue.
		job = consistency.ArchiveRangeJob{}
	}
	key := describeRange(job, 0)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.jobs == nil {
		s.jobs = map[string]*rangeTotal{}
	}
	t := s.jobs[key]
	if t == nil {
		t = &rangeTotal{label: describeRange(job, summaryValueLen)}
		s.jobs[key] = t
	}
	t.selected += rep.Scanned
	t.moved += rep.Moved
	t.skipped += len(rep.Skipped)
	t.changed += len(rep.Changed)
	if err != nil {
		t.failed++
	}
	for _, w := range rep.Warnings {
		if !slices.Contains(t.warnings, w) {
			t.warnings = append(t.warnings, w)
		}
	}
}

// print writes one line per job, then its warnings. The jobs' text comes from the
// queue: no control character of it reaches the operator's terminal (terminalSafe).
func (s *rangeSummary) print(w io.Writer) {
	s.mu.Lock()
	defer s.mu.Unlock()
	keys := make([]string, 0, len(s.jobs))
	for k := range s.jobs {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		t := s.jobs[k]
		fmt.Fprintf(w, "%s: selected %d, moved %d, skipped %d, changed during the move %d", terminalSafe(t.label), t.selected, t.moved, t.skipped, t.changed)
		if t.failed > 0 {
			fmt.Fprintf(w, ", failed deliveries %d", t.failed)
		}
		fmt.Fprintln(w)
		for _, warn := range t.warnings {
			fmt.Fprintf(w, "  warning: %s\n", terminalSafe(warn))
		}
	}
}

// summaryValueLen is how many characters of a key bound or a condition's value the
// summary prints: a value may be up to a queue message long.
const summaryValueLen = 64

// describeRange names a range job as the command line would: its source, selection and
// target, each key bound and condition value cut to limit characters (0: whole). The
// zero job (one that is not valid) is named as such.
func describeRange(j consistency.ArchiveRangeJob, limit int) string {
	if j.Source == "" {
		return "archive-range jobs that are not valid (see archiver poison list)"
	}
	q := func(v string) string {
		if r := []rune(v); limit > 0 && len(r) > limit {
			return strconv.Quote(string(r[:limit])) + "..."
		}
		return strconv.Quote(v)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "archive-range %s", j.Source)
	for _, f := range []struct{ name, v string }{{"pk", j.PartitionKey}, {"rk-from", j.RowKeyFrom}, {"rk-to", j.RowKeyTo}, {"pk-from", j.PartitionKeyFrom}, {"pk-to", j.PartitionKeyTo}} {
		if f.v != "" {
			fmt.Fprintf(&b, " -%s %s", f.name, q(f.v))
		}
	}
	for _, c := range j.Where {
		fmt.Fprintf(&b, " -where %s:%s:%s:%s", c.Property, c.Op, c.Type, q(c.Value))
	}
	if j.TargetTable != "" {
		fmt.Fprintf(&b, " -> table %s", j.TargetTable)
	} else {
		fmt.Fprintf(&b, " -> container %s", j.TargetContainer)
	}
	return b.String()
}
