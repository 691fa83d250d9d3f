package app

import (
	"errors"
	"strings"
	"testing"

	"github.com/tablepatterns/tablepatterns/patterns/consistency"
	"github.com/tablepatterns/tablepatterns/repo/filter"
)

// The run summary's line for a range job read from the queue stays one short line of
// printable text whatever the job holds: a job that is not valid (a huge or forged
// source, property or value, with escape sequences, line separators or newlines) is
// never echoed, and a valid job's condition value is cut short.
func TestRunSummaryNeverEchoesAnInvalidJobAndBoundsValues(t *testing.T) {
	t.Parallel()
	huge := strings.Repeat("A", 40000)
	var s rangeSummary
	for _, j := range []consistency.ArchiveRangeJob{
		{Source: huge, PartitionKey: "p", TargetTable: "Dst"},
		{Source: "Src\u2028archive-range Fake -> table X: selected 9, moved 9", PartitionKey: "p", TargetTable: "Dst"},
		{Source: "Src", PartitionKey: "p", TargetTable: "Dst", Where: []filter.Condition{{Property: "P" + huge, Op: "eq", Value: "v"}}},
		{Source: "Src", PartitionKey: "p", TargetTable: "Dst", Where: []filter.Condition{{Property: "P", Op: "eq\x1b[2J", Value: "v"}}},
	} {
		s.add(j, consistency.RangeReport{}, errors.New("not valid"))
	}
	valid := consistency.ArchiveRangeJob{Source: "Src", PartitionKey: "p", TargetTable: "Dst", Where: []filter.Condition{{Property: "P", Op: "eq", Value: huge}}}
	if err := valid.Validate(); err != nil {
		t.Fatal(err)
	}
	s.add(valid, consistency.RangeReport{Scanned: 1}, nil)
	var out strings.Builder
	s.print(&out)
	for _, line := range strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n") {
		if len(line) > 600 || strings.ContainsAny(line, "\u2028\u2029\x1b") || strings.Contains(line, "Fake") {
			t.Errorf("summary line (%d bytes) echoes the job's text: %.200q", len(line), line)
		}
	}
}
