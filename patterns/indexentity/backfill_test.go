package indexentity

import (
	"context"
	"strings"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/internal/faultproxy"
	"github.com/tablepatterns/tablepatterns/patterns/internal/testbed"
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

// SamePartition.Repair (option 2): an orphan entry (its entity deleted around
// the index) whose removal is held at the proxy while a live Insert re-creates the entity
// under the same value. The live insert finds the id listed already; when the held
// removal lands, the entity must not be left unlisted.
func TestSamePartitionRepairKeepsOrphanEntryALiveInsertClaims(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	direct := must(repo.New[Employee](b.Direct.Tables, b.Table, &repo.Options{Retry: fast}))
	live := must(NewSamePartition(direct, "LastName", lastName, nil))
	for _, id := range []string{"000001", "000002"} {
		if err := live.Insert(b.Ctx, emp("Sales", id, "Jones")); err != nil {
			t.Fatal(err)
		}
	}
	if err := direct.Delete(b.Ctx, "Sales", "000002", nil); err != nil { // around the index
		t.Fatal(err)
	}
	ix := b.samePartition(nil) // through the proxy
	ps := b.tableProxy().PauseAt("orphan removal", faultproxy.IsBatch, 1)
	type result struct {
		r   *Report
		err error
	}
	done := make(chan result, 1)
	go func() {
		r, err := ix.Repair(b.Ctx, "Sales", nil)
		done <- result{r, err}
	}()
	testbed.WaitHeld(t, ps)
	if err := live.Insert(b.Ctx, emp("Sales", "000002", "Jones")); err != nil {
		t.Fatal(err)
	}
	ps.Release()
	res := <-done
	t.Logf("repair: %+v %v", res.r, res.err)
	if res.err != nil {
		t.Fatal(res.err)
	}
	if ids := must(ix.IDs(b.Ctx, "Sales", "Jones")); len(ids) != 2 {
		t.Fatalf("Jones lists %v: the repair unlisted a live entity", ids)
	}
	b.clean(ix, "Sales", 2)
}

// The same window for Eventual (TableStore): the removal of an orphan key is held while
// the entity is re-created under the orphan's value and its reconciliation completes.
func TestEventualRepairKeepsOrphanEntryALiveInsertClaims(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	storeTable := b.NewTableName()
	q := b.queue()
	direct := must(repo.New[Employee](b.Direct.Tables, b.Table, &repo.Options{Retry: fast}))
	dstore := must(NewTableStore(must(repo.New[codec.Entity](b.Direct.Tables, storeTable, &repo.Options{Retry: fast})), "LastName", nil))
	live := must(NewEventual(direct, "LastName", lastName, dstore, q, nil))
	pstore := must(NewTableStore(must(repo.New[codec.Entity](b.Clients.Tables, storeTable, &repo.Options{Retry: fast})), "LastName", nil))
	ix := b.eventual(pstore, q) // through the proxy
	if err := direct.Insert(b.Ctx, emp("Sales", "000001", "Jones")); err != nil {
		t.Fatal(err)
	}
	if err := dstore.Add(b.Ctx, "Jones", k("Sales", "000001")); err != nil {
		t.Fatal(err)
	}
	if err := dstore.Add(b.Ctx, "Jones", k("Sales", "000002")); err != nil { // orphan
		t.Fatal(err)
	}
	ps := b.tableProxy().PauseAt("orphan removal", faultproxy.IsBatch, 1)
	type result struct {
		r   *Report
		err error
	}
	done := make(chan result, 1)
	go func() {
		r, err := ix.Repair(b.Ctx, "Sales", nil)
		done <- result{r, err}
	}()
	testbed.WaitHeld(t, ps)
	if err := direct.Insert(b.Ctx, emp("Sales", "000002", "Jones")); err != nil {
		t.Fatal(err)
	}
	if err := live.Reconcile(b.Ctx, k("Sales", "000002")); err != nil {
		t.Fatal(err)
	}
	ps.Release()
	res := <-done
	t.Logf("repair: %+v %v", res.r, res.err)
	if res.err != nil {
		t.Fatal(res.err)
	}
	b.checkKeys(dstore, "Jones", k("Sales", "000001"), k("Sales", "000002"))
	b.clean(ix, "Sales", 2)
}

// SamePartition.BackfillPartition, "the way to build an index added to a table
// that already holds data": the entities were written by another application and carry a
// property Employee does not declare. The backfill rewrites each entity (the live path's
// conditional update) and must not erase that property.
func TestSamePartitionBackfillKeepsUndeclaredProperties(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	raw := must(repo.New[codec.Entity](b.Clients.Tables, b.Table, &repo.Options{Retry: fast}))
	e := &codec.Entity{PartitionKey: "Sales", RowKey: "000001", Properties: map[string]any{
		"FirstName": "Jun", "LastName": "Jones", "Age": int32(34), "Email": "j@contoso.com", "Badge": "keep me"}}
	if err := raw.Insert(b.Ctx, e); err != nil {
		t.Fatal(err)
	}
	ix := b.samePartition(nil)
	cp, err := ix.BackfillPartition(b.Ctx, "Sales", nil)
	if err != nil || cp.Written != 1 {
		t.Fatalf("backfill: %+v %v", cp, err)
	}
	got := must(raw.Get(b.Ctx, "Sales", "000001"))
	if got.Properties["Badge"] != "keep me" {
		t.Fatalf("the backfill erased a property the type does not declare: %+v", got.Properties)
	}
}

// Checkpoint.Written is documented as "those whose listing had to be written": a second
// Eventual backfill over a complete index writes nothing and must report 0.
func TestEventualBackfillRerunReportsNothingWritten(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	b.seed("Sales", 5)
	ix := b.eventual(b.tableStore(0), b.queue())
	if cp, err := ix.BackfillPartition(b.Ctx, "Sales", nil); err != nil || cp.Written != 5 {
		t.Fatalf("first backfill: %+v %v", cp, err)
	}
	cp, err := ix.BackfillPartition(b.Ctx, "Sales", nil)
	if err != nil || cp.Scanned != 5 || cp.Written != 0 {
		t.Fatalf("rerun over a complete index: %+v %v (Written should count the listings written)", cp, err)
	}
	b.clean(ix, "Sales", 5)
}

// SamePartition.BackfillPartition over data that predates the index: one entity
// (written around the index) has a value no index key can hold (over the 1 KiB key
// limit). The backfill must not stop there (a job that returns ErrInvalidInput is
// cancelled, so the rest of the partition would never be listed): the entities after it
// must be listed, as secondaryindex does (it logs and goes on).
func TestSamePartitionBackfillGoesPastUnindexableValue(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	long := strings.Repeat("L", 1100)
	for _, e := range []*Employee{emp("Sales", "000001", "Jones"), emp("Sales", "000002", long), emp("Sales", "000003", "Smith")} {
		if err := b.emps.Insert(b.Ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	ix := b.samePartition(nil)
	cp, err := ix.BackfillPartition(b.Ctx, "Sales", nil)
	ids, _ := ix.IDs(b.Ctx, "Sales", "Smith")
	t.Logf("backfill %+v %v; Smith lists %v", cp, err, ids)
	if len(ids) != 1 {
		t.Fatalf("the entity after the unindexable one was never listed (backfill: %+v %v)", cp, err)
	}
}

// The same for Eventual (TableStore): one unindexable value stops the partition's backfill
// with ErrInvalidInput, which the backfill job's handler turns into a cancel.
func TestEventualBackfillGoesPastUnindexableValue(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	long := strings.Repeat("L", 1100)
	for _, e := range []*Employee{emp("Sales", "000001", "Jones"), emp("Sales", "000002", long), emp("Sales", "000003", "Smith")} {
		if err := b.emps.Insert(b.Ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	s := b.tableStore(0)
	ix := b.eventual(s, b.queue())
	cp, err := ix.BackfillPartition(b.Ctx, "Sales", nil)
	ks, _ := s.Keys(b.Ctx, "Smith")
	t.Logf("backfill %+v %v; Smith lists %v", cp, err, ks)
	if len(ks) != 1 || err != nil {
		t.Fatalf("one unindexable value stopped the partition's backfill: %+v %v (Smith lists %v)", cp, err, ks)
	}
}
