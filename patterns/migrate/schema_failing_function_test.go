package migrate

import (
	"errors"
	"testing"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/patterns/internal/testbed"
	"github.com/tablepatterns/tablepatterns/patterns/migrate/internal/employees"
)

// refusedKey is the one entity whose upgrade or downgrade the functions below refuse.
const refusedKey = "emp000001"

// withFailingFunctions replaces f.s by the same migration whose upgrade (upgradeFails)
// or downgrade refuses one entity, refusedKey.
func (f *stagedFix) withFailingFunctions(t testing.TB, upgradeFails bool) {
	t.Helper()
	refuse := func(fn func(*codec.Entity) error) func(*codec.Entity) error {
		return func(e *codec.Entity) error {
			if e.RowKey == refusedKey {
				return errors.New("this entity cannot be converted")
			}
			return fn(e)
		}
	}
	up, down := employees.SplitName, employees.JoinName
	if upgradeFails {
		up = refuse(up)
	} else {
		down = refuse(down)
	}
	o := testOptions()
	s, err := NewSchema(SchemaSpec[EmployeeSplit]{Service: f.b.Clients.Tables, Table: testbed.NewTable[EmployeeSplit](f.b, nil),
		Upgrades: []func(*codec.Entity) error{up}, Downgrades: []func(*codec.Entity) error{down}, Name: stagedName, Control: f.control},
		&SchemaOptions{Refresh: o.Refresh, WriteTimeout: o.WriteTimeout, ClockSkew: o.ClockSkew, Retry: o.Retry})
	if err != nil {
		t.Fatal(err)
	}
	f.s = s
}

// advanceOrStop advances until stage, or until Advance refuses (returned false).
func (f *stagedFix) advanceOrStop(t testing.TB, stage Stage) bool {
	t.Helper()
	for {
		st, err := f.s.Status(f.b.Ctx)
		if err != nil {
			t.Fatal(err)
		}
		if st.Stage == stage {
			return true
		}
		if _, err := f.s.Advance(f.b.Ctx); err != nil {
			t.Logf("Advance from %s refused: %v", st.Stage, err)
			return false
		}
	}
}

// TestSchemaCutOverNeverReachedWithAnEntityBelowTheLatest: from CutOver on "nothing of
// the old shape is left to serve" and every live entity ends at the latest version. An
// upgrade that fails for one entity leaves it at the from version through the rewrite
// and verify; Advance must not take the migration past Verify as if it were done.
func TestSchemaCutOverNeverReachedWithAnEntityBelowTheLatest(t *testing.T) {
	t.Parallel()
	f := setupStaged(t, false, 0)
	f.withFailingFunctions(t, true)
	f.planned(t, 4, 2)
	if !f.advanceOrStop(t, CutOver) {
		return
	}
	if got := f.storedVersion(t, "dept01", refusedKey); got != f.s.Latest() {
		t.Errorf("Advance reached CutOver with (dept01, %s) stored at version %d, want %d or Advance refused", refusedKey, got, f.s.Latest())
	}
}

// TestSchemaAbortNeverEndsWithAnEntityAtTheLatestVersion: an abort before CleanUp leaves
// every live entity at the version the migration started from. A downgrade that fails
// for one entity leaves it at the latest version; Advance must not record Aborted (the
// processes of the from version's code then read the table) as if the abort were done.
func TestSchemaAbortNeverEndsWithAnEntityAtTheLatestVersion(t *testing.T) {
	t.Parallel()
	f := setupStaged(t, false, 0)
	f.withFailingFunctions(t, false)
	f.planned(t, 4, 2)
	f.advanceTo(t, Verify) // Backfill's rewrite stored every entity at the latest version
	if _, err := f.s.Abort(f.b.Ctx); err != nil {
		t.Fatal(err)
	}
	if !f.advanceOrStop(t, Aborted) {
		return
	}
	if got := f.storedVersion(t, "dept01", refusedKey); got != f.s.from() {
		t.Errorf("Advance recorded Aborted with (dept01, %s) stored at version %d, want %d or Advance refused", refusedKey, got, f.s.from())
	}
}
