package migrate

import (
	"errors"
	"strings"
	"testing"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/patterns/internal/testbed"
	"github.com/tablepatterns/tablepatterns/repo"
)

// TestForgedSchemaJobsRefusedBeforeAnyRequest: schema jobs read from a queue are
// validated first: a re-keying kind, another migration, a phase, a range or checkpoint
// that does not validate; and a staged migration refuses the unstaged Rewrite.
func TestForgedSchemaJobsRefusedBeforeAnyRequest(t *testing.T) {
	t.Parallel()
	f := setupStaged(t, true, 0)
	before := f.b.Proxy().Count()
	for _, j := range []Job{
		{Migration: stagedName, Kind: KindBackfill},
		{Migration: stagedName, Kind: "migrate-schema-everything"},
		{Migration: "Bad Name", Kind: KindSchemaRewrite},
		{Migration: "another", Kind: KindSchemaRewrite},
		{Migration: stagedName, Kind: KindSchemaVerify, Phase: phaseTarget},
		{Migration: stagedName, Kind: KindSchemaDowngrade, PartitionKeyFrom: "b", PartitionKeyTo: "a"},
		{Migration: stagedName, Kind: KindSchemaRewrite, After: &Key{PartitionKey: strings.Repeat("x", 2000)}},
		{Migration: stagedName, Kind: KindSchemaRewrite, PartitionKeyFrom: "b", After: &Key{PartitionKey: "a"}},
	} {
		if _, _, err := f.s.RunJob(f.b.Ctx, j); !isInvalid(err) {
			t.Errorf("%+v: RunJob = %v, want ErrInvalidInput", j, err)
		}
	}
	if _, _, err := f.s.Rewrite(f.b.Ctx, "", "", ""); !isInvalid(err) {
		t.Errorf("Rewrite of a staged migration = %v, want ErrInvalidInput", err)
	}
	if n := f.b.Proxy().Count() - before; n != 0 {
		t.Errorf("%d requests sent for refused jobs", n)
	}
}

// TestForgedSchemaVersionsRefusedAndLeftByEveryJob: an entity whose version property is
// not a version from 1 to the latest (written by newer code, or forged) is refused on
// read, counted unknown and left as it is by the rewrite, verify and the abort's
// downgrade, while every other entity goes through them.
func TestForgedSchemaVersionsRefusedAndLeftByEveryJob(t *testing.T) {
	t.Parallel()
	f := setupStaged(t, false, 0)
	_, md := f.planned(t, 6, 2)
	forged := []any{int32(3), "2", int32(0)}
	for i, v := range forged {
		e := &codec.Entity{PartitionKey: "dept00", RowKey: "forged" + string(rune('a'+i)), Properties: map[string]any{DefaultVersionProperty: v, "Name": "X Y"}}
		if err := f.b.Raw.Insert(f.b.Ctx, e); err != nil {
			t.Fatal(err)
		}
		if _, err := f.s.Get(f.b.Ctx, e.PartitionKey, e.RowKey); !isInvalid(err) {
			t.Errorf("version %v: Get = %v, want ErrInvalidInput", v, err)
		}
	}
	mustBeLeft := func(when string) {
		t.Helper()
		for i, v := range forged {
			e, err := f.b.Raw.Get(f.b.Ctx, "dept00", "forged"+string(rune('a'+i)))
			if err != nil || e.Properties[DefaultVersionProperty] != v || e.Properties["Name"] != "X Y" {
				t.Errorf("%s: forged version %v: %v, %v", when, v, e.Properties, err)
			}
		}
	}
	f.advanceTo(t, Verify)
	mustBeLeft("after the rewrite")
	if _, err := f.s.WaitSettled(f.b.Ctx); err != nil {
		t.Fatal(err)
	}
	rep, err := f.s.RunAll(f.b.Ctx, KindSchemaVerify)
	if err != nil || rep.Unknown != len(forged) || rep.Stale != 0 {
		t.Fatalf("verify = %+v, %v; want %d unknown, none stale", rep, err, len(forged))
	}
	if _, err := f.s.Abort(f.b.Ctx); err != nil {
		t.Fatal(err)
	}
	f.advanceTo(t, Aborted)
	mustBeLeft("after the downgrade")
	for i := range forged {
		if err := f.b.Raw.Delete(f.b.Ctx, "dept00", "forged"+string(rune('a'+i)), nil); err != nil {
			t.Fatal(err)
		}
	}
	f.mustHoldAt(t, md, 1)
}

