package consistency

import (
	"testing"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/repo"
)

// Keys compare as strings, the package says, and batches checks the order of a scan in
// Go's order (UTF-8 bytes). The table service orders keys by UTF-16 code units (Azurite
// too): a key with a character outside the BMP ("😀", surrogates D83D DE00) sorts before
// one with a character in U+E000–U+FFFF ("！", FF01) there, after it in Go. A partition
// holding both (any writer can store such keys) makes every scan "out of order" or
// "outside the range": the job never completes. Expected: the partition is archived.
func TestRangeKeysUTF16Order(t *testing.T) {
	t.Parallel()
	b := setup(t, "")
	for _, rk := range []string{"a", "x\uFF01", "x\U0001F600", "z"} {
		if err := b.current.Insert(b.ctx, &codec.Entity{PartitionKey: "Sales", RowKey: rk, Properties: map[string]any{"N": int32(1)}}); err != nil {
			t.Fatal(err)
		}
	}
	keys, err := b.current.Collect(b.ctx, repo.Query{Select: []string{"PartitionKey", "RowKey"}})
	if err != nil {
		t.Fatal(err)
	}
	var order []string
	for _, e := range keys {
		order = append(order, e.RowKey)
	}
	t.Logf("the service's order: %q", order)
	for name, job := range map[string]ArchiveRangeJob{
		"partition": {Source: b.current.Name(), PartitionKey: "Sales", TargetTable: b.archive.Name()},
		"rk range":  {Source: b.current.Name(), PartitionKey: "Sales", RowKeyFrom: "x", RowKeyTo: "x\uFFFF", TargetTable: b.archive.Name()},
	} {
		rep, err := b.a.ArchiveRange(b.ctx, job)
		if err != nil {
			t.Errorf("%s: %+v: %v (permanent: %v)", name, rep, err, permanent(err))
		}
	}
	left, err := b.current.Collect(b.ctx, repo.Query{})
	if err != nil || len(left) != 0 {
		t.Fatalf("source: %d left: %v", len(left), err)
	}
}
