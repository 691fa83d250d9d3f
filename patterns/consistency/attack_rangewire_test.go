package consistency

import (
	"strings"
	"testing"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/repo"
)

// A page of 100 entities of one partition whose target copies are stale (an earlier
// archive of the same keys; the entities were written again since), so every copy is a
// replace, whose request line carries the path-escaped keys. Keys of 250 "'€" (legal: 1,000
// bytes of UTF-16 and of UTF-8) escape to 3,750 bytes each in the URL; the copy budget counts 1,024 bytes a
// copy beyond its body. The copy transaction that the budget says fits then goes over
// 4 MiB on the wire and is refused (ErrInvalidInput, permanent): the job is cancelled and
// the partition is never archived. Expected: the copies are split so that each
// transaction fits, and the range is archived.
func TestAttackRangeReplaceCopiesOverWireBudget(t *testing.T) {
	t.Parallel()
	b := setup(t, "")
	heavy := strings.Repeat("'€", 250) // 500 UTF-16 units, 1,000 bytes of UTF-8; 3,750 bytes path-escaped
	pk := heavy
	rk := func(i int) string { return heavy + string(rune('A'+i/26)) + string(rune('a'+i%26)) + "x" }
	fill := strings.Repeat("z", 16650) // twice: 100 copies fill the copy budget (3.5 MiB), one transaction
	write := func(v int) {
		var items []*codec.Entity
		for i := 0; i < 100; i++ {
			items = append(items, &codec.Entity{PartitionKey: pk, RowKey: rk(i), Properties: map[string]any{
				"Version": int32(v), "Fill": fill, "Fill2": fill,
			}})
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
