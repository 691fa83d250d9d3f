package app_test

import (
	"context"
	"errors"
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

// namedWorker is the latest shape (version 2) of the schema test: version 1 held Name,
// version 2 splits it into First and Last.
type namedWorker struct {
	Department string `table:",pk"`
	ID         string `table:",rk"`
	First      string
	Last       string
	ETag       string `table:",etag"`
}

// namesSchema is the test's staged schema evolution of table, built on clients.
func namesSchema(t *testing.T, clients *account.Clients, table, control string, o *migrate.SchemaOptions) *migrate.Schema[namedWorker] {
	t.Helper()
	tb, err := repo.New[namedWorker](clients.Tables, table, nil)
	if err != nil {
		t.Fatal(err)
	}
	up := func(e *codec.Entity) error {
		name, _ := e.Properties["Name"].(string)
		first, last, ok := strings.Cut(name, " ")
		if !ok {
			return errors.New("a Name without a space")
		}
		e.Properties["First"], e.Properties["Last"] = first, last
		delete(e.Properties, "Name")
		return nil
	}
	down := func(e *codec.Entity) error {
		first, _ := e.Properties["First"].(string)
		last, _ := e.Properties["Last"].(string)
		e.Properties["Name"] = first + " " + last
		delete(e.Properties, "First")
		delete(e.Properties, "Last")
		return nil
	}
	if o == nil {
		o = &migrate.SchemaOptions{}
	}
	o.Refresh, o.WriteTimeout, o.ClockSkew = 50*time.Millisecond, 2*time.Second, 20*time.Millisecond
	s, err := migrate.NewSchema(migrate.SchemaSpec[namedWorker]{Name: "names", Service: clients.Tables, Table: tb, Control: control,
		Upgrades: []func(*codec.Entity) error{up}, Downgrades: []func(*codec.Entity) error{down}}, o)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestArchiverRunsAStagedSchemaMigrationsRewriteAndDowngrade: a team's archiver knows a
// staged schema evolution (migrate.Schema) as it knows a re-keying. At Backfill,
// `enqueue migrate-schema-rewrite` (split by -pk-bound) and `run -drain` rewrite every
// entity to the latest version; a re-keying's job kind is refused for it before any
// message is sent; `migrate abort` and `enqueue migrate-schema-downgrade` with `run
// -drain` bring every entity back to version 1 with its value. `migrate abort` and
// `migrate advance` name the schema job kinds whose work they leave or run, never a
// re-keying's.
func TestArchiverRunsAStagedSchemaMigrationsRewriteAndDowngrade(t *testing.T) {
	cs := testenv.ConnectionString(t)
	b := newIndexBed(t, cs)
	control := testenv.TableName(t)
	t.Cleanup(func() { _, _ = b.clients.Tables.NewClient(control).Delete(context.Background(), nil) })
	raw, err := repo.New[codec.Entity](b.clients.Tables, b.table, nil)
	if err != nil {
		t.Fatal(err)
	}
	const n = 12
	for i := range n {
		e := codec.Entity{PartitionKey: fmt.Sprintf("dept%02d", i%3), RowKey: fmt.Sprintf("w%02d", i),
			Properties: map[string]any{"Name": fmt.Sprintf("First%d Last%d", i, i)}}
		if err := raw.Insert(t.Context(), &e); err != nil {
			t.Fatal(err)
		}
	}
	b.ext = &app.Extensions{Migrations: map[string]func(*app.Env) (app.Migration, error){
		"names": func(env *app.Env) (app.Migration, error) {
			return namesSchema(t, env.Clients, b.table, control, &migrate.SchemaOptions{Queue: env.Queue, Logger: env.Logger}), nil
		},
	}}
	if err := namesSchema(t, b.clients, b.table, control, nil).Plan(t.Context()); err != nil {
		t.Fatal(err)
	}
	b.must("migrate", "advance", "-migration", "names")
	out, _ := b.must("migrate", "advance", "-migration", "names")
	if !strings.Contains(out, "stage backfill") {
		t.Fatalf("after two advances:\n%s", out)
	}
	if code, out, stderr := b.archiver("enqueue", migrate.KindBackfill, "-migration", "names"); code == 0 {
		t.Errorf("enqueue %s for a schema migration: exit 0, want a refusal\n%s\n%s", migrate.KindBackfill, out, stderr)
	}
	queued := func() int32 {
		t.Helper()
		props, err := b.clients.Queues.NewQueueClient(b.queue).GetProperties(t.Context(), nil)
		if err != nil || props.ApproximateMessagesCount == nil {
			return 0 // no queue yet: nothing sent
		}
		return *props.ApproximateMessagesCount
	}
	if c := queued(); c != 0 {
		t.Fatalf("the refused enqueue sent %d messages", c)
	}
	out, _ = b.must("enqueue", migrate.KindSchemaRewrite, "-migration", "names", "-pk-bound", "dept01")
	if !strings.Contains(out, "enqueued 2 "+migrate.KindSchemaRewrite+" jobs") {
		t.Errorf("enqueue output:\n%s", out)
	}
	b.drain()
	versions := func(want int) {
		t.Helper()
		rows, err := raw.Collect(t.Context(), repo.Query{})
		if err != nil {
			t.Fatal(err)
		}
		if len(rows) != n {
			t.Fatalf("%d entities, want %d", len(rows), n)
		}
		for _, e := range rows {
			v, _ := e.Properties[migrate.DefaultVersionProperty].(int32)
			if v == 0 {
				v = 1
			}
			var i int
			fmt.Sscanf(e.RowKey, "w%d", &i)
			name := fmt.Sprintf("First%d Last%d", i, i)
			switch {
			case int(v) != want:
				t.Errorf("[%s %s] at version %d, want %d", e.PartitionKey, e.RowKey, v, want)
			case want == 2 && (e.Properties["First"] != fmt.Sprintf("First%d", i) || e.Properties["Last"] != fmt.Sprintf("Last%d", i) || e.Properties["Name"] != nil):
				t.Errorf("[%s %s] at version 2 holds %v", e.PartitionKey, e.RowKey, e.Properties)
			case want == 1 && (e.Properties["Name"] != name || e.Properties["First"] != nil):
				t.Errorf("[%s %s] at version 1 holds %v", e.PartitionKey, e.RowKey, e.Properties)
			}
		}
	}
	versions(2)
	out, _ = b.must("migrate", "abort", "-migration", "names")
	if !strings.Contains(out, "enqueue "+migrate.KindSchemaDowngrade+" first") || strings.Contains(out, migrate.KindAbort) {
		t.Errorf("abort of a schema migration names the job to enqueue other than %s:\n%s", migrate.KindSchemaDowngrade, out)
	}
	b.must("enqueue", migrate.KindSchemaDowngrade, "-migration", "names")
	b.drain()
	versions(1)
	out, _ = b.must("migrate", "advance", "-migration", "names")
	if !strings.Contains(out, "runs its "+migrate.KindSchemaDowngrade+" work") || !strings.Contains(out, "stage aborted") {
		t.Errorf("advance of a schema migration from aborting names the work it runs other than %s, or did not end it:\n%s", migrate.KindSchemaDowngrade, out)
	}
}
