package rangejob_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/internal/testenv"
	"github.com/tablepatterns/tablepatterns/patterns/internal/rangejob"
	"github.com/tablepatterns/tablepatterns/repo"
	"github.com/tablepatterns/tablepatterns/repo/filter"
)

// A run that scans a page, records its last key as After and scans again from there
// reads every entity of the selection exactly once, in the service's order (UTF-16 code
// units: a key with U+1F600 sorts before one with U+FF01), whatever the page size: the
// scan after a checkpoint starts strictly after it, in its partition and in the ones
// after.
func TestScanResumesStrictlyAfterTheCheckpoint(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	tb, err := repo.New[codec.Entity](testenv.TableService(t), testenv.TableName(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := tb.CreateIfNotExists(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = tb.DeleteTable(ctx)
	})
	rks := []string{"a", "x\U0001F600", "x\uFF01", "z"}
	var es []*codec.Entity
	for _, pk := range []string{"a", "b", "b\U0001F600", "b\uFF01", "c"} {
		for i, rk := range rks {
			es = append(es, &codec.Entity{PartitionKey: pk, RowKey: rk, Properties: map[string]any{"N": int32(i)}})
		}
	}
	for _, e := range es {
		if err := tb.Insert(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	for name, s := range map[string]rangejob.Selection{
		"partition":        {PartitionKey: "b\U0001F600"},
		"rk range":         {PartitionKey: "b", RowKeyFrom: "x", RowKeyTo: "x\uFFFF"},
		"pk range":         {PartitionKeyFrom: "b", PartitionKeyTo: "c"},
		"conditions only":  {Where: []filter.Condition{{Property: "N", Op: "ge", Type: "Edm.Int32", Value: "2"}}},
		"int64 re-checked": {PartitionKeyFrom: "b", Where: []filter.Condition{{Property: "N", Op: "ge", Type: "Edm.Int64", Value: "0"}}},
	} {
		p, err := s.Plan()
		if err != nil {
			t.Fatal(err)
		}
		f, err := p.Scan(nil)
		if err != nil {
			t.Fatal(err)
		}
		all, err := tb.Collect(ctx, repo.Query{Filter: f, Select: p.Select()})
		if err != nil {
			t.Fatal(err)
		}
		want := matching(p, all)
		if len(all) == 0 {
			t.Fatalf("%s: the selection holds nothing", name)
		}
		for _, top := range []int{1, 2, 3} {
			var got []string
			var at *rangejob.Key
			for range len(all) + 1 {
				f, err := p.Scan(at)
				if err != nil {
					t.Fatal(err)
				}
				page, err := tb.Collect(ctx, repo.Query{Filter: f, Select: p.Select(), Top: top})
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, matching(p, page)...)
				if len(page) < top {
					break
				}
				last := page[len(page)-1]
				at = &rangejob.Key{PartitionKey: last.PartitionKey, RowKey: last.RowKey}
				if err := p.CheckPosition("scanned key", *at); err != nil {
					t.Fatalf("%s: %v", name, err)
				}
			}
			if !slices.Equal(got, want) {
				t.Errorf("%s, pages of %d: %q, want %q", name, top, got, want)
			}
		}
	}
}

// matching lists the keys of the entities the plan's conditions hold.
func matching(p *rangejob.Plan, es []codec.Entity) []string {
	var out []string
	for i := range es {
		if p.Matches(&es[i]) {
			out = append(out, fmt.Sprintf("%s/%s", es[i].PartitionKey, es[i].RowKey))
		}
	}
	return out
}
