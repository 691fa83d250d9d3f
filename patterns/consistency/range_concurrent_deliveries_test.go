package consistency

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/tablepatterns/tablepatterns/internal/testenv"
	"github.com/tablepatterns/tablepatterns/repo"
)

// Two runs of one range job at once, to a blob target, with one key whose blob name is
// too long among normal keys: every other entity ends in its blob at its version, the
// long one stays in the source and both runs report it, and the runs' Moved add up to the
// entities moved (each delete commits once).
func TestRangeBlobTwoRunsAtOnce(t *testing.T) {
	t.Parallel()
	b := setup(t, "")
	container := testenv.ContainerName(t)
	t.Cleanup(func() { _, _ = b.clients.Blobs.DeleteContainer(context.Background(), container, nil) })
	want := b.loadRange(t, []string{"Ops", "Sales"}, 60)
	long := "000050" + strings.Repeat(".", 330) // 1,000+ bytes escaped
	raw := rangeEntity("Sales", 50, 1)
	raw.RowKey = long
	if err := b.current.Insert(b.ctx, raw); err != nil {
		t.Fatal(err)
	}
	job := ArchiveRangeJob{Source: b.current.Name(), PartitionKeyFrom: "A", TargetContainer: container}
	var wg sync.WaitGroup
	reps := make([]RangeReport, 2)
	errs := make([]error, 2)
	for i := range 2 {
		wg.Add(1)
		go func() { defer wg.Done(); reps[i], errs[i] = b.a.ArchiveRange(b.ctx, job) }()
	}
	wg.Wait()
	for i := range 2 {
		if errs[i] != nil {
			t.Fatalf("run %d: %v", i, errs[i])
		}
		if len(reps[i].Skipped) != 1 || reps[i].Skipped[0].RowKey != long {
			t.Fatalf("run %d skipped %v", i, reps[i].Skipped)
		}
	}
	if got := reps[0].Moved + reps[1].Moved; got != len(want) {
		t.Fatalf("moved %d + %d, want %d in all", reps[0].Moved, reps[1].Moved, len(want))
	}
	left, err := b.current.Collect(b.ctx, repo.Query{})
	if err != nil || len(left) != 1 || left[0].RowKey != long {
		t.Fatalf("left %d: %v", len(left), err)
	}
	for key, etag := range want {
		st, err := b.a.blobState(b.ctx, ArchiveEntityJob{Source: b.current.Name(), PartitionKey: key.PartitionKey, RowKey: key.RowKey, TargetContainer: container},
			EntityBlobName(b.current.Name(), key.PartitionKey, key.RowKey))
		if err != nil || st.sourceETag != etag {
			t.Fatalf("(%s, %s) blob records %q, want %q: %v", key.PartitionKey, key.RowKey, st.sourceETag, etag, err)
		}
	}
}

// Reordered and duplicated deliveries: a continuation (After in the middle of the range)
// runs before its parent, and two copies of another continuation run at once with the
// parent. Every entity ends archived once, none outside the range.
func TestRangeContinuationOvertakesParent(t *testing.T) {
	t.Parallel()
	b := setup(t, "")
	// 60 a partition in pages of 100: the range spans more than one page and the
	// continuations start inside the first partition (1,200 in pages of RangeJobSize under
	// make soak).
	per := testenv.Scale(60, 1200)
	b.a.seams.pageSize = testenv.Scale(100, RangeJobSize)
	want := b.loadRange(t, []string{"b1", "b2"}, per)
	keep := map[RangeKey]bool{}
	for k := range b.loadRange(t, []string{"c0"}, 10) {
		keep[k] = true
	}
	parent := ArchiveRangeJob{Source: b.current.Name(), PartitionKeyFrom: "b", PartitionKeyTo: "c", TargetTable: b.archive.Name()}
	cont := parent
	cont.After = &RangeKey{PartitionKey: "b1", RowKey: fmt.Sprintf("%06d", per*5/6-1)}
	if _, err := b.a.ArchiveRange(b.ctx, cont); err != nil {
		t.Fatal(err)
	}
	cont2 := parent
	cont2.After = &RangeKey{PartitionKey: "b1", RowKey: fmt.Sprintf("%06d", per/6-1)}
	var wg sync.WaitGroup
	errs := make([]error, 3)
	for i, j := range []ArchiveRangeJob{parent, cont2, cont2} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = b.a.ArchiveRange(b.ctx, j)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	b.assertRangeArchived(t, want, keep)
}
