package app

import (
	"fmt"
	"io"
	"slices"
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
	job                               consistency.ArchiveRangeJob
	selected, moved, skipped, changed int
	failed                            int
	warnings                          []string
}

// add is consistency.Options.RangeDone.
func (s *rangeSummary) add(job consistency.ArchiveRangeJob, rep consistency.RangeReport, err error) {
	job.After = nil // one job, whichever page
	key := describeRange(job)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.jobs == nil {
		s.jobs = map[string]*rangeTotal{}
	}
	t := s.jobs[key]
	if t == nil {
		t = &rangeTotal{job: job}
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
		fmt.Fprintf(w, "%s: selected %d, moved %d, skipped %d, changed during the move %d", terminalSafe(k), t.selected, t.moved, t.skipped, t.changed)
		if t.failed > 0 {
			fmt.Fprintf(w, ", failed deliveries %d", t.failed)
		}
		fmt.Fprintln(w)
		for _, warn := range t.warnings {
			fmt.Fprintf(w, "  warning: %s\n", terminalSafe(warn))
		}
	}
}

// describeRange names a range job as the command line would: its source, selection and
// target.
func describeRange(j consistency.ArchiveRangeJob) string {
	var b strings.Builder
	fmt.Fprintf(&b, "archive-range %s", j.Source)
	for _, f := range []struct{ name, v string }{{"pk", j.PartitionKey}, {"rk-from", j.RowKeyFrom}, {"rk-to", j.RowKeyTo}, {"pk-from", j.PartitionKeyFrom}, {"pk-to", j.PartitionKeyTo}} {
		if f.v != "" {
			fmt.Fprintf(&b, " -%s %q", f.name, f.v)
		}
	}
	for _, c := range j.Where {
		fmt.Fprintf(&b, " -where %s:%s:%s:%q", c.Property, c.Op, c.Type, c.Value)
	}
	if j.TargetTable != "" {
		fmt.Fprintf(&b, " -> table %s", j.TargetTable)
	} else {
		fmt.Fprintf(&b, " -> container %s", j.TargetContainer)
	}
	return b.String()
}
