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
	"github.com/tablepatterns/tablepatterns/repo/filter"
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
		c    filter.Condition
		want int
	}{
		{filter.Condition{Property: "Big", Op: "ge", Type: "Edm.Int64", Value: fmt.Sprint(int64(1)<<40 + 15)}, 5},
		{filter.Condition{Property: "D", Op: "lt", Type: "Edm.Double", Value: "3"}, 3},
	} {
		job := ArchiveRangeJob{Source: b.current.Name(), PartitionKey: "P", TargetTable: b.archive.Name(), Where: []filter.Condition{tc.c}}
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

// What one batch of a range move sends, pinned request by request: each copy is encoded
// once and each blob name checked once, before anything is sent, and neither check
// costs or changes a request. To a table: the scan, one target read, one source read,
// one transaction of the stale copies (not the copy that already records its source's
// version, not the entity the target refuses), one transaction of the deletes. To blobs:
// the scan, one blob read per key whose name fits, one source read, one upload per
// copy, one delete transaction; the key whose blob name is too long sends nothing.
func TestRangeMoveRequestsPinned(t *testing.T) {
	t.Parallel()
	ps := testenv.Proxies(t)
	b := &companionBed{bed: setup(t, ps.ConnectionString), ps: ps}
	container := testenv.ContainerName(t)
	if _, err := b.clients.Blobs.CreateContainer(b.ctx, container, nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = b.clients.Blobs.DeleteContainer(context.Background(), container, nil) })
	// Table: 000004 has 252 custom properties (its copy would have 255), and 000002's
	// copy already records its source's version.
	big := &codec.Entity{PartitionKey: "T", RowKey: "000004", Properties: map[string]any{}}
	for i := range codec.MaxProperties {
		big.Properties[fmt.Sprintf("P%03d", i)] = int32(i)
	}
	// Blob: the name of 000004%%%... is too long.
	long := &codec.Entity{PartitionKey: "B", RowKey: "000004" + strings.Repeat("%", 400), Properties: map[string]any{"N": int32(4)}}
	for _, e := range []*codec.Entity{big, long, rangeEntity("T", 1, 1), rangeEntity("T", 2, 1), rangeEntity("T", 3, 1),
		rangeEntity("B", 1, 1), rangeEntity("B", 2, 1), rangeEntity("B", 3, 1)} {
		if err := b.current.Insert(b.ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	src, err := b.current.Get(b.ctx, "T", "000002")
	if err != nil {
		t.Fatal(err)
	}
	current := archiveCopy(&src, b.current.Name(), true)
	if err := b.archive.Insert(b.ctx, current); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		job              ArchiveRangeJob
		refused          *codec.Entity
		wantTable, blobs []string
	}{
		{ArchiveRangeJob{Source: b.current.Name(), PartitionKey: "T", TargetTable: b.archive.Name()}, big,
			[]string{"GET current", "GET archive", "GET current", "POST $batch", "POST $batch"}, nil},
		{ArchiveRangeJob{Source: b.current.Name(), PartitionKey: "B", TargetContainer: container}, long,
			[]string{"GET current", "GET current", "POST $batch"}, []string{"HEAD", "HEAD", "HEAD", "PUT", "PUT", "PUT"}},
	} {
		tableMark, blobMark := len(ps.Table.Requests()), len(ps.Blob.Requests())
		rep, err := b.a.ArchiveRange(b.ctx, tc.job)
		if err != nil || rep.Moved != 3 || !slices.Equal(rep.Skipped, []RangeKey{{tc.refused.PartitionKey, tc.refused.RowKey}}) {
			t.Fatalf("%s: %+v: %v", tc.job.PartitionKey, rep, err)
		}
		if got := b.requestsSince(tableMark); !slices.Equal(got, tc.wantTable) {
			t.Fatalf("%s: table requests %q, want %q", tc.job.PartitionKey, got, tc.wantTable)
		}
		var blobs []string
		for _, r := range ps.Blob.Requests()[blobMark:] {
			blobs = append(blobs, r.Method)
		}
		slices.Sort(blobs) // the reads, and the uploads, run at once
		if !slices.Equal(blobs, tc.blobs) {
			t.Fatalf("%s: blob requests %q, want %q", tc.job.PartitionKey, blobs, tc.blobs)
		}
	}
	// The transaction of copies held the two stale ones: 000002's copy is as it was.
	for _, rk := range []string{"000001", "000002", "000003"} {
		cp, err := b.archive.Get(b.ctx, "T", rk)
		if err != nil || cp.Properties[SourceTableProperty] != b.current.Name() {
			t.Fatalf("the copy of %s: %v", rk, err)
		}
		if rk == "000002" && cp.ETag != current.ETag {
			t.Fatal("the copy that recorded its source's version was rewritten")
		}
	}
}

// One entity of the range that the target cannot take (252 custom properties: legal in
// the source, 254 with the copy's two; any writer of the source can store it) stops the
// whole job: the error is ErrInvalidInput, permanent, so the worker cancels the message,
// and the other entities of its batch and every later page are never archived. Through
// the worker, with Options.Queue: 250 entities in pages of 100, the poison at 000005.
// Expected (promise: the job ends with every entity archived): the entity that cannot be
// copied is left in the source (and reported), the rest of the range moves.
func TestRangeOnePoisonEntityStopsTheJob(t *testing.T) {
	t.Parallel()
	b := setup(t, "")
	want := b.loadRange(t, []string{"Sales"}, 250)
	poison := &codec.Entity{PartitionKey: "Sales", RowKey: fmt.Sprintf("%06d", 5), Properties: map[string]any{}}
	for i := 0; i < codec.MaxProperties; i++ {
		poison.Properties[fmt.Sprintf("P%03d", i)] = int32(i)
	}
	if err := b.current.Update(b.ctx, poison, &repo.UpdateOptions{Unconditional: true}); err != nil {
		t.Fatal(err)
	}
	c, queue := rangeClient(t, b)
	a := rangeArchiver(t, b, c, nil)
	a.seams.pageSize = 100 // three pages: the poison's batch fills the first
	w := rangeWorker(t, b, queue, a)
	job := ArchiveRangeJob{Source: b.current.Name(), PartitionKey: "Sales", TargetTable: b.archive.Name()}
	if err := EnqueueArchiveRange(b.ctx, c, job); err != nil {
		t.Fatal(err)
	}
	drain(t, w)
	left, err := b.current.Collect(b.ctx, repo.Query{Select: []string{"PartitionKey", "RowKey"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("worker %+v; %d of %d left in the source", w.Stats(), len(left), len(want))
	if len(left) != 1 {
		t.Fatalf("%d entities left in the source, want only the one the target cannot take", len(left))
	}
}
