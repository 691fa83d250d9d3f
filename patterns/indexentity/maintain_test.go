package indexentity

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"testing"

	"github.com/tablepatterns/tablepatterns/internal/faultproxy"
	"github.com/tablepatterns/tablepatterns/patterns/internal/testbed"
	"github.com/tablepatterns/tablepatterns/queueworker"
	"github.com/tablepatterns/tablepatterns/repo"
)

// seed writes n employees of partition pk straight into the table, as a table looks
// before an index is added (no index entity lists them).
func (b *bed) seed(pk string, n int) []*Employee {
	b.t.Helper()
	out := make([]*Employee, n)
	for i := range n {
		out[i] = emp(pk, fmt.Sprintf("%06d", i), fmt.Sprintf("Last%02d", i%13))
	}
	if err := b.emps.BulkWrite(b.Ctx, out, nil); err != nil {
		b.t.Fatal(err)
	}
	return out
}

type verifier interface {
	Verify(context.Context, string, *VerifyOptions) (*Report, error)
	Repair(context.Context, string, *VerifyOptions) (*Report, error)
}

func (b *bed) clean(x verifier, pk string, entities int) {
	b.t.Helper()
	r, err := x.Verify(b.Ctx, pk, nil)
	if err != nil {
		b.t.Fatal(err)
	}
	if r.Drift() != 0 || r.Entities != entities {
		b.t.Fatalf("%s: %d entities (want %d), %d missing, %d stale, %d orphan: %+v", pk, r.Entities, entities, r.Missing, r.Stale, r.Orphan, r.Samples)
	}
}

// injectDrift writes around the index: a new employee (missing), a renamed one (listed
// under its old name only: stale), a deleted one (its entry is an orphan).
func (b *bed) injectDrift(pk string) {
	b.t.Helper()
	if err := b.emps.Insert(b.Ctx, emp(pk, "900000", "Newcomer")); err != nil {
		b.t.Fatal(err)
	}
	e, err := b.emps.Get(b.Ctx, pk, "000001")
	if err != nil {
		b.t.Fatal(err)
	}
	e.LastName = "Renamed"
	if err := b.emps.Update(b.Ctx, &e, nil); err != nil {
		b.t.Fatal(err)
	}
	if err := b.emps.Delete(b.Ctx, pk, "000002", nil); err != nil {
		b.t.Fatal(err)
	}
}

func (b *bed) expectDrift(x verifier, pk string, missing, stale, orphan int) {
	b.t.Helper()
	r, err := x.Verify(b.Ctx, pk, nil)
	if err != nil {
		b.t.Fatal(err)
	}
	if r.Missing != missing || r.Stale != stale || r.Orphan != orphan {
		b.t.Fatalf("verify: %d missing, %d stale, %d orphan, want %d, %d, %d: %+v", r.Missing, r.Stale, r.Orphan, missing, stale, orphan, r.Samples)
	}
	want := map[string]Drift{"900000": Missing, "000001": Stale, "000002": Orphan}
	for _, s := range r.Samples {
		if d, ok := want[s.Key.RowKey]; ok && d != s.Drift {
			b.t.Errorf("sample %+v, want %s", s, d)
		}
	}
	rr, err := x.Repair(b.Ctx, pk, nil)
	if err != nil || rr.Repaired != rr.Drift() || rr.Drift() != missing+stale+orphan {
		b.t.Fatalf("repair: %+v %v", rr, err)
	}
	if r, err := x.Repair(b.Ctx, pk, nil); err != nil || r.Drift() != 0 || r.Repaired != 0 {
		b.t.Fatalf("second repair: %+v %v", r, err)
	}
}

