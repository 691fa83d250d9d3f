package app_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/internal/testenv"
	"github.com/tablepatterns/tablepatterns/patterns/migrate"
	"github.com/tablepatterns/tablepatterns/queueworker/cmd/archiver/app"
	"github.com/tablepatterns/tablepatterns/repo"
	"github.com/tablepatterns/tablepatterns/repo/account"
)

// worker is the old layout of the migration test: one partition per department.
type worker struct {
	Department string `table:",pk"`
	ID         string `table:",rk"`
	Name       string
	ETag       string `table:",etag"`
}

// workerV2 is the new layout: PartitionKey "b<n>|Department".
type workerV2 struct {
	Partition  string `table:",pk"`
	ID         string `table:",rk"`
	Department string
	Name       string
	ETag       string `table:",etag"`
}

// migrationSpec is the test's migration, built on clients.
func migrationSpec(t *testing.T, clients *account.Clients, src, dst, control string) migrate.Spec[worker, workerV2] {
	t.Helper()
	s, err := repo.New[worker](clients.Tables, src, nil)
	if err != nil {
		t.Fatal(err)
	}
	d, err := repo.New[workerV2](clients.Tables, dst, nil)
	if err != nil {
		t.Fatal(err)
	}
	return migrate.Spec[worker, workerV2]{Name: "workers", Service: clients.Tables, Source: s, Target: d, Control: control,
		Keys:      func(pk, rk string) (string, string, error) { return fmt.Sprintf("b%d|%s", len(rk)%3, pk), rk, nil },
		Transform: func(w worker) (workerV2, error) { return workerV2{Department: w.Department, Name: w.Name}, nil }}
}

func migrationOptions() *migrate.Options {
	return &migrate.Options{Refresh: 50 * time.Millisecond, WriteTimeout: 2 * time.Second, ClockSkew: 20 * time.Millisecond}
}

// workersMigrationBed returns an archiver bed whose table holds n workers spread over
// depts departments and whose archiver knows the migration "workers" (migrationSpec, from
// the bed's table to a new one, with a new control table; both are deleted after the
// test), with the source, target and control table names.
func workersMigrationBed(t *testing.T, n, depts int) (b *indexBed, src, dst, control string) {
	t.Helper()
	b = newIndexBed(t, testenv.ConnectionString(t))
	src, dst, control = b.table, testenv.TableName(t), testenv.TableName(t)
	t.Cleanup(func() {
		for _, n := range []string{dst, control} {
			_, _ = b.clients.Tables.NewClient(n).Delete(context.Background(), nil)
		}
	})
	old, err := repo.New[worker](b.clients.Tables, src, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if err := old.Insert(t.Context(), &worker{Department: fmt.Sprintf("dept%02d", i%depts), ID: fmt.Sprintf("w%d", i), Name: "n"}); err != nil {
			t.Fatal(err)
		}
	}
	b.ext = &app.Extensions{Migrations: map[string]func(*app.Env) (app.Migration, error){
		"workers": func(env *app.Env) (app.Migration, error) {
			o := migrationOptions()
			o.Queue, o.Logger = env.Queue, env.Logger
			return migrate.New(migrationSpec(t, env.Clients, src, dst, control), o)
		},
	}}
	return b, src, dst, control
}

// planWorkers plans the migration of workersMigrationBed on b's clients and returns it.
func planWorkers(t *testing.T, b *indexBed, src, dst, control string) *migrate.Migration[worker, workerV2] {
	t.Helper()
	m, err := migrate.New(migrationSpec(t, b.clients, src, dst, control), migrationOptions())
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Plan(t.Context()); err != nil {
		t.Fatal(err)
	}
	return m
}

// TestEnqueueMigrateDryRunSendsNothingAndRunCopiesEveryEntity: a team's archiver knows a
// migration; `enqueue migrate-backfill -dry-run` prints the jobs and enqueues nothing,
// without -dry-run it enqueues one job per part of the partitions, and `run -drain`
// copies every entity.
func TestEnqueueMigrateDryRunSendsNothingAndRunCopiesEveryEntity(t *testing.T) {
	b, src, dst, control := workersMigrationBed(t, 40, 4)
	m := planWorkers(t, b, src, dst, control)
	for range 2 { // Planned -> DualWrite -> Backfill
		if _, err := m.Advance(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := m.WaitSettled(t.Context()); err != nil {
		t.Fatal(err)
	}
	if code, _, _ := b.archiver("enqueue", "migrate-backfill", "-migration", "nobody"); code != 2 {
		t.Errorf("an unknown migration: exit %d, want 2", code)
	}
	out, _ := b.must("enqueue", "migrate-backfill", "-migration", "workers", "-pk-bound", "dept02", "-dry-run")
	for _, want := range []string{"stage backfill", `partitions [open, "dept02")`, `partitions ["dept02", open)`, "dry run: 2 migrate-backfill jobs not enqueued"} {
		if !strings.Contains(out, want) {
			t.Errorf("dry run output lacks %q:\n%s", want, out)
		}
	}
	if props, err := b.clients.Queues.NewQueueClient(b.queue).GetProperties(t.Context(), nil); err == nil && props.ApproximateMessagesCount != nil && *props.ApproximateMessagesCount != 0 {
		t.Fatalf("the dry run enqueued %d messages", *props.ApproximateMessagesCount)
	}
	out, _ = b.must("enqueue", "migrate-backfill", "-migration", "workers", "-pk-bound", "dept02")
	if !strings.Contains(out, "enqueued 2 migrate-backfill jobs") {
		t.Fatalf("enqueue output:\n%s", out)
	}
	_, stderr := b.drain()
	if !strings.Contains(stderr, "migrate: page done") {
		t.Errorf("run logged no progress:\n%s", stderr)
	}
	raw, err := repo.New[codec.Entity](b.clients.Tables, dst, nil)
	if err != nil {
		t.Fatal(err)
	}
	copies, err := raw.Collect(t.Context(), repo.Query{})
	if err != nil || len(copies) != 40 {
		t.Fatalf("%d copies after the run (%v), want 40", len(copies), err)
	}
}
