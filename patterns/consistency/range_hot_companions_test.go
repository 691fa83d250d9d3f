package consistency

import (
	"fmt"
	"sync"
	"testing"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/repo"
)

// Several hot entities with companions in one batch: one written again before every
// delete, one written before the first delete only, one deleted (with its companion
// copy) before the first delete. The batch moves the rest with their companions' copies;
// the one written once moves at its newer version; the one written before every delete
// stays in the source at its last version with its companion copy, is the only one in
// RangeReport.Changed, and its copy in the target does not record that last version (a
// later run replaces it); the deleted one is not brought back into the source.
func TestRangeMovesAroundSeveralHotEntitiesWithCompanions(t *testing.T) {
	t.Parallel()
	b := setup(t, "")
	sib := &sibling{tbl: b.current}
	a, err := New(b.clients, &Options{Retry: fastRetry(), Companions: map[string][]Companion{b.current.Name(): {sib}}})
	if err != nil {
		t.Fatal(err)
	}
	var items []*codec.Entity
	for n := range 10 {
		e := rangeEntity("Sales", n, 1)
		items = append(items, e, &codec.Entity{PartitionKey: "Sales", RowKey: "copy-" + e.RowKey, Properties: map[string]any{"Of": e.RowKey}})
	}
	if err := b.current.BulkWrite(b.ctx, items, nil); err != nil {
		t.Fatal(err)
	}
	always, once, gone := rangeEntity("Sales", 3, 1), rangeEntity("Sales", 5, 1), rangeEntity("Sales", 7, 1)
	var mu sync.Mutex
	pass := 0
	a.seams.step = func(job, step string) error {
		if job != KindArchiveRange || step != "copied" {
			return nil
		}
		mu.Lock()
		defer mu.Unlock()
		pass++
		always.Properties["Version"] = int32(pass + 1)
		if err := b.current.Upsert(b.ctx, always, &repo.UpsertOptions{Mode: repo.Replace}); err != nil {
			return err
		}
		if pass == 1 {
			once.Properties["Version"] = int32(9)
			if err := b.current.Upsert(b.ctx, once, &repo.UpsertOptions{Mode: repo.Replace}); err != nil {
				return err
			}
			for _, rk := range []string{gone.RowKey, "copy-" + gone.RowKey} {
				if err := b.current.Delete(b.ctx, "Sales", rk, nil); err != nil {
					return err
				}
			}
		}
		return nil
	}
	rep, err := a.ArchiveRange(b.ctx, ArchiveRangeJob{Source: b.current.Name(), PartitionKey: "Sales", RowKeyFrom: "0", RowKeyTo: "1", TargetTable: b.archive.Name()})
	if err != nil {
		t.Fatalf("%+v %v", rep, err)
	}
	if len(rep.Changed) != 1 || rep.Changed[0] != (RangeKey{"Sales", always.RowKey}) {
		t.Fatalf("Changed %v, want only %s", rep.Changed, always.RowKey)
	}
	left, err := b.current.Collect(b.ctx, repo.Query{})
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, e := range left {
		keys = append(keys, e.RowKey)
	}
	if want := fmt.Sprint([]string{always.RowKey, "copy-" + always.RowKey}); fmt.Sprint(keys) != want {
		t.Fatalf("left in the source %v, want %s", keys, want)
	}
	cur, err := b.current.Get(b.ctx, "Sales", always.RowKey)
	if err != nil || cur.Properties["Version"] != always.Properties["Version"] {
		t.Fatalf("the hot entity in the source: %v %v, want its last version %v", cur.Properties, err, always.Properties["Version"])
	}
	cp, err := b.archive.Get(b.ctx, "Sales", always.RowKey)
	if err != nil {
		t.Fatalf("the hot entity's copy: %v", err)
	}
	if st, _ := tableCopyState(b.archive.Name(), &cp); st.sourceETag == cur.ETag {
		t.Fatalf("the target's copy records the source's last version while the entity stays")
	}
	moved, err := b.archive.Get(b.ctx, "Sales", once.RowKey)
	if err != nil || moved.Properties["Version"] != int32(9) {
		t.Fatalf("the entity written once: %v %v, want moved at its newer version", moved.Properties, err)
	}
}
