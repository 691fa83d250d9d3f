package wideentity_test

import (
	"testing"

	"github.com/tablepatterns/tablepatterns/patterns/internal/testbed"
	"github.com/tablepatterns/tablepatterns/patterns/wideentity"
)

// Delete removes every chunk in one transaction: a RowKey holding U+2028 or U+2029 must
// leave no chunk behind and no other row deleted in their place.
func TestDeleteRemovesEveryChunkWhenKeyHasLineSeparator(t *testing.T) {
	t.Parallel()
	for _, sep := range testbed.LineSeparators {
		t.Run(sep.Name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, false)
			s := store(t, b, nil)
			b.Bystander("", "counts")
			rk := "user" + sep.Rune + "42"
			if err := s.Insert(b.Ctx, &wideentity.Entity{PartitionKey: "counts", RowKey: rk, Properties: year(3)}); err != nil {
				t.Fatal(err)
			}
			checkWhole(t, b, "counts", rk, 2)
			if err := s.Delete(b.Ctx, "counts", rk, nil); err != nil {
				t.Fatal(err)
			}
			if got := chunksOf(t, b, "counts", rk); len(got) != 0 {
				t.Fatalf("%d chunks left after Delete", len(got))
			}
			b.MustHaveBystander("", "counts")
		})
	}
}

// A write in another layout (here 3 chunks over 2) deletes the old layout's chunks in its
// transaction: with U+2028 or U+2029 in the RowKey, none may stay and no other row go.
func TestLayoutChangeRemovesOldChunksWhenKeyHasLineSeparator(t *testing.T) {
	t.Parallel()
	for _, sep := range testbed.LineSeparators {
		t.Run(sep.Name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, false)
			b.Bystander("", "counts")
			rk := "user" + sep.Rune + "42"
			if err := store(t, b, nil).Insert(b.Ctx, &wideentity.Entity{PartitionKey: "counts", RowKey: rk, Properties: year(3)}); err != nil {
				t.Fatal(err)
			}
			three := store(t, b, &wideentity.Options{Chunks: 3})
			if _, err := three.Update(b.Ctx, "counts", rk, func(e *wideentity.Entity) error {
				e.Properties["Name"] = "three chunks"
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			checkWhole(t, b, "counts", rk, 3)
			if e, err := three.Get(b.Ctx, "counts", rk); err != nil || e.Properties["Name"] != "three chunks" {
				t.Fatalf("Get after the layout change: %v", err)
			}
			b.MustHaveBystander("", "counts")
		})
	}
}
