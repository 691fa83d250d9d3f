package app_test

import (
	"regexp"
	"strings"
	"testing"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/patterns/migrate"
	"github.com/tablepatterns/tablepatterns/queueworker/cmd/archiver/app"
	"github.com/tablepatterns/tablepatterns/repo"
)

// TestMigrateCommandsShowAdvanceAndAbortAMigration: an operator takes a team's
// migration through its stages with the archiver alone. `migrate status` prints the
// stage, since when and the stage before; `migrate advance` moves it one stage on,
// running the stage's work in the process with a progress line per page; `migrate
// abort` turns it back; `enqueue migrate-abort` is refused until the migration is
// aborting (a worker would cancel the jobs), and accepted after. Unknown migrations and
// subcommands exit 2 before any request.
func TestMigrateCommandsShowAdvanceAndAbortAMigration(t *testing.T) {
	b, src, dst, control := workersMigrationBed(t, 12, 3)
	for _, args := range [][]string{{"migrate", "status", "-migration", "nobody"}, {"migrate", "warp", "-migration", "workers"}, {"migrate", "status"}, {"migrate"}} {
		if code, _, stderr := b.archiver(args...); code != app.ExitUsage {
			t.Errorf("%q: exit %d, want %d\n%s", args, code, app.ExitUsage, stderr)
		}
	}
	planWorkers(t, b, src, dst, control)
	stage := func(out, stage, from string) {
		t.Helper()
		re := regexp.MustCompile(`migration workers: stage ` + stage + ` since \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ \(from ` + regexp.QuoteMeta(from) + `\)`)
		if !re.MatchString(out) {
			t.Errorf("output lacks stage %s from %s:\n%s", stage, from, out)
		}
	}
	out, _ := b.must("migrate", "status", "-migration", "workers")
	stage(out, "planned", "none (not planned)")
	code, out, stderr := b.archiver("enqueue", migrate.KindAbort, "-migration", "workers")
	if code != app.ExitFailed || !strings.Contains(stderr, "not aborting") {
		t.Errorf("enqueue migrate-abort at Planned: exit %d, want %d saying it is not aborting\n%s\n%s", code, app.ExitFailed, out, stderr)
	}
	if props, err := b.clients.Queues.NewQueueClient(b.queue).GetProperties(t.Context(), nil); err == nil && props.ApproximateMessagesCount != nil && *props.ApproximateMessagesCount != 0 {
		t.Fatalf("the refused enqueue sent %d messages", *props.ApproximateMessagesCount)
	}
	out, _ = b.must("migrate", "advance", "-migration", "workers")
	stage(out, "dualwrite", "planned")
	out, _ = b.must("migrate", "advance", "-migration", "workers")
	stage(out, "backfill", "dualwrite")
	out, stderr = b.must("migrate", "advance", "-migration", "workers")
	stage(out, "verify", "backfill")
	if !strings.Contains(out, "runs its migrate-backfill work") || !strings.Contains(stderr, "migrate: page done") {
		t.Errorf("advance from backfill shows no progress:\n%s\n%s", out, stderr)
	}
	raw, err := repo.New[codec.Entity](b.clients.Tables, dst, nil)
	if err != nil {
		t.Fatal(err)
	}
	if copies, err := raw.Collect(t.Context(), repo.Query{}); err != nil || len(copies) != 12 {
		t.Fatalf("%d copies after advance from backfill (%v), want 12", len(copies), err)
	}
	out, _ = b.must("migrate", "abort", "-migration", "workers")
	stage(out, "aborting", "verify")
	if out, _ = b.must("migrate", "abort", "-migration", "workers"); !strings.Contains(out, "already aborting") {
		t.Errorf("a second abort:\n%s", out)
	}
	if out, _ = b.must("enqueue", migrate.KindAbort, "-migration", "workers"); !strings.Contains(out, "enqueued 1 migrate-abort jobs") {
		t.Errorf("enqueue migrate-abort at Aborting:\n%s", out)
	}
	out, _ = b.must("migrate", "advance", "-migration", "workers")
	stage(out, "aborted", "aborting")
	if copies, err := raw.Collect(t.Context(), repo.Query{}); err != nil || len(copies) != 0 {
		t.Fatalf("%d copies after the abort (%v), want none", len(copies), err)
	}
	if out, _ = b.must("migrate", "advance", "-migration", "workers"); !strings.Contains(out, "nothing to advance") {
		t.Errorf("advance after Aborted:\n%s", out)
	}
	// Once clean-up began the old layout is being removed: abort is refused, a failure
	// read from the record (exit 1), not a bad command line. The record is set to
	// CleanUp directly (a legal record), rather than through five settle waits.
	ctl, err := repo.New[codec.Entity](b.clients.Tables, control, nil)
	if err != nil {
		t.Fatal(err)
	}
	rec, err := ctl.Get(t.Context(), strings.ToLower(src), "migration")
	if err != nil {
		t.Fatal(err)
	}
	rec.Properties["Stage"], rec.Properties["Previous"] = "cleanup", "cutover"
	if err := ctl.Update(t.Context(), &rec, nil); err != nil {
		t.Fatal(err)
	}
	code, out, stderr = b.archiver("migrate", "abort", "-migration", "workers")
	if code != app.ExitFailed || !strings.Contains(stderr, "the old layout is being removed") {
		t.Errorf("abort at CleanUp: exit %d, want %d saying why\n%s\n%s", code, app.ExitFailed, out, stderr)
	}
}
