package consistency

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/internal/testenv"
	"github.com/tablepatterns/tablepatterns/repo"
)

// The target table does not exist yet ("created by the first copy", rangeTargets): one
// run, and two runs of one job started at once. A transaction to a missing table fails
// with an *repo.ActionError 404 TableNotFound, which isTableNotFound (a *errs.ServiceError
// only) does not recognize: writeCopies takes it for "a copy we meant to replace is
// gone" (errRestart), never creates the table, and every batch gives up after its
// retries (the worker redelivers until the message is poisoned). Expected: the first
// copy creates the table and every entity ends archived once.
func TestRangeCreatesMissingTarget(t *testing.T) {
	t.Parallel()
	for _, runs := range []int{1, 2} {
		t.Run(fmt.Sprintf("%d runs", runs), func(t *testing.T) {
			t.Parallel()
			b := setup(t, "")
			want := b.loadRange(t, []string{"Sales", "Ops"}, 150)
			target := b.archive.Name() + "New"
			arch, err := repo.New[codec.Entity](b.clients.Tables, target, &repo.Options{Retry: fastRetry()})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = arch.DeleteTable(context.Background()) })
			b.archive = arch
			job := ArchiveRangeJob{Source: b.current.Name(), PartitionKeyFrom: "A", PartitionKeyTo: "Z", TargetTable: target}
			var wg sync.WaitGroup
			errs := make([]error, runs)
			moved := make([]int, runs)
			start := make(chan struct{})
			for i := range runs {
				wg.Add(1)
				go func() {
					defer wg.Done()
					<-start
					rep, err := b.a.ArchiveRange(b.ctx, job)
					errs[i], moved[i] = err, rep.Moved
				}()
			}
			close(start)
			wg.Wait()
			total := 0
			for i, err := range errs {
				if err != nil {
					t.Fatalf("run %d (moved %d): %v", i, moved[i], err)
				}
				total += moved[i]
			}
			if total != 300 {
				t.Fatalf("moved %v", moved)
			}
			b.assertRangeArchived(t, want, nil)
		})
	}
}

// Between a range batch's reads and its copy, the application writes version 2 and a
// single-entity job archives it (its copy, newer than the batch's view, lands in the
// target and the source entity is deleted). The batch's insert of version 1 must not
// replace it: version 2 stays archived and the rest moves. Table and blob targets.
func TestRangeSingleJobWritesNewerCopyMidBatch(t *testing.T) {
	t.Parallel()
	for _, target := range []string{"table", "blob"} {
		t.Run(target, func(t *testing.T) {
			t.Parallel()
			b := setup(t, "")
			want := b.loadRange(t, []string{"Sales"}, 30)
			job := ArchiveRangeJob{Source: b.current.Name(), PartitionKey: "Sales", TargetTable: b.archive.Name()}
			one := ArchiveEntityJob{Source: b.current.Name(), PartitionKey: "Sales", RowKey: fmt.Sprintf("%06d", 7), TargetTable: b.archive.Name()}
			if target == "blob" {
				c := testenv.ContainerName(t)
				job.TargetTable, job.TargetContainer = "", c
				one.TargetTable, one.TargetContainer = "", c
				t.Cleanup(func() { _, _ = b.clients.Blobs.DeleteContainer(context.Background(), c, nil) })
			}
			single, err := New(b.clients, &Options{Retry: fastRetry()})
			if err != nil {
				t.Fatal(err)
			}
			v2 := rangeEntity("Sales", 7, 2)
			var once sync.Once
			b.a.seams.step = func(kind, step string) error {
				if kind != KindArchiveRange || step != "read" {
					return nil
				}
				var err error
				once.Do(func() {
					if err = b.current.Update(b.ctx, v2, &repo.UpdateOptions{Unconditional: true}); err != nil {
						return
					}
					var out Outcome
					out, err = single.ArchiveEntity(b.ctx, one)
					if err == nil && out != OutcomeMoved {
						err = fmt.Errorf("single job: %s", out)
					}
				})
				return err
			}
			rep, err := b.a.ArchiveRange(b.ctx, job)
			if err != nil {
				t.Fatal(err)
			}
			if rep.Moved != 29 {
				t.Fatalf("moved %d, want 29", rep.Moved)
			}
			want[RangeKey{"Sales", v2.RowKey}] = v2.ETag
			if target == "table" {
				b.assertRangeArchived(t, want, nil)
				return
			}
			for k, etag := range want {
				got, err := b.a.ReadArchivedEntity(b.ctx, job.TargetContainer, b.current.Name(), k.PartitionKey, k.RowKey)
				if err != nil {
					t.Fatal(err)
				}
				if k.RowKey == v2.RowKey && got.Properties["Version"] != int32(2) {
					t.Fatalf("the newer copy was replaced: %v (etag %s)", got.Properties, etag)
				}
			}
			if left, err := b.current.Collect(b.ctx, repo.Query{}); err != nil || len(left) != 0 {
				t.Fatalf("source: %d left: %v", len(left), err)
			}
		})
	}
}

// Entities near 1 MiB (15 binary properties of 64 KiB: about 1.3 MB of JSON each) in one
// partition: the copies are cut into transactions under 4 MiB by payload, and all move.
func TestRangeNearMaxEntitiesOnePartition(t *testing.T) {
	t.Parallel()
	b := setup(t, "")
	blob := bytes.Repeat([]byte{0xfb}, 64<<10-64)
	// Three such entities fill a transaction: four make two (seven, under make soak, three).
	n := testenv.Scale(4, 7)
	for i := range n {
		e := &codec.Entity{PartitionKey: "Big", RowKey: fmt.Sprintf("%06d", i), Properties: map[string]any{}}
		for p := range 15 {
			e.Properties[fmt.Sprintf("P%02d", p)] = blob
		}
		if err := b.current.Insert(b.ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	job := ArchiveRangeJob{Source: b.current.Name(), PartitionKey: "Big", TargetTable: b.archive.Name()}
	rep, err := b.a.ArchiveRange(b.ctx, job)
	if err != nil || rep.Moved != n {
		t.Fatalf("%+v: %v", rep, err)
	}
	got, err := b.archive.Collect(b.ctx, repo.Query{Select: []string{"PartitionKey", "RowKey"}})
	if err != nil || len(got) != n {
		t.Fatalf("archived %d: %v", len(got), err)
	}
	last, err := b.archive.Get(b.ctx, "Big", got[3].RowKey) // one whole copy is enough to compare
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(last.Properties["P14"].([]byte), blob) {
		t.Fatal("a copy's binary property differs")
	}
}
