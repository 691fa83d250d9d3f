package app_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/tablepatterns/tablepatterns/internal/testenv"
	"github.com/tablepatterns/tablepatterns/patterns/migrate"
	"github.com/tablepatterns/tablepatterns/queueworker/cmd/archiver/app"
	"github.com/tablepatterns/tablepatterns/repo"
)

// TestMigrateStatusPrintsTheBackfillProgressSummedOverTheWorkers: an operator enqueues
// a backfill split in two, the workers run it, and `migrate status` prints, under the
// stage, a progress line for the backfill: both ranges done of two, every entity
// scanned and copied.
func TestMigrateStatusPrintsTheBackfillProgressSummedOverTheWorkers(t *testing.T) {
	cs := testenv.ConnectionString(t)
	b := newIndexBed(t, cs)
	src, dst, control := b.table, testenv.TableName(t), testenv.TableName(t)
	t.Cleanup(func() {
		for _, n := range []string{dst, control} {
			_, _ = b.clients.Tables.NewClient(n).Delete(context.Background(), nil)
		}
	})
	old, err := repo.New[worker](b.clients.Tables, src, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 30 {
		if err := old.Insert(t.Context(), &worker{Department: fmt.Sprintf("dept%02d", i%3), ID: fmt.Sprintf("w%d", i), Name: "n"}); err != nil {
			t.Fatal(err)
		}
	}
	b.ext = &app.Extensions{Migrations: map[string]func(*app.Env) (app.Migration, error){
		"workers": func(env *app.Env) (app.Migration, error) {
			o := migrationOptions()
			o.Queue, o.Logger, o.PageSize = env.Queue, env.Logger, 7
			return migrate.New(migrationSpec(t, env.Clients, src, dst, control), o)
		},
	}}
	m, err := migrate.New(migrationSpec(t, b.clients, src, dst, control), migrationOptions())
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Plan(t.Context()); err != nil {
		t.Fatal(err)
	}
	for range 2 { // Planned -> DualWrite -> Backfill
		if _, err := m.Advance(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := m.WaitSettled(t.Context()); err != nil {
		t.Fatal(err)
	}
	b.must("enqueue", migrate.KindBackfill, "-migration", "workers", "-pk-bound", "dept01")
	b.drain()
	out, _ := b.must("migrate", "status", "-migration", "workers")
	if !strings.Contains(out, "migration workers: stage backfill since ") {
		t.Errorf("status lacks the stage line:\n%s", out)
	}
	if want := "progress migrate-backfill: ranges done/started/total 2/2/2; scanned 30, copied 30\n"; !strings.Contains(out, want) {
		t.Errorf("status lacks %q:\n%s", want, out)
	}
}
