package app_test

import (
	"context"
	"testing"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/internal/testenv"
	"github.com/tablepatterns/tablepatterns/patterns/migrate"
	"github.com/tablepatterns/tablepatterns/queueworker/cmd/archiver/app"
	"github.com/tablepatterns/tablepatterns/repo"
)

// TestArchiverEnqueuesAStagedSchemaMigrationsJobs: a staged schema migration
// (migrate.Schema with a Name) is a migration of the archiver's extension point (it has
// Register, Jobs, Status, Advance and Abort), and `archiver run` registers its handlers.
// Its range jobs must be enqueueable like a re-keying migration's (`archiver enqueue
// migrate-* -migration NAME`), so that workers share its rewrite before Advance's pass.
func TestArchiverEnqueuesAStagedSchemaMigrationsJobs(t *testing.T) {
	cs := testenv.ConnectionString(t)
	b := newIndexBed(t, cs)
	control := testenv.TableName(t)
	t.Cleanup(func() { _, _ = b.clients.Tables.NewClient(control).Delete(context.Background(), nil) })
	same := func(e *codec.Entity) error { return nil }
	build := func(env *app.Env) (*migrate.Schema[worker], error) {
		tb, err := repo.New[worker](env.Clients.Tables, b.table, nil)
		if err != nil {
			return nil, err
		}
		o := migrationOptions()
		return migrate.NewSchema(migrate.SchemaSpec[worker]{Service: env.Clients.Tables, Table: tb, Name: "shapes", Control: control,
			Upgrades: []func(*codec.Entity) error{same}, Downgrades: []func(*codec.Entity) error{same}},
			&migrate.SchemaOptions{Refresh: o.Refresh, WriteTimeout: o.WriteTimeout, ClockSkew: o.ClockSkew, Queue: env.Queue, Logger: env.Logger})
	}
	b.ext = &app.Extensions{Migrations: map[string]func(*app.Env) (app.Migration, error){
		"shapes": func(env *app.Env) (app.Migration, error) { return build(env) },
	}}
	s, err := build(&app.Env{Clients: b.clients})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Plan(t.Context()); err != nil {
		t.Fatal(err)
	}
	b.must("migrate", "advance", "-migration", "shapes")
	b.must("migrate", "advance", "-migration", "shapes")
	if code, out, stderr := b.archiver("enqueue", migrate.KindSchemaRewrite, "-migration", "shapes"); code != 0 {
		t.Errorf("enqueue %s at Backfill: exit %d, want 0\n%s\n%s", migrate.KindSchemaRewrite, code, out, stderr)
	}
}
