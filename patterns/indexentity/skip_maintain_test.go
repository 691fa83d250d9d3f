package indexentity

import (
	"context"
	"strings"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/tablepatterns/tablepatterns/repo"
)

// An entity whose value cannot be indexed (over the key limit, written around the index)
// is skipped and counted by every backfill, reported as Missing by Verify, and left by
// Repair without failing the partition; the entities after it are listed. Each skip is
// logged under the name of the operation that skipped it.
func TestBackfillSkipsUnindexableEntityVerifyReportsIt(t *testing.T) {
	t.Parallel()
	type index interface {
		verifier
		BackfillPartition(context.Context, string, *BackfillOptions) (Checkpoint, error)
	}
	for _, tc := range []struct {
		name string
		ix   func(b *bed) index
	}{
		{"SamePartition", func(b *bed) index { return b.samePartition(nil) }},
		{"EventualTableStore", func(b *bed) index { return b.eventual(b.tableStore(0), b.queue()) }},
		{"EventualBlobStore", func(b *bed) index { return b.eventual(b.blobStore(), b.queue()) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, false)
			core, logs := observer.New(zap.WarnLevel)
			b.emps = must(repo.New[Employee](b.Clients.Tables, b.Table, &repo.Options{Retry: fast, Logger: zap.New(core)}))
			skips := func(op string, want int) {
				t.Helper()
				got := logs.TakeAll()
				n := 0
				for _, e := range got {
					if strings.Contains(e.Message, "skipped") {
						if !strings.HasPrefix(e.Message, "indexentity: "+op+" skipped") {
							t.Fatalf("a %s logged %q", op, e.Message)
						}
						n++
					}
				}
				if n != want {
					t.Fatalf("a %s logged %d skips, want %d: %v", op, n, want, got)
				}
			}
			long := strings.Repeat("L", 1100)
			for _, e := range []*Employee{emp("Sales", "000001", "Jones"), emp("Sales", "000002", long), emp("Sales", "000003", "Smith")} {
				if err := b.emps.Insert(b.Ctx, e); err != nil {
					t.Fatal(err)
				}
			}
			ix := tc.ix(b)
			cp, err := ix.BackfillPartition(b.Ctx, "Sales", nil)
			if err != nil || !cp.Done || cp.Scanned != 3 || cp.Written != 2 || cp.Skipped != 1 {
				t.Fatalf("backfill: %+v %v (want done, 3 scanned, 2 written, 1 skipped)", cp, err)
			}
			skips("backfill", 1)
			r, err := ix.Verify(b.Ctx, "Sales", nil)
			if err != nil || r.Missing != 1 || r.Drift() != 1 || len(r.Samples) != 1 || r.Samples[0].Key != k("Sales", "000002") {
				t.Fatalf("verify: %+v %v (want the unindexable entity reported missing)", r, err)
			}
			r, err = ix.Repair(b.Ctx, "Sales", nil)
			if err != nil || r.Repaired != 0 || r.Missing != 1 {
				t.Fatalf("repair: %+v %v (want it left, nothing written, no error)", r, err)
			}
			skips("repair", 1)
			cp, err = ix.BackfillPartition(b.Ctx, "Sales", nil)
			if err != nil || cp.Written != 0 || cp.Skipped != 1 {
				t.Fatalf("rerun: %+v %v (want nothing written, the entity skipped again)", cp, err)
			}
		})
	}
}

// Checkpoint.Written of an Eventual backfill on a BlobStore counts only the listings
// written: a rerun over a complete index reports 0.
func TestEventualBlobStoreBackfillRerunReportsNothingWritten(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	b.seed("Sales", 5)
	ix := b.eventual(b.blobStore(), b.queue())
	if cp, err := ix.BackfillPartition(b.Ctx, "Sales", nil); err != nil || cp.Written != 5 {
		t.Fatalf("first backfill: %+v %v", cp, err)
	}
	cp, err := ix.BackfillPartition(b.Ctx, "Sales", nil)
	if err != nil || cp.Scanned != 5 || cp.Written != 0 {
		t.Fatalf("rerun over a complete index: %+v %v", cp, err)
	}
	b.clean(ix, "Sales", 5)
}
