package migrate

import (
	"testing"
)

// storedVersion reads the entity (pk, rk) as stored and returns its schema version.
func (f *stagedFix) storedVersion(t testing.TB, pk, rk string) int {
	t.Helper()
	e, err := f.b.Raw.Get(f.b.Ctx, pk, rk)
	if err != nil {
		t.Fatal(err)
	}
	v, err := f.s.version(&e)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// abortedAndSettled takes a planned staged migration through Backfill, aborts it, runs
// the downgrade to Aborted and waits until every process follows Aborted.
func (f *stagedFix) abortedAndSettled(t testing.TB) {
	t.Helper()
	f.advanceTo(t, Backfill)
	if _, err := f.s.Abort(f.b.Ctx); err != nil {
		t.Fatal(err)
	}
	f.advanceTo(t, Aborted)
	if st, err := f.s.WaitSettled(f.b.Ctx); err != nil || st.Stage != Aborted {
		t.Fatalf("WaitSettled = %s, %v; want aborted", st.Stage, err)
	}
}

// TestSchemaWritesTheFromVersionOnceAborted: an aborted migration returns every
// process to the version it started from (doc.go: "Planned, DualWrite, Aborted: from"),
// so the processes of a rolling deploy back on that version's code read every entity.
// A write once Aborted has settled must store that version, not the latest.
func TestSchemaWritesTheFromVersionOnceAborted(t *testing.T) {
	t.Parallel()
	f := setupStaged(t, false, 0)
	f.planned(t, 4, 2)
	f.abortedAndSettled(t)
	v := &EmployeeSplit{Department: "dept00", EmployeeID: "emp000000", FirstName: "Femp000000", LastName: "L", Seq: 2}
	if err := f.s.Upsert(f.b.Ctx, v); err != nil {
		t.Fatal(err)
	}
	if got := f.storedVersion(t, "dept00", "emp000000"); got != f.s.from() {
		t.Errorf("Upsert once Aborted settled stored version %d, want the from version %d", got, f.s.from())
	}
}

// TestSchemaLazyWriteBackNeverWritesTheLatestOnceAborted: once aborted, a read of an
// entity at the from version must not write its upgrade back: processes running the
// from version's code could no longer read it.
func TestSchemaLazyWriteBackNeverWritesTheLatestOnceAborted(t *testing.T) {
	t.Parallel()
	f := setupStaged(t, false, 0)
	f.s.opts.WriteBack = true
	f.planned(t, 4, 2)
	f.abortedAndSettled(t)
	if _, err := f.s.Get(f.b.Ctx, "dept00", "emp000000"); err != nil {
		t.Fatal(err)
	}
	if got := f.storedVersion(t, "dept00", "emp000000"); got != f.s.from() {
		t.Errorf("a read once Aborted settled wrote version %d back, want the entity left at %d", got, f.s.from())
	}
}
