package migrate

import (
	"testing"
)

// TestLazyWriteBackOnlyOnceProcessesWriteTheLatest: in a staged migration with
// Downgrades, a read of an older version returns the latest shape at every stage, but
// writes the upgrade back only once Backfill has settled: before it, processes still
// running the code of the version before the latest must be able to read every entity.
func TestLazyWriteBackOnlyOnceProcessesWriteTheLatest(t *testing.T) {
	t.Parallel()
	f := setupStaged(t, false, 0)
	f.s.opts.WriteBack = true
	_, md := f.planned(t, 4, 2)
	read := func(rk string) {
		t.Helper()
		v, err := f.s.Get(f.b.Ctx, "dept00", rk)
		if err != nil || v.FirstName != "F"+rk || v.LastName != "L" {
			t.Fatalf("Get %s = %+v, %v", rk, v, err)
		}
	}
	f.advanceTo(t, DualWrite)
	if _, err := f.s.WaitSettled(f.b.Ctx); err != nil {
		t.Fatal(err)
	}
	read("emp000000")
	read("emp000002")
	f.mustHoldAt(t, md, 1)
	if _, err := f.s.Advance(f.b.Ctx); err != nil { // to Backfill
		t.Fatal(err)
	}
	if _, err := f.s.WaitSettled(f.b.Ctx); err != nil {
		t.Fatal(err)
	}
	read("emp000000")
	e, err := f.b.Raw.Get(f.b.Ctx, "dept00", "emp000000")
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := f.s.version(&e); v != 2 {
		t.Errorf("read at Backfill: stored at version %d, want the upgrade written back", v)
	}
}
