package migrate

import (
	"testing"
)

// TestSchemaWritesTheLatestOnceDoneEvenAfterAnotherMigrationOfTheTableEnded: a staged
// schema migration at Done writes the latest version for good ("CutOver, CleanUp, Done:
// the latest"). The table's state record is shared: once another migration of the table
// (another name) has run and ended, the Done migration's processes must still write the
// latest, never the version before it.
func TestSchemaWritesTheLatestOnceDoneEvenAfterAnotherMigrationOfTheTableEnded(t *testing.T) {
	t.Parallel()
	f := setupStaged(t, false, 0)
	f.planned(t, 4, 2)
	f.advanceTo(t, Done)
	if _, err := f.s.WaitSettled(f.b.Ctx); err != nil {
		t.Fatal(err)
	}
	v := &EmployeeSplit{Department: "dept00", EmployeeID: "emp000000", FirstName: "Femp000000", LastName: "L", Seq: 2}
	if err := f.s.Upsert(f.b.Ctx, v); err != nil {
		t.Fatal(err)
	}
	if got := f.storedVersion(t, "dept00", "emp000000"); got != f.s.Latest() {
		t.Fatalf("Upsert at Done stored version %d, want %d", got, f.s.Latest())
	}

	other := f.newSchema(t, "another-evolution", true, 0)
	if err := other.Plan(f.b.Ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := other.Abort(f.b.Ctx); err != nil {
		t.Fatal(err)
	}
	for {
		st, err := other.Advance(f.b.Ctx)
		if err != nil {
			t.Fatal(err)
		}
		if st.Stage == Aborted {
			break
		}
	}
	if _, err := other.WaitSettled(f.b.Ctx); err != nil {
		t.Fatal(err)
	}

	v.Seq = 3
	if err := f.s.Upsert(f.b.Ctx, v); err != nil {
		t.Fatal(err)
	}
	if got := f.storedVersion(t, "dept00", "emp000000"); got != f.s.Latest() {
		t.Errorf("Upsert through the Done migration after another migration of the table ended stored version %d, want %d", got, f.s.Latest())
	}
}
