package tablearchive

import (
	"slices"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/tablepatterns/tablepatterns/internal/testenv"
)

// Without Options.Progress, every long table job logs its progress in one shape: an Info
// entry "progress" with the job, its phase, the table, the generation, the entities done
// and the total, for the export, the check after it and the restore alike; no other
// progress message.
func TestProgressLogsHaveOneShapeForEveryJob(t *testing.T) {
	t.Parallel()
	b := setup(t, "")
	core, logs := observer.New(zap.InfoLevel)
	a, err := New(b.clients, &Options{Retry: fastRetry(), Logger: zap.New(core), ProgressEvery: 50})
	if err != nil {
		t.Fatal(err)
	}
	const n = 300
	signIns(t, b, b.current, n)
	container := testenv.ContainerName(t)
	if _, err := a.ArchiveTable(b.ctx, ArchiveTableJob{Table: b.current.Name(), Container: container, Sealed: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.RestoreTable(b.ctx, RestoreTableJob{Table: b.current.Name(), Container: container, Target: b.archive.Name()}); err != nil {
		t.Fatal(err)
	}
	keys := []string{"entities", "generation", "job", "phase", "table", "total"}
	phases := map[string][]string{}
	for _, e := range logs.All() {
		if e.Message != "progress" {
			for _, f := range e.Context {
				if f.Key == "entities" && f.Type == zapcore.Int64Type && e.Message != "table archived" && e.Message != "table exported" {
					t.Errorf("a progress line of another shape: %q %v", e.Message, e.ContextMap())
				}
			}
			continue
		}
		m := e.ContextMap()
		got := make([]string, 0, len(m))
		for k := range m {
			got = append(got, k)
		}
		slices.Sort(got)
		if !slices.Equal(got, keys) {
			t.Errorf("progress entry with fields %v, want %v", got, keys)
		}
		job, phase := m["job"].(string), m["phase"].(string)
		if !slices.Contains(phases[job], phase) {
			phases[job] = append(phases[job], phase)
		}
		// Every entity of this test was written within ClockSkew of the export: the
		// check before the delete reads them all.
		if phase != PhaseExport && m["total"].(int64) == 0 {
			t.Errorf("a %s %s entry without its total: %v", job, phase, m)
		}
	}
	if want := []string{PhaseExport, PhaseVerify, PhaseDelete}; !slices.Equal(phases[KindArchiveTable], want) {
		t.Errorf("archive-table logged the phases %v, want %v", phases[KindArchiveTable], want)
	}
	if want := []string{PhaseVerify, PhaseRestore}; !slices.Equal(phases[KindRestoreTable], want) {
		t.Errorf("restore-table logged the phases %v, want %v", phases[KindRestoreTable], want)
	}
}
