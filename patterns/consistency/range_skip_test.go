package consistency

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/internal/errs"
	"github.com/tablepatterns/tablepatterns/internal/testenv"
	"github.com/tablepatterns/tablepatterns/repo"
)

// Entities the target cannot take (a table copy with 252 custom properties and the
// copy's two; a blob name too long) are left in the source unchanged, listed in
// RangeReport.Skipped in the service's order and logged with their keys only; the rest
// of the range moves, across batches.
func TestRangeSkipsEntitiesTheTargetCannotTake(t *testing.T) {
	t.Parallel()
	for _, target := range []string{"table", "blob"} {
		t.Run(target, func(t *testing.T) {
			t.Parallel()
			b := setup(t, "")
			core, logs := observer.New(zap.WarnLevel)
			a, err := New(b.clients, &Options{Retry: fastRetry(), Logger: zap.New(core)})
			if err != nil {
				t.Fatal(err)
			}
			b.loadRange(t, []string{"Sales"}, 150)
			job := ArchiveRangeJob{Source: b.current.Name(), PartitionKey: "Sales", TargetTable: b.archive.Name()}
			var refused []*codec.Entity
			if target == "table" {
				for _, n := range []int{5, 120} {
					e := &codec.Entity{PartitionKey: "Sales", RowKey: fmt.Sprintf("%06d", n), Properties: map[string]any{}}
					for i := range codec.MaxProperties {
						e.Properties[fmt.Sprintf("P%03d", i)] = fmt.Sprintf("secret-%d", i)
					}
					refused = append(refused, e)
				}
			} else {
				c := testenv.ContainerName(t)
				job.TargetTable, job.TargetContainer = "", c
				t.Cleanup(func() { _, _ = b.clients.Blobs.DeleteContainer(context.Background(), c, nil) })
				for _, rk := range []string{"000005%" + strings.Repeat("%", 400), "000120%" + strings.Repeat("%", 400)} {
					e := &codec.Entity{PartitionKey: "Sales", RowKey: rk, Properties: map[string]any{"N": int32(1)}}
					if err := (ArchiveEntityJob{Source: job.Source, PartitionKey: "Sales", RowKey: rk, TargetContainer: c}).Validate(); !errors.Is(err, errs.ErrInvalidInput) {
						t.Fatalf("the blob name of %.12q is valid: %v", rk, err)
					}
					refused = append(refused, e)
				}
			}
			var want []RangeKey
			for _, e := range refused {
				if err := b.current.Upsert(b.ctx, e, &repo.UpsertOptions{Mode: repo.Replace}); err != nil {
					t.Fatal(err)
				}
				want = append(want, RangeKey{e.PartitionKey, e.RowKey})
			}
			rep, err := a.ArchiveRange(b.ctx, job)
			if err != nil {
				t.Fatalf("%+v: %v", rep, err)
			}
			if !slices.Equal(rep.Skipped, want) {
				t.Fatalf("skipped %q, want %q", rep.Skipped, want)
			}
			moved := 148 // the table case replaces two of the 150 loaded
			if target == "blob" {
				moved = 150 // the blob case adds two keys
			}
			if rep.Moved != moved {
				t.Fatalf("moved %d, want %d", rep.Moved, moved)
			}
			left, err := b.current.Collect(b.ctx, repo.Query{})
			if err != nil {
				t.Fatal(err)
			}
			if len(left) != 2 || left[0].RowKey != want[0].RowKey || left[1].RowKey != want[1].RowKey || left[0].ETag != refused[0].ETag || left[1].ETag != refused[1].ETag {
				t.Fatalf("left in the source: %d entities, want the 2 refused ones unchanged", len(left))
			}
			if target == "table" {
				for _, k := range want {
					if _, err := b.archive.Get(b.ctx, k.PartitionKey, k.RowKey); !errors.Is(err, repo.ErrNotFound) {
						t.Fatalf("a copy of (%s, %s): %v", k.PartitionKey, k.RowKey, err)
					}
				}
			}
			warned := logs.FilterMessageSnippet("entity left in the source").All()
			if len(warned) != 2 {
				t.Fatalf("%d warnings, want one per refused entity", len(warned))
			}
			for _, w := range warned {
				line := fmt.Sprint(w.ContextMap())
				if !strings.Contains(line, "Sales") || strings.Contains(line, "secret-") {
					t.Fatalf("warning without the keys or with a value: %s", line)
				}
			}
		})
	}
}

// The conditions re-checked on the entities read still select what they mean: an
// Edm.Int64 condition (checked only by the job, never sent) on an Int64 property and an
// Edm.Double one on a Double property move exactly the entities that match.
func TestRangeConditionsOfTheirOwnType(t *testing.T) {
	t.Parallel()
	b := setup(t, "")
	var items []*codec.Entity
	for i := range 20 {
		items = append(items, &codec.Entity{PartitionKey: "P", RowKey: fmt.Sprintf("%06d", i), Properties: map[string]any{
			"Big": int64(1)<<40 + int64(i), "D": float64(i) + 0.5}})
	}
	if err := b.current.BulkWrite(b.ctx, items, nil); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		c    Condition
		want int
	}{
		{Condition{Property: "Big", Op: "ge", Type: "Edm.Int64", Value: fmt.Sprint(int64(1)<<40 + 15)}, 5},
		{Condition{Property: "D", Op: "lt", Type: "Edm.Double", Value: "3"}, 3},
	} {
		job := ArchiveRangeJob{Source: b.current.Name(), PartitionKey: "P", TargetTable: b.archive.Name(), Where: []Condition{tc.c}}
		rep, err := b.a.ArchiveRange(b.ctx, job)
		if err != nil || rep.Moved != tc.want || rep.Scanned != tc.want {
			t.Fatalf("%+v: %+v: %v, want %d moved", tc.c, rep, err, tc.want)
		}
	}
	left, err := b.current.Collect(b.ctx, repo.Query{})
	if err != nil || len(left) != 12 {
		t.Fatalf("%d left: %v", len(left), err)
	}
	for _, e := range left {
		if e.Properties["Big"].(int64) >= int64(1)<<40+15 || e.Properties["D"].(float64) < 3 {
			t.Fatalf("%s should have moved", e.RowKey)
		}
	}
}
