package consistency

import (
	"strings"
	"testing"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/repo"

	"context"
	"errors"
	"fmt"
)

// A page of 100 entities of one partition whose target copies are stale (an earlier
// archive of the same keys; the entities were written again since), so every copy is a
// replace, whose request line carries the path-escaped keys. Keys of 250 "'€" (legal: 1,000
// bytes of UTF-16 and of UTF-8) escape to 3,750 bytes each in the URL; the copy budget counts 1,024 bytes a
// copy beyond its body. The copy transaction that the budget says fits then goes over
// 4 MiB on the wire and is refused (ErrInvalidInput, permanent): the job is cancelled and
// the partition is never archived. Expected: the copies are split so that each
// transaction fits, and the range is archived.
func TestRangeReplaceCopiesOverWireBudget(t *testing.T) {
	t.Parallel()
	b := setup(t, "")
	heavy := strings.Repeat("'€", 250) // 500 UTF-16 units, 1,000 bytes of UTF-8; 3,750 bytes path-escaped
	pk := heavy
	rk := func(i int) string { return heavy + string(rune('A'+i/26)) + string(rune('a'+i%26)) + "x" }
	fill := strings.Repeat("z", 16650) // twice: 100 copies fill the copy budget (3.5 MiB), one transaction
	// The first version is small: its copies only have to exist for the second's to be
	// replaces, and only the second fills the copy budget.
	write := func(v int) {
		var items []*codec.Entity
		for i := 0; i < 100; i++ {
			props := map[string]any{"Version": int32(v)}
			if v > 1 {
				props["Fill"], props["Fill2"] = fill, fill
			}
			items = append(items, &codec.Entity{PartitionKey: pk, RowKey: rk(i), Properties: props})
		}
		for _, e := range items {
			if err := b.current.Insert(b.ctx, e); err != nil {
				t.Fatal(err)
			}
		}
	}
	job := ArchiveRangeJob{Source: b.current.Name(), PartitionKey: pk, TargetTable: b.archive.Name()}
	write(1)
	if rep, err := b.a.ArchiveRange(b.ctx, job); err != nil || rep.Moved != 100 {
		t.Fatalf("first archive: %+v %v", rep, err)
	}
	write(2) // the same keys again: the archive's copies are stale now
	rep, err := b.a.ArchiveRange(b.ctx, job)
	if err != nil {
		t.Fatalf("second archive (every copy a replace): %+v: %v", rep, err)
	}
	left, err := b.current.Collect(b.ctx, repo.Query{})
	if err != nil || len(left) != 0 {
		t.Fatalf("source: %d left: %v", len(left), err)
	}
	got, err := b.archive.Get(b.ctx, pk, rk(42))
	if err != nil || got.Properties["Version"] != int32(2) {
		t.Fatalf("copy: %v %v", got, err)
	}
}

// bigCopyRows keeps, for every primary "e_<n>", a copy row "copy_e_<n>" of about 120 KB in
// the same partition; its Removal updates the copy (marks it Orphaned, keeping its
// content) If-Match the ETag it read: an update, as Companion's documentation allows.
type bigCopyRows struct{ t *repo.Table[codec.Entity] }

func (c *bigCopyRows) Removal(ctx context.Context, e *codec.Entity) (Removal, error) {
	if !strings.HasPrefix(e.RowKey, "e_") {
		return Removal{}, nil
	}
	cp, err := c.t.Get(ctx, e.PartitionKey, "copy_"+e.RowKey)
	if errors.Is(err, repo.ErrNotFound) {
		return Removal{}, nil
	}
	if err != nil {
		return Removal{}, err
	}
	cp.Properties["Orphaned"] = true
	return Removal{Actions: []repo.Action{c.t.UpdateAction(&cp, nil)}}, nil
}

// 40 entities of one partition whose companion updates a 120 KB copy row each: the
// delete transactions are cut by action count only (one of 40 entities and 40 updates),
// about 4.8 MB, so the delete is refused before it is sent (ErrInvalidInput: permanent, the
// worker cancels the job) and nothing is ever archived, although every entity and its
// companion action fit a transaction. Expected: the delete transactions are cut by
// payload size too, and the range is archived.
func TestRangeCompanionUpdatesOver4MiB(t *testing.T) {
	t.Parallel()
	b := setup(t, "")
	a, err := New(b.clients, &Options{Retry: fastRetry(), Companions: map[string][]Companion{b.current.Name(): {&bigCopyRows{t: b.current}}}})
	if err != nil {
		t.Fatal(err)
	}
	fill := strings.Repeat("c", 30000)
	var items []*codec.Entity
	const n = 40 // 80 actions: one transaction by count, two by payload
	for i := 0; i < n; i++ {
		rk := fmt.Sprintf("e_%03d", i)
		items = append(items,
			&codec.Entity{PartitionKey: "Sales", RowKey: rk, Properties: map[string]any{"N": int32(i)}},
			&codec.Entity{PartitionKey: "Sales", RowKey: "copy_" + rk, Properties: map[string]any{
				"Of": rk, "A": fill, "B": fill, "C": fill, "D": fill}})
	}
	if err := b.current.BulkWrite(b.ctx, items, nil); err != nil {
		t.Fatal(err)
	}
	job := ArchiveRangeJob{Source: b.current.Name(), PartitionKey: "Sales", RowKeyFrom: "e_", RowKeyTo: "e`", TargetTable: b.archive.Name()}
	rep, err := a.ArchiveRange(b.ctx, job)
	if err != nil {
		t.Fatalf("%+v: %v (permanent: %v)", rep, err, permanent(err))
	}
	if rep.Moved != n {
		t.Fatalf("moved %d", rep.Moved)
	}
}
