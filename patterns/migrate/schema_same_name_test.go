package migrate

import (
	"testing"
)

// TestSchemaAndReKeyingMigrationsOfOneTableRefusedAtOnceUnderOneName: a schema
// migration and a re-keying migration of one table are refused at once (ErrInProgress).
// A same-table re-keying that happens to carry the schema migration's name must be
// refused too: the schema migration's Advance must never move the re-keying's record
// (it would skip the backfill and clean-up only the re-keying runs).
func TestSchemaAndReKeyingMigrationsOfOneTableRefusedAtOnceUnderOneName(t *testing.T) {
	t.Parallel()
	f := setupStaged(t, false, 0)
	src := mustTableOn[Employee](t, f, f.b.Table)
	tgt := mustTableOn[EmployeeV2](t, f, f.b.Table)
	m, err := New(Spec[Employee, EmployeeV2]{Name: stagedName, Service: f.b.Clients.Tables, Source: src, Target: tgt,
		Keys: hashKeys, Transform: upgrade, Control: f.control}, testOptions())
	if err != nil {
		t.Fatal(err)
	}
	if err := src.CreateIfNotExists(f.b.Ctx); err != nil {
		t.Fatal(err)
	}
	if err := m.Plan(f.b.Ctx); err != nil {
		t.Fatal(err)
	}
	st, err := f.s.Advance(f.b.Ctx)
	if err == nil {
		t.Errorf("the schema migration advanced the re-keying migration of its table to %s, want it refused", st.Stage)
	}
	if now, err := m.Status(f.b.Ctx); err != nil || now.Stage != Planned {
		t.Errorf("the re-keying migration's record = %s, %v; want it left at planned", now.Stage, err)
	}
}
