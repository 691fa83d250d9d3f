package migrate

import (
	"testing"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/repo"
)

// TestForgedDetachedCopyWithTheRealETagNeverDeletesTheOldEntity: whoever can write the
// target table copies an old entity's real ETag into a row at its new keys that claims
// to be its detached copy, with other values. Clean-up deletes an old entity only on
// the strength of a copy that holds the Transform of it: it refuses this one
// (ErrInvalidInput) and the old entity, the only holder of its data, stays; every other
// entity reads as before.
func TestForgedDetachedCopyWithTheRealETagNeverDeletesTheOldEntity(t *testing.T) {
	t.Parallel()
	f := setup(t, false, false)
	keys, _ := f.planned(t, 6, 2)
	f.advanceTo(t, CutOver)
	f.settled(t)
	k := keys[3]
	old, err := f.m.readSource(f.b.Ctx, k[0], k[1])
	if err != nil || !old.found {
		t.Fatalf("old entity: %v", err)
	}
	npk, nrk, _ := hashKeys(k[0], k[1])
	raw, err := repo.New[codec.Entity](f.b.Direct.Tables, f.tgt.Name(), nil)
	if err != nil {
		t.Fatal(err)
	}
	forged := &codec.Entity{PartitionKey: npk, RowKey: nrk, Properties: map[string]any{
		"Department": k[0], "EmployeeID": k[1], "Name": "forged", "Seq": int64(999),
		PropMigration: f.m.spec.Name, PropSourcePK: k[0], PropSourceRK: k[1],
		PropSourceETag: old.etag, PropDetached: true}}
	if err := raw.Upsert(f.b.Ctx, forged, nil); err != nil {
		t.Fatal(err)
	}
	f.advanceTo(t, CleanUp)
	f.settled(t)
	if _, err := f.m.RunAll(f.b.Ctx, KindCleanUp); !isInvalid(err) {
		t.Errorf("clean-up over a forged detached copy with the real ETag = %v, want ErrInvalidInput", err)
	}
	if got, err := f.src.Get(f.b.Ctx, k[0], k[1]); err != nil || got.Seq != 1 {
		t.Fatalf("the old entity = Seq %d, %v; want it kept at Seq 1", got.Seq, err)
	}
	for _, k := range keys {
		if _, err := f.m.Get(f.b.Ctx, k[0], k[1]); err != nil && k != keys[3] {
			t.Errorf("Get(%s, %s) after the refused clean-up: %v", k[0], k[1], err)
		}
	}
}
