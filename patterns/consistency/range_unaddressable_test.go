package consistency

import (
	"errors"
	"slices"
	"testing"

	"github.com/tablepatterns/tablepatterns/internal/errs"
	"github.com/tablepatterns/tablepatterns/repo"
	"github.com/tablepatterns/tablepatterns/repo/filter"

	"context"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/internal/testenv"
)

// Keys a range scan returns that the job cannot address (an empty PartitionKey, written
// by raw aztables; a '#' in a RowKey, which Azurite stores and the service refuses) are
// reported in Skipped, keys only, and left; the rest moves. A checkpoint at such a key
// (the last key of a page) is a position a continuation accepts and resumes after: it
// neither refuses it nor rescans the key. A checkpoint outside the range is still
// refused.
func TestRangeUnaddressableKeysSkippedAndResumedAfter(t *testing.T) {
	t.Parallel()
	b := setup(t, "")
	raw := b.clients.Tables.NewClient(b.current.Name())
	if _, err := raw.AddEntity(b.ctx, []byte(`{"PartitionKey":"","RowKey":"odd","N":1}`), nil); err != nil {
		t.Fatal(err)
	}
	skipped := []RangeKey{{"", "odd"}}
	if _, err := raw.AddEntity(b.ctx, []byte(`{"PartitionKey":"Sales","RowKey":"x#y","N":1}`), nil); err == nil {
		skipped = append(skipped, RangeKey{"Sales", "x#y"})
	}
	t.Logf("keys the job cannot address: %q", skipped)
	want := b.loadRange(t, []string{"Sales"}, 5)
	job := ArchiveRangeJob{Source: b.current.Name(), TargetTable: b.archive.Name(),
		Where: []filter.Condition{{Property: "N", Op: "ge", Type: "Edm.Int32", Value: "0"}}}

	// The continuation after the empty PartitionKey: accepted, and the key not rescanned.
	cont := job
	cont.After = &RangeKey{"", "odd"}
	if err := cont.Validate(); err != nil {
		t.Fatalf("a continuation after an empty PartitionKey: %v", err)
	}
	rep, err := b.a.ArchiveRange(b.ctx, cont)
	if err != nil || rep.Moved != 5 || !slices.Equal(rep.Skipped, skipped[1:]) {
		t.Fatalf("continuation: %+v %v; want 5 moved, skipped %v", rep, err, skipped[1:])
	}
	b.assertRangeArchived(t, want, map[RangeKey]bool{{"", "odd"}: true})

	// The whole job: the odd keys reported, in the service's order, and left.
	more := rangeEntity("Sales", 7, 1)
	if err := b.current.Insert(b.ctx, more); err != nil {
		t.Fatal(err)
	}
	want[RangeKey{"Sales", more.RowKey}] = more.ETag
	rep, err = b.a.ArchiveRange(b.ctx, job)
	if err != nil || rep.Moved != 1 || !slices.Equal(rep.Skipped, skipped) || rep.Scanned != 1+len(skipped) {
		t.Fatalf("job: %+v %v; want 1 moved, skipped %v", rep, err, skipped)
	}
	left, err := b.current.Collect(b.ctx, repo.Query{Select: []string{"PartitionKey", "RowKey"}})
	if err != nil || len(left) != len(skipped) {
		t.Fatalf("%d left in the source, want the %d skipped: %v", len(left), len(skipped), err)
	}
	b.assertRangeArchived(t, want, map[RangeKey]bool{{"", "odd"}: true})

	// A checkpoint at an empty PartitionKey is outside a range that does not start at
	// the bottom.
	above := job
	above.PartitionKeyFrom, above.After = "A", &RangeKey{"", "odd"}
	if err := above.Validate(); !errors.Is(err, errs.ErrInvalidInput) {
		t.Fatalf("a checkpoint below pkFrom: %v", err)
	}
}

// An entity with an empty PartitionKey (a valid key: the service stores it, and it sorts
// first) in a table archived by conditions only, or by a partition range open at the
// bottom: it is inside the job's selection. The scan returns it first; the job must not
// take it for a key "outside the range" and fail (permanently) the whole range: the
// other entities must move, and the odd one be moved or reported.
func TestRangeEmptyPartitionKey(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"where", "pkTo"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, "")
			// repo refuses to write an empty PartitionKey; another writer (a JS client,
			// aztables itself) does not.
			raw := b.clients.Tables.NewClient(b.current.Name())
			if _, err := raw.AddEntity(b.ctx, []byte(`{"PartitionKey":"","RowKey":"odd","N":1}`), nil); err != nil {
				t.Skipf("no entity with an empty PartitionKey: %v", err)
			}
			b.loadRange(t, []string{"Sales"}, 5)
			job := ArchiveRangeJob{Source: b.current.Name(), TargetTable: b.archive.Name()}
			if name == "where" {
				job.Where = []filter.Condition{{Property: "N", Op: "ge", Type: "Edm.Int32", Value: "0"}}
			} else {
				job.PartitionKeyTo = "Z"
			}
			rep, err := b.a.ArchiveRange(b.ctx, job)
			left, lerr := b.current.Collect(b.ctx, repo.Query{Select: []string{"PartitionKey", "RowKey"}})
			if lerr != nil {
				t.Fatal(lerr)
			}
			if err != nil || len(left) > 1 {
				t.Fatalf("range: %+v %v; %d entities left in the source (want the 5 of Sales moved)", rep, err, len(left))
			}
		})
	}
}

// An entity with an empty RowKey (valid, and addressable) is the first of its partition:
// a range job archives it with the others, to a table and to a blob, and a single move
// archives it too.
func TestEmptyRowKey(t *testing.T) {
	t.Parallel()
	for _, target := range []string{"table", "blob"} {
		t.Run(target, func(t *testing.T) {
			t.Parallel()
			b := setup(t, "")
			b.loadRange(t, []string{"Sales"}, 3)
			if err := b.current.Insert(b.ctx, &codec.Entity{PartitionKey: "Sales", RowKey: "", Properties: map[string]any{"N": int32(-1)}}); err != nil {
				t.Fatal(err)
			}
			job := ArchiveRangeJob{Source: b.current.Name(), PartitionKey: "Sales", TargetTable: b.archive.Name()}
			if target == "blob" {
				c := testenv.ContainerName(t)
				t.Cleanup(func() { _, _ = b.clients.Blobs.DeleteContainer(context.Background(), c, nil) })
				job.TargetTable, job.TargetContainer = "", c
			}
			rep, err := b.a.ArchiveRange(b.ctx, job)
			if err != nil || rep.Moved != 4 {
				t.Fatalf("%+v %v", rep, err)
			}
			left, err := b.current.Collect(b.ctx, repo.Query{})
			if err != nil || len(left) != 0 {
				t.Fatalf("left %d: %v", len(left), err)
			}
		})
	}
}
