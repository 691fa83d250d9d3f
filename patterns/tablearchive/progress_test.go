package tablearchive

import (
	"sync"
	"testing"

	"github.com/tablepatterns/tablepatterns/internal/testenv"
)

// Options.Progress sees an export and a restore advance from a first report entity by
// entity (chunk by chunk for the restore) to a Done report that counts every entity,
// under the job's table and generation.
func TestProgressReportsExportAndRestore(t *testing.T) {
	t.Parallel()
	b := setup(t, "")
	var mu sync.Mutex
	var got []Progress
	a, err := New(b.clients, &Options{Retry: fastRetry(), Progress: func(p Progress) {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, p)
	}})
	if err != nil {
		t.Fatal(err)
	}
	const n = 300
	signIns(t, b, b.current, n)
	container := testenv.ContainerName(t)
	rep, err := a.ArchiveTable(b.ctx, ArchiveTableJob{Table: b.current.Name(), Container: container, Sealed: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.RestoreTable(b.ctx, RestoreTableJob{Table: b.current.Name(), Container: container, Target: b.archive.Name()}); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	var export, restore []Progress
	for _, p := range got {
		if p.Phase != PhaseExport && p.Phase != PhaseRestore {
			continue
		}
		switch p.Job {
		case KindArchiveTable:
			export = append(export, p)
		case KindRestoreTable:
			restore = append(restore, p)
		default:
			t.Fatalf("report of job %q", p.Job)
		}
	}
	check := func(name string, ps []Progress, table string, total int64, wantReports int) {
		t.Helper()
		if len(ps) != wantReports {
			t.Fatalf("%s: %d reports, want %d", name, len(ps), wantReports)
		}
		for i, p := range ps {
			if p.Table != table || p.Generation != rep.Manifest.Generation || p.Total != total || p.Started.IsZero() || p.Started != ps[0].Started {
				t.Fatalf("%s report %d: %+v", name, i, p)
			}
			if i > 0 && p.Entities < ps[i-1].Entities {
				t.Fatalf("%s: entities went back from %d to %d", name, ps[i-1].Entities, p.Entities)
			}
			if p.Done != (i == len(ps)-1) {
				t.Fatalf("%s report %d of %d: Done %v", name, i, len(ps), p.Done)
			}
		}
		if last := ps[len(ps)-1]; last.Entities != n {
			t.Fatalf("%s: the last report counts %d entities, want %d", name, last.Entities, n)
		}
	}
	check("export", export, b.current.Name(), 0, n+2) // the start, every entity, then Done
	check("restore", restore, b.archive.Name(), n, 3) // the start, one window (fewer than restoreWindow), then Done
}
