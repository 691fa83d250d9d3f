package migrate

import (
	"testing"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/repo"
)

// TestRowsBetweenAChunksCopyKeysNeverTakenForItsCopies: rows in the new layout at keys
// that lie between a chunk's copy keys, each claiming to be this migration's current
// copy of a neighbouring entity (its old keys and the old entity's current version, Seq
// 999), are never read as those entities' copies: the range jobs copy every entity, count
// the rows as foreign, leave them, and every Get returns the entity's own version.
func TestRowsBetweenAChunksCopyKeysNeverTakenForItsCopies(t *testing.T) {
	t.Parallel()
	f := setup(t, false, false)
	keys, _ := f.planned(t, 30, 1)
	raw, err := repo.New[codec.Entity](f.b.Direct.Tables, f.tgt.Name(), nil)
	if err != nil {
		t.Fatal(err)
	}
	src, err := repo.New[codec.Entity](f.b.Direct.Tables, f.src.Name(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		old, err := src.Get(f.b.Ctx, k[0], k[1])
		if err != nil {
			t.Fatal(err)
		}
		npk, nrk, _ := hashKeys(k[0], k[1])
		forged := &codec.Entity{PartitionKey: npk, RowKey: nrk + "~", Properties: map[string]any{
			"Department": k[0], "Name": "forged", "Seq": int64(999),
			PropMigration: f.m.spec.Name, PropSourcePK: k[0], PropSourceRK: k[1],
			PropSourceETag: old.ETag, PropDetached: false}}
		if err := raw.Insert(f.b.Ctx, forged); err != nil {
			t.Fatal(err)
		}
	}
	f.advanceTo(t, Verify)
	f.settled(t)
	rep, err := f.m.RunAll(f.b.Ctx, KindVerify)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Foreign != len(keys) || rep.Missing+rep.Stale+rep.Orphans != 0 {
		t.Errorf("verify: %d foreign, %d missing, %d stale, %d orphans; want %d foreign", rep.Foreign, rep.Missing, rep.Stale, rep.Orphans, len(keys))
	}
	for _, k := range keys {
		f.mustBeCurrent(t, k[0], k[1])
	}
	f.advanceTo(t, Done)
	for _, k := range keys {
		if v, err := f.m.Get(f.b.Ctx, k[0], k[1]); err != nil || v.Seq != 1 {
			t.Errorf("Get(%s, %s) = Seq %d, %v; want 1", k[0], k[1], v.Seq, err)
		}
	}
	if old, copies := f.rows(t, f.tgt.Name()); len(old) != 0 || len(copies) != 2*len(keys) {
		t.Errorf("new layout: %d rows without the migration, %d with; want 0, %d", len(old), len(copies), 2*len(keys))
	}
}