// TestVerifyCountsEntitiesBelowTheLatestVersionByPartitionAndUpgradesThem: entities
// written at an older version behind the migration's back after the rewrite (a process
// that broke the staleness bound, or a restore) are counted by partition and by keys,
// never values, and upgraded.
func TestVerifyCountsEntitiesBelowTheLatestVersionByPartitionAndUpgradesThem(t *testing.T) {
	t.Parallel()
	f := setupStaged(t, false, 0)
	_, md := f.planned(t, 6, 2)
	f.advanceTo(t, Verify)
	for _, rk := range []string{"emp000001", "emp000003"} {
		e := &codec.Entity{PartitionKey: "dept01", RowKey: rk, Properties: map[string]any{"Name": "F" + rk + " L", "Seq": int64(5)}}
		if err := f.b.Raw.Upsert(f.b.Ctx, e, nil); err != nil {
			t.Fatal(err)
		}
		md.set("dept01", rk, 5)
	}
	if _, err := f.s.WaitSettled(f.b.Ctx); err != nil {
		t.Fatal(err)
	}
	rep, err := f.s.RunAll(f.b.Ctx, KindSchemaVerify)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Stale != 2 || rep.Partitions["dept01"] != 2 || len(rep.Keys) != 2 || rep.Rewritten != 2 {
		t.Errorf("verify = %+v, want 2 stale in dept01, both rewritten", rep)
	}
	f.mustHoldAt(t, md, 2)
}

// TestSchemaAndReKeyingMigrationsOfOneTableRefusedAtOnce: a schema migration and a
// re-keying migration of one table share its state record: while one has not ended the
// other's Plan meets ErrInProgress, as does a second schema migration.
func TestSchemaAndReKeyingMigrationsOfOneTableRefusedAtOnce(t *testing.T) {
	t.Parallel()
	f := setupStaged(t, false, 0)
	if err := f.s.Plan(f.b.Ctx); err != nil {
		t.Fatal(err)
	}
	if err := f.newSchema(t, "another-shape", true, 0).Plan(f.b.Ctx); !errors.Is(err, ErrInProgress) {
		t.Errorf("a second schema migration: Plan = %v, want ErrInProgress", err)
	}
	src := mustTableOn[Employee](t, f, f.b.Table)
	tgt := mustTableOn[EmployeeV2](t, f, f.b.NewTableName())
	m, err := New(Spec[Employee, EmployeeV2]{Name: "hash-departments", Service: f.b.Clients.Tables, Source: src, Target: tgt,
		Keys: hashKeys, Transform: upgrade, Control: f.control}, testOptions())
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Plan(f.b.Ctx); !errors.Is(err, ErrInProgress) {
		t.Errorf("a re-keying migration while the schema one runs: Plan = %v, want ErrInProgress", err)
	}

	// The other way round, on another table.
	g := setupStaged(t, false, 0)
	src = mustTableOn[Employee](t, g, g.b.Table)
	if m, err = New(Spec[Employee, EmployeeV2]{Name: "hash-departments", Service: g.b.Clients.Tables, Source: src, Target: tgt,
		Keys: hashKeys, Transform: upgrade, Control: g.control}, testOptions()); err != nil {
		t.Fatal(err)
	}
	if err := m.Plan(g.b.Ctx); err != nil {
		t.Fatal(err)
	}
	if err := g.s.Plan(g.b.Ctx); !errors.Is(err, ErrInProgress) {
		t.Errorf("a schema migration while the re-keying one runs: Plan = %v, want ErrInProgress", err)
	}
}

func mustTableOn[T any](t testing.TB, f *stagedFix, name string) *repo.Table[T] {
	t.Helper()
	tb, err := repo.New[T](f.b.Clients.Tables, name, f.b.RepoOptions())
	if err != nil {
		t.Fatal(err)
	}
	return tb
}

// TestInvalidSchemaSpecRefused: NewSchema refuses a staged spec it cannot run, with the
// field named, before any request.
func TestInvalidSchemaSpecRefused(t *testing.T) {
	t.Parallel()
	f := setupStaged(t, false, 0)
	up := []func(*codec.Entity) error{func(*codec.Entity) error { return nil }}
	good := SchemaSpec[EmployeeSplit]{Service: f.b.Clients.Tables, Table: testbed.NewTable[EmployeeSplit](f.b, nil), Upgrades: up, Downgrades: up, Name: "ok"}
	for name, c := range map[string]struct {
		mut   func(*SchemaSpec[EmployeeSplit], *SchemaOptions)
		field string
	}{
		"name":             {func(s *SchemaSpec[EmployeeSplit], _ *SchemaOptions) { s.Name = "Has Space" }, "SchemaSpec.Name"},
		"downgrades count": {func(s *SchemaSpec[EmployeeSplit], _ *SchemaOptions) { s.Downgrades = append(up, up...) }, "SchemaSpec.Downgrades"},
		"nil downgrade":    {func(s *SchemaSpec[EmployeeSplit], _ *SchemaOptions) { s.Downgrades = []func(*codec.Entity) error{nil} }, "SchemaSpec.Downgrades"},
		"page size":        {func(_ *SchemaSpec[EmployeeSplit], o *SchemaOptions) { o.PageSize = 1001 }, "SchemaOptions.PageSize"},
	} {
		spec, opts := good, SchemaOptions{}
		c.mut(&spec, &opts)
		if _, err := NewSchema(spec, &opts); !isInvalid(err) || !strings.Contains(err.Error(), c.field) {
			t.Errorf("%s: NewSchema = %v, want ErrInvalidInput naming %s", name, err, c.field)
		}
	}
	if _, err := NewSchema(good, nil); err != nil {
		t.Errorf("a valid spec: %v", err)
	}
}
