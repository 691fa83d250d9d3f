package consistency

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/repo"
	"github.com/tablepatterns/tablepatterns/repo/filter"
)

// copyRows is a small pattern that keeps, for every primary entity "e_<n>", a copy row
// "copy_e_<n>" in the same partition (as an intra-partition index does). Its Removal
// deletes the copy If-Match the ETag it read; Before records that the primary was still
// in the source when it ran.
type copyRows struct {
	t       *repo.Table[codec.Entity]
	mu      sync.Mutex
	asked   map[string]int
	before  int
	late    []string // Before calls that found the primary already gone
	tamper  string   // the primary whose copy is rewritten right after the first read
	tampers int
}

func (c *copyRows) Removal(ctx context.Context, e *codec.Entity) (Removal, error) {
	if !strings.HasPrefix(e.RowKey, "e_") {
		return Removal{}, nil // a copy row has no copies
	}
	c.mu.Lock()
	c.asked[e.RowKey]++
	first := c.asked[e.RowKey] == 1
	c.mu.Unlock()
	cp, err := c.t.Get(ctx, e.PartitionKey, "copy_"+e.RowKey)
	if errors.Is(err, repo.ErrNotFound) {
		return Removal{}, nil
	}
	if err != nil {
		return Removal{}, err
	}
	if first && e.RowKey == c.tamper {
		// A writer changes the copy after the companion read it.
		again := cp
		again.Properties = map[string]any{"Touched": true}
		if err := c.t.Update(ctx, &again, &repo.UpdateOptions{Unconditional: true}); err != nil {
			return Removal{}, err
		}
		c.tampers++
	}
	pk, rk := e.PartitionKey, e.RowKey
	return Removal{
		Actions: []repo.Action{c.t.DeleteAction(pk, cp.RowKey, &repo.DeleteOptions{ETag: cp.ETag})},
		Before: func(ctx context.Context) error {
			_, err := c.t.Get(ctx, pk, rk)
			c.mu.Lock()
			defer c.mu.Unlock()
			c.before++
			if errors.Is(err, repo.ErrNotFound) {
				c.late = append(c.late, rk)
				return nil
			}
			return err
		},
	}, nil
}

// loadCopies writes n primaries and their copy rows into partition pk.
func (b *bed) loadCopies(t *testing.T, pk string, n int) {
	t.Helper()
	var items []*codec.Entity
	for i := 0; i < n; i++ {
		rk := fmt.Sprintf("e_%03d", i)
		items = append(items,
			&codec.Entity{PartitionKey: pk, RowKey: rk, Properties: map[string]any{"N": int32(i)}},
			&codec.Entity{PartitionKey: pk, RowKey: "copy_" + rk, Properties: map[string]any{"Of": rk}})
	}
	if err := b.current.BulkWrite(b.ctx, items, nil); err != nil {
		t.Fatal(err)
	}
}

// A range move takes each entity's companion copies with it: their deletes commit in the
// transaction of the entity's delete (two actions per entity: 50 entities per
// transaction), Before runs while the entity is still in the source, and a copy that
// changed after the companion read it fails the transaction, which starts over and asks
// again. When the range selects the copy rows too, a transaction never holds two actions
// on one row: the copy's delete as an entity and as a companion action go to different
// transactions, and the move ends with the source empty.
func TestArchiveRangeCompanions(t *testing.T) {
	t.Parallel()
	b := setup(t, "")
	comp := &copyRows{t: b.current, asked: map[string]int{}, tamper: "e_077"}
	a, err := New(b.clients, &Options{Retry: fastRetry(), Companions: map[string][]Companion{b.current.Name(): {comp}}})
	if err != nil {
		t.Fatal(err)
	}
	b.loadCopies(t, "Sales", 150)
	// The job spells the table otherwise (table names are case-insensitive): the deletes
	// take the companions' spelling, so that their actions share its transactions.
	job := ArchiveRangeJob{Source: strings.ToUpper(b.current.Name()), PartitionKey: "Sales", RowKeyFrom: "e_", RowKeyTo: "e`", TargetTable: b.archive.Name()}
	rep, err := a.ArchiveRange(b.ctx, job)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Moved != 150 {
		t.Fatalf("moved %d, want 150", rep.Moved)
	}
	left, err := b.current.Collect(b.ctx, repo.Query{})
	if err != nil || len(left) != 0 {
		t.Fatalf("left in the source (copies included): %d %v", len(left), err)
	}
	archived, err := b.archive.Collect(b.ctx, repo.Query{})
	if err != nil || len(archived) != 150 {
		t.Fatalf("archived %d: %v", len(archived), err)
	}
	for _, e := range archived {
		if !strings.HasPrefix(e.RowKey, "e_") {
			t.Fatalf("a copy row was archived: %s", e.RowKey)
		}
	}
	if comp.tampers != 1 || comp.asked["e_077"] < 2 {
		t.Fatalf("the tampered copy: tampered %d, asked %d", comp.tampers, comp.asked["e_077"])
	}
	if comp.before < 150 || len(comp.late) != 0 {
		t.Fatalf("Before ran %d times; after the delete for %v", comp.before, comp.late)
	}

	// The copy rows inside the range: keys repeat across an entity's delete and a
	// companion's action.
	b.loadCopies(t, "Ops", 30)
	all := ArchiveRangeJob{Source: b.current.Name(), PartitionKey: "Ops", TargetTable: b.archive.Name()}
	if _, err := a.ArchiveRange(b.ctx, all); err != nil {
		t.Fatal(err)
	}
	left, err = b.current.Collect(b.ctx, repo.Query{})
	if err != nil || len(left) != 0 {
		t.Fatalf("left in the source: %d %v", len(left), err)
	}
	ops, err := b.archive.Collect(b.ctx, repo.Query{Filter: filter.PartitionKey("Ops")})
	if err != nil || len(ops) != 60 {
		t.Fatalf("archived from Ops: %d %v", len(ops), err)
	}
}
