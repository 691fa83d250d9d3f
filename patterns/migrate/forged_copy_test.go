package migrate

import (
	"testing"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/repo"
)

// forgeDetached writes, directly, a row at the new keys of (pk, rk) that claims to be
// this migration's detached copy of them, of an old version that never was, with Seq
// 999.
func (f *fix) forgeDetached(t *testing.T, pk, rk string) *repo.Table[codec.Entity] {
	t.Helper()
	npk, nrk, _ := hashKeys(pk, rk)
	raw, err := repo.New[codec.Entity](f.b.Direct.Tables, f.tgt.Name(), nil)
	if err != nil {
		t.Fatal(err)
	}
	forged := &codec.Entity{PartitionKey: npk, RowKey: nrk, Properties: map[string]any{
		"Department": pk, "Name": "forged", "Seq": int64(999),
		PropMigration: f.m.spec.Name, PropSourcePK: pk, PropSourceRK: rk,
		PropSourceETag: `W/"forged"`, PropDetached: true}}
	if err := raw.Upsert(f.b.Ctx, forged, nil); err != nil {
		t.Fatal(err)
	}
	return raw
}

// TestForgedDetachedCopyBeforeCleanUpRefusedNeverRead: only clean-up detaches a copy, so
// a row claiming to be a detached copy before CleanUp began was not written by the
// migration. A write through the migration at DualWrite refuses it (ErrInvalidInput)
// and leaves it, and a Get at CutOver never returns it: it returns the old entity or
// refuses.
func TestForgedDetachedCopyBeforeCleanUpRefusedNeverRead(t *testing.T) {
	t.Parallel()
	f := setup(t, false, false)
	keys, _ := f.planned(t, 6, 2)
	f.advanceTo(t, DualWrite)
	f.settled(t)
	k := keys[1]
	raw := f.forgeDetached(t, k[0], k[1])
	if err := f.m.Upsert(f.b.Ctx, &Employee{Department: k[0], EmployeeID: k[1], Seq: 5}); !isInvalid(err) {
		t.Errorf("Upsert at DualWrite over a forged detached copy = %v, want ErrInvalidInput", err)
	}
	npk, nrk, _ := hashKeys(k[0], k[1])
	if got, err := raw.Get(f.b.Ctx, npk, nrk); err != nil || got.Properties["Name"] != "forged" {
		t.Fatalf("the forged row was changed: %v", err)
	}
	if err := raw.Delete(f.b.Ctx, npk, nrk, nil); err != nil {
		t.Fatal(err)
	}
	f.advanceTo(t, CutOver)
	f.settled(t)
	k = keys[4]
	f.forgeDetached(t, k[0], k[1])
	v, err := f.m.Get(f.b.Ctx, k[0], k[1])
	switch {
	case isInvalid(err):
	case err != nil:
		t.Fatalf("Get at CutOver over a forged detached copy = %v", err)
	case v.Seq == 999:
		t.Errorf("Get at CutOver returned the forged detached copy")
	}
}

// TestForgedDetachedCopyAtCleanUpNeverDeletesTheOldEntity: an old entity without a copy
// (a writer that stopped after its old write, after verify passed it) and a row at its
// new keys claiming to be its detached copy of another version: clean-up refuses the
// row (ErrInvalidInput) and never deletes the old entity, the only holder of its data.
func TestForgedDetachedCopyAtCleanUpNeverDeletesTheOldEntity(t *testing.T) {
	t.Parallel()
	f := setup(t, false, false)
	keys, _ := f.planned(t, 6, 2)
	f.advanceTo(t, CutOver)
	f.settled(t)
	pk, rk := "dept01", "emp000099"
	if err := f.src.Insert(f.b.Ctx, &Employee{Department: pk, EmployeeID: rk, Seq: 7}); err != nil {
		t.Fatal(err)
	}
	f.forgeDetached(t, pk, rk)
	f.advanceTo(t, CleanUp)
	f.settled(t)
	if _, err := f.m.RunAll(f.b.Ctx, KindCleanUp); !isInvalid(err) {
		t.Errorf("clean-up over a forged detached copy = %v, want ErrInvalidInput", err)
	}
	if got, err := f.src.Get(f.b.Ctx, pk, rk); err != nil || got.Seq != 7 {
		t.Fatalf("the old entity = Seq %d, %v; want it kept at Seq 7", got.Seq, err)
	}
	for _, k := range keys {
		if _, err := f.m.Get(f.b.Ctx, k[0], k[1]); err != nil {
			t.Errorf("Get(%s, %s) after the refused clean-up: %v", k[0], k[1], err)
		}
	}
}
