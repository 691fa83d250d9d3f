package app

import (
	"slices"
	"testing"
	"time"

	"github.com/tablepatterns/tablepatterns/patterns/tablearchive"
)

// Every progress entry in a log has the same fields, whichever job and phase it reports:
// an export whose size is unknown carries total 0 rather than leaving the field out.
func TestProgressLogEntriesHaveOneShape(t *testing.T) {
	t.Parallel()
	p, clock, logs := printerAt(nil, time.Second)
	started := *clock
	for _, r := range []tablearchive.Progress{
		{Job: tablearchive.KindArchiveTable, Phase: tablearchive.PhaseExport, Table: "Day", Generation: "g1", Started: started},
		{Job: tablearchive.KindArchiveTable, Phase: tablearchive.PhaseVerify, Table: "Day", Generation: "g1", Total: 200, Started: started},
		{Job: tablearchive.KindRestoreTable, Phase: tablearchive.PhaseRestore, Table: "Day", Generation: "g1", Total: 100, Started: started},
	} {
		*clock = started
		p.report(r)
		*clock = started.Add(2 * time.Second)
		r.Entities = 10
		p.report(r)
		r.Entities, r.Done = 100, true
		p.report(r)
	}
	// Two entries a phase, and the start of the archive-table job's verify phase: the
	// job had printed, so its next phase is announced at once.
	entries := logs.FilterMessage("progress").All()
	if len(entries) != 7 {
		t.Fatalf("%d progress entries, want 7: %v", len(entries), logs.All())
	}
	var want []string
	for i, e := range entries {
		var keys []string
		for _, f := range e.Context {
			keys = append(keys, f.Key)
		}
		if i == 0 {
			want = keys
		}
		if !slices.Equal(keys, want) || !slices.Contains(keys, "total") || !slices.Contains(keys, "phase") {
			t.Errorf("entry %d has the fields %v, want %v with total and phase", i, keys, want)
		}
	}
}