// Option 2: a backfill killed (its context cancelled) before random transactions resumes
// from its stored checkpoint and completes the index; then each kind of injected drift is
// found and repaired, and a second repair finds nothing.
func TestSamePartitionBackfillResumesVerifyRepairs(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	const n = 400
	b.seed("Sales", n)
	ix := b.samePartition(nil)
	b.expectMissing(ix, "Sales", n)
	rng := rand.New(rand.NewPCG(14, 2))
	var stored Checkpoint
	kills := 0
	for runs := 0; ; runs++ {
		if runs > 40 {
			t.Fatalf("no progress; checkpoint %+v", stored)
		}
		ctx, cancel := context.WithCancel(b.Ctx)
		var left atomic.Int64
		left.Store(int64(1 + rng.IntN(n/3)))
		if kills >= 4 {
			left.Store(-1)
		}
		ix.seams.step = func(ctx context.Context, step string) error {
			if left.Add(-1) == 0 {
				cancel()
			}
			return nil
		}
		cp, err := ix.BackfillPartition(ctx, "Sales", &BackfillOptions{After: stored.After, PageSize: 50,
			Checkpoint: func(_ context.Context, cp Checkpoint) error { stored = cp; return nil }})
		cancel()
		if err == nil && cp.Done {
			if cp.Scanned >= n {
				t.Fatalf("the last run scanned %d: it did not resume", cp.Scanned)
			}
			break
		}
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("run %d: %+v %v", runs, cp, err)
		}
		kills++
	}
	ix.seams.step = nil
	b.clean(ix, "Sales", n)
	b.checkIndex(ix, "Sales")
	b.injectDrift("Sales")
	b.expectDrift(ix, "Sales", 1, 1, 1)
	b.clean(ix, "Sales", n)
	b.checkIndex(ix, "Sales")
}

func (b *bed) expectMissing(x verifier, pk string, n int) {
	b.t.Helper()
	r, err := x.Verify(b.Ctx, pk, &VerifyOptions{Samples: 3})
	if err != nil || r.Missing != n || len(r.Samples) != 3 {
		b.t.Fatalf("before the backfill: %+v %v", r, err)
	}
}

// Option 2 through the worker: backfill jobs duplicated, reordered and from stale
// checkpoints (and one past the end) leave the index complete.
func TestSamePartitionBackfillJobsDuplicatedReordered(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	b.seed("Sales", 120)
	b.seed("Finance", 30)
	q := b.queue()
	ix := b.samePartition(&SamePartitionOptions{Queue: q})
	if err := ix.StartBackfill(b.Ctx); err != nil { // both partitions
		t.Fatal(err)
	}
	for _, after := range []string{"000060", "", "000060", "000119", "000010"} {
		if _, err := queueworker.Enqueue(b.Ctx, q, ix.BackfillKind(), "", Checkpoint{PartitionKey: "Sales", After: after}, nil); err != nil {
			t.Fatal(err)
		}
	}
	b.drain(q, ix.Register)
	b.clean(ix, "Sales", 120)
	b.clean(ix, "Finance", 30)
	b.checkIndex(ix, "Sales")
}

// Options 1 and 3: StartBackfill discovers the partitions and the worker lists every
// entity; injected drift (and a key listed under a value it never had) is found and
// repaired through Reconcile.
func TestEventualBackfillVerifyRepair(t *testing.T) {
	t.Parallel()
	for _, store := range []string{"table", "blob"} {
		t.Run(store, func(t *testing.T) {
			t.Parallel()
			b := setup(t, false)
			b.seed("Sales", 60)
			b.seed("Finance", 20)
			q := b.queue()
			var s Store
			if store == "table" {
				s = b.tableStore(0)
			} else {
				s = b.blobStore()
			}
			ix := b.eventual(s, q)
			b.expectMissing(ix, "Sales", 60)
			if err := ix.StartBackfill(b.Ctx); err != nil {
				t.Fatal(err)
			}
			b.drain(q, ix.Register)
			b.clean(ix, "Sales", 60)
			b.clean(ix, "Finance", 20)
			b.checkKeys(s, "Last00", k("Finance", "000000"), k("Finance", "000013"), k("Sales", "000000"), k("Sales", "000013"), k("Sales", "000026"), k("Sales", "000039"), k("Sales", "000052"))
			b.injectDrift("Sales")
			// A key listed under a value its entity never had, next to its own.
			if err := s.Add(b.Ctx, "Last05", k("Sales", "000003")); err != nil {
				t.Fatal(err)
			}
			orphans := 2
			b.expectDrift(ix, "Sales", 1, 1, orphans)
			b.clean(ix, "Sales", 60)
			b.checkKeys(s, "Last05", k("Finance", "000005"), k("Finance", "000018"), k("Sales", "000005"), k("Sales", "000018"), k("Sales", "000031"), k("Sales", "000044"), k("Sales", "000057"))
		})
	}
}

