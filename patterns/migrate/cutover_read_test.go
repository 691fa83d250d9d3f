package migrate

import "testing"

// TestOldWriteWithoutItsCopyIsStillReadAtCutOver: a writer updated the old layout and
// stopped before its copy step (a crash) after verify had passed the entity; a reader
// saw that version before CutOver, and at CutOver (where the copy is read first) still
// reads it, never the older copy.
func TestOldWriteWithoutItsCopyIsStillReadAtCutOver(t *testing.T) {
	t.Parallel()
	f := setup(t, false, false)
	keys, _ := f.planned(t, 10, 2)
	k := keys[3]
	f.advanceTo(t, Verify)
	f.settled(t)
	if _, err := f.m.RunAll(f.b.Ctx, KindVerify); err != nil {
		t.Fatal(err)
	}
	if err := f.src.Upsert(f.b.Ctx, &Employee{Department: k[0], EmployeeID: k[1], Seq: 50}, nil); err != nil {
		t.Fatal(err)
	}
	if v, err := f.m.Get(f.b.Ctx, k[0], k[1]); err != nil || v.Seq != 50 {
		t.Fatalf("Get before CutOver = Seq %d, %v; want 50", v.Seq, err)
	}
	st, err := f.m.load(f.b.Ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.m.transition(f.b.Ctx, st, CutOver); err != nil {
		t.Fatal(err)
	}
	f.settled(t)
	if v, err := f.m.Get(f.b.Ctx, k[0], k[1]); err != nil || v.Seq != 50 {
		t.Fatalf("Get at CutOver = Seq %d, %v; want 50, not the older copy", v.Seq, err)
	}
	f.advanceTo(t, Done)
	if v, err := f.m.Get(f.b.Ctx, k[0], k[1]); err != nil || v.Seq != 50 {
		t.Fatalf("Get at Done = Seq %d, %v; want 50", v.Seq, err)
	}
}