// Bad input is refused before any request.
func TestMaintenanceRefusesBadInputWithoutRequest(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	ix := b.samePartition(nil)
	q := b.queue()
	ev := b.eventual(b.tableStore(0), q)
	mark, qmark := b.tableProxy().Count(), b.Proxies.Queue.Count()
	errsOf := map[string]error{}
	_, errsOf["backfill empty pk"] = ix.BackfillPartition(b.Ctx, "", nil)
	_, errsOf["backfill bad after"] = ix.BackfillPartition(b.Ctx, "Sales", &BackfillOptions{After: "a#b"})
	_, errsOf["backfill page size"] = ix.BackfillPartition(b.Ctx, "Sales", &BackfillOptions{PageSize: 1001})
	_, errsOf["verify samples"] = ix.Verify(b.Ctx, "Sales", &VerifyOptions{Samples: -3})
	_, errsOf["repair bad pk"] = ix.Repair(b.Ctx, "a/b", nil)
	errsOf["start without queue"] = ix.StartBackfill(b.Ctx, "Sales")
	errsOf["register without queue"] = ix.Register(queueworker.NewRegistry())
	_, errsOf["eventual backfill limit"] = ev.BackfillPartition(b.Ctx, "Sales", &BackfillOptions{Limit: -1})
	_, errsOf["eventual verify pk"] = ev.Verify(b.Ctx, "", nil)
	errsOf["eventual start bad pk"] = ev.StartBackfill(b.Ctx, "Sales", "a?b")
	for name, err := range errsOf {
		if !errors.Is(err, repo.ErrInvalidInput) {
			t.Errorf("%s: %v, want ErrInvalidInput", name, err)
		}
	}
	if n := b.tableProxy().Count() - mark; n != 0 {
		t.Errorf("%d table requests sent", n)
	}
	if n := b.Proxies.Queue.Count() - qmark; n != 0 {
		t.Errorf("%d queue requests sent", n)
	}
}

// Option 2: a backfill transaction held at the proxy while a live rename of the same
// entity commits cannot list the entity under its old value: the transaction is
// conditional on the entity's ETag its page read, fails, and the retry from fresh reads
// finds the entity listed by the rename.
func TestSamePartitionWindowBackfillCannotListAnOldValue(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	direct := must(repo.New[Employee](b.Direct.Tables, b.Table, &repo.Options{Retry: fast}))
	if err := direct.Insert(b.Ctx, emp("Sales", "000001", "Jones")); err != nil {
		t.Fatal(err)
	}
	ix := b.samePartition(nil) // through the proxy
	live := must(NewSamePartition(direct, "LastName", lastName, nil))
	ps := b.tableProxy().PauseAt("backfill transaction", faultproxy.IsBatch, 1)
	type result struct {
		cp  Checkpoint
		err error
	}
	done := make(chan result, 1)
	go func() {
		cp, err := ix.BackfillPartition(b.Ctx, "Sales", nil)
		done <- result{cp, err}
	}()
	testbed.WaitHeld(t, ps)
	e := must(direct.Get(b.Ctx, "Sales", "000001"))
	e.LastName = "Smith"
	if err := live.Update(b.Ctx, &e); err != nil {
		t.Fatal(err)
	}
	ps.Release()
	res := <-done
	if res.err != nil || !res.cp.Done || res.cp.Written != 0 {
		t.Fatalf("backfill: %+v %v", res.cp, res.err)
	}
	if ids := must(ix.IDs(b.Ctx, "Sales", "Jones")); len(ids) != 0 {
		t.Fatalf("listed under the old value: %v", ids)
	}
	if ids := must(ix.IDs(b.Ctx, "Sales", "Smith")); len(ids) != 1 {
		t.Fatalf("Smith lists %v", ids)
	}
	b.clean(ix, "Sales", 1)
}
