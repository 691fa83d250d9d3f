package secondaryindex_test

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/internal/faultproxy"
	"github.com/tablepatterns/tablepatterns/patterns/internal/testbed"
	"github.com/tablepatterns/tablepatterns/patterns/secondaryindex"
	"github.com/tablepatterns/tablepatterns/queueworker"
	"github.com/tablepatterns/tablepatterns/repo"
)

// seedEmployees writes n employees over the given departments straight into the table,
// as a table looks before an index is added to it (no copies, no refs).
func (b *bed) seedEmployees(t *testing.T, n int, depts ...string) []*Employee {
	t.Helper()
	raw, err := repo.New[Employee](b.Direct.Tables, b.Table, b.RepoOptions())
	if err != nil {
		t.Fatal(err)
	}
	out := make([]*Employee, n)
	for i := range n {
		e := iemp(i, "First", fmt.Sprintf("Last%d", i%97), fmt.Sprintf("employee%06d@contoso.com", i))
		e.Department = depts[i%len(depts)]
		out[i] = e
	}
	if err := raw.BulkWrite(b.Ctx, out, nil); err != nil {
		t.Fatal(err)
	}
	return out
}

// mustClean verifies every partition and fails the test on any drift.
func mustClean[X interface {
	Verify(context.Context, string, *secondaryindex.VerifyOptions) (*secondaryindex.Report, error)
}](t *testing.T, ctx context.Context, x X, wantEntities int, depts ...string) {
	t.Helper()
	total := 0
	for _, pk := range depts {
		r, err := x.Verify(ctx, pk, nil)
		if err != nil {
			t.Fatal(err)
		}
		if r.Drift() != 0 {
			t.Fatalf("partition %s: %d missing, %d stale, %d orphan; samples %+v", pk, r.Missing, r.Stale, r.Orphan, r.Samples)
		}
		total += r.Entities
	}
	if wantEntities >= 0 && total != wantEntities {
		t.Fatalf("verify read %d entities, want %d", total, wantEntities)
	}
}

// Issue 14 ("Done when"): a backfill of an email index over 10,000 existing employees
// (2,000 with -short) in 4 departments, run by the worker one job per partition, while 4
// writers keep inserting and updating through the index, ends with Verify reporting no
// drift in any partition, and every employee counted.
func TestInterBackfillWhileWritersWrite(t *testing.T) {
	t.Parallel()
	n := 10000
	if testing.Short() {
		n = 2000
	}
	depts := []string{"Sales", "Marketing", "Finance", "Support"}
	b := setup(t, false)
	b.seedEmployees(t, n, depts...)
	q, queue := b.Queue()
	x := b.inter(t, q, -1, byEmail)
	w := b.worker(t, queue, x)
	mustDrift := func() int {
		d := 0
		for _, pk := range depts {
			r, err := x.Verify(b.Ctx, pk, &secondaryindex.VerifyOptions{Samples: -1})
			if err != nil {
				t.Fatal(err)
			}
			d += r.Missing
		}
		return d
	}
	if d := mustDrift(); d != n {
		t.Fatalf("before the backfill verify finds %d missing copies, want %d", d, n)
	}
	if err := w.Start(b.Ctx); err != nil {
		t.Fatal(err)
	}
	if err := x.StartBackfill(b.Ctx); err != nil { // discovers the 4 partitions
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var inserted atomic.Int64
	for wr := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(wr), 14))
			for i := range 60 {
				if i%2 == 0 {
					e := iemp(100000+wr*1000+i, "New", "Hire", fmt.Sprintf("new%d-%d@contoso.com", wr, i))
					e.Department = depts[rng.IntN(len(depts))]
					if err := x.Insert(b.Ctx, e); err != nil {
						t.Error(err)
						return
					}
					inserted.Add(1)
					continue
				}
				id := rng.IntN(n)
				e, err := x.Get(b.Ctx, depts[id%len(depts)], fmt.Sprintf("%06d", id))
				if err != nil {
					t.Error(err)
					return
				}
				e.Email = fmt.Sprintf("moved%d-%d-%06d@contoso.com", wr, i, id)
				e.ETag = "" // last writer wins: another writer may have moved it too
				if err := x.Update(b.Ctx, &e); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if err := w.Stop(b.Ctx); err != nil {
		t.Fatal(err)
	}
	testbed.Drain(t, w)
	mustClean(t, b.Ctx, x, n+int(inserted.Load()), depts...)
}

// Verify finds each kind of injected drift (a deleted copy, a stale copy, an orphan of a
// deleted entity, an orphan under an old value) with its keys, and Repair fixes all of
// them through the reconciliation; a second Repair finds nothing.
func TestInterVerifyFindsAndRepairsDrift(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	q, queue := b.Queue()
	x := b.inter(t, q, -1, byEmail)
	w := b.worker(t, queue, x)
	for i := 1; i <= 5; i++ {
		if err := x.Insert(b.Ctx, iemp(i, "F", "L", fmt.Sprintf("e%d@contoso.com", i))); err != nil {
			t.Fatal(err)
		}
	}
	testbed.Drain(t, w)
	mustClean(t, b.Ctx, x, 5, "Sales")

	// Missing: employee 1's copy deleted by hand.
	if err := b.Raw.Delete(b.Ctx, "email_Sales", interKey("e1@contoso.com", "000001"), nil); err != nil {
		t.Fatal(err)
	}
	// Stale: employee 2's copy edited by hand.
	c2 := b.row(t, "email_Sales", interKey("e2@contoso.com", "000002"))
	c2.Properties["FirstName"] = "Tampered"
	if err := b.Raw.Upsert(b.Ctx, c2, nil); err != nil {
		t.Fatal(err)
	}
	// Orphans: a copy of an employee that does not exist, and an old value of employee 3.
	for _, k := range []string{interKey("ghost@contoso.com", "000099"), interKey("old3@contoso.com", "000003")} {
		o := &codec.Entity{PartitionKey: "email_Sales", RowKey: k, Properties: map[string]any{"FirstName": "Ghost"}}
		if err := b.Raw.Insert(b.Ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	r, err := x.Verify(b.Ctx, "Sales", nil)
	if err != nil {
		t.Fatal(err)
	}
	if r.Missing != 1 || r.Stale != 1 || r.Orphan != 2 || r.Entities != 5 || r.Repaired != 0 {
		t.Fatalf("verify: %+v", r)
	}
	got := map[string]secondaryindex.Drift{}
	for _, s := range r.Samples {
		got[s.CopyKey] = s.Drift
	}
	want := map[string]secondaryindex.Drift{
		interKey("e1@contoso.com", "000001"):    secondaryindex.Missing,
		interKey("e2@contoso.com", "000002"):    secondaryindex.Stale,
		interKey("ghost@contoso.com", "000099"): secondaryindex.Orphan,
		interKey("old3@contoso.com", "000003"):  secondaryindex.Orphan,
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("samples %v, want %v", got, want)
	}
	if r, err := x.Verify(b.Ctx, "Sales", &secondaryindex.VerifyOptions{Samples: 2}); err != nil || len(r.Samples) != 2 || r.Drift() != 4 {
		t.Fatalf("samples bounded to 2: %+v %v", r, err)
	}
	r, err = x.Repair(b.Ctx, "Sales", nil)
	if err != nil {
		t.Fatal(err)
	}
	if r.Drift() != 4 || r.Repaired != 4 {
		t.Fatalf("repair report %+v", r)
	}
	mustClean(t, b.Ctx, x, 5, "Sales")
	if c := b.row(t, "email_Sales", interKey("e2@contoso.com", "000002")); c == nil || c.Properties["FirstName"] != "F" {
		t.Fatalf("stale copy not rewritten: %+v", c)
	}
	if e, err := x.Lookup(b.Ctx, "Sales", "email", "e1@contoso.com"); err != nil || e.EmployeeID != "000001" {
		t.Fatalf("lookup of the repaired copy: %+v %v", e, err)
	}
	if r, err := x.Repair(b.Ctx, "Sales", nil); err != nil || r.Drift() != 0 || r.Repaired != 0 {
		t.Fatalf("second repair: %+v %v", r, err)
	}
}

// The same for Intra: a deleted copy, an edited copy and an orphan are found, repaired
// through Update (the live path), and a second Repair finds nothing.
func TestIntraVerifyFindsAndRepairsDrift(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	x := b.intra(t, byEmail, byLast)
	for i := 1; i <= 5; i++ {
		if err := x.Insert(b.Ctx, emp(i, "F", fmt.Sprintf("L%d", i), fmt.Sprintf("e%d@contoso.com", i))); err != nil {
			t.Fatal(err)
		}
	}
	mustClean(t, b.Ctx, x, 5, "Sales")
	if err := b.Raw.Delete(b.Ctx, "Sales", "email_e1@contoso.com", nil); err != nil {
		t.Fatal(err)
	}
	c := b.row(t, "Sales", "email_e2@contoso.com")
	c.Properties["LastName"] = "Tampered"
	if err := b.Raw.Upsert(b.Ctx, c, nil); err != nil {
		t.Fatal(err)
	}
	orphan := &codec.Entity{PartitionKey: "Sales", RowKey: "email_ghost@contoso.com", Properties: map[string]any{"EmployeeId": "000099"}}
	if err := b.Raw.Insert(b.Ctx, orphan); err != nil {
		t.Fatal(err)
	}
	r, err := x.Verify(b.Ctx, "Sales", nil)
	if err != nil {
		t.Fatal(err)
	}
	if r.Missing != 1 || r.Stale != 1 || r.Orphan != 1 || r.Entities != 5 {
		t.Fatalf("verify: %+v", r)
	}
	r, err = x.Repair(b.Ctx, "Sales", nil)
	if err != nil || r.Repaired != 3 {
		t.Fatalf("repair: %+v %v", r, err)
	}
	mustClean(t, b.Ctx, x, 5, "Sales")
	if b.row(t, "Sales", "email_ghost@contoso.com") != nil {
		t.Fatal("orphan kept")
	}
	if r, err := x.Repair(b.Ctx, "Sales", nil); err != nil || r.Drift() != 0 || r.Repaired != 0 {
		t.Fatalf("second repair: %+v %v", r, err)
	}
}

// An Intra index added to a table that holds only primary copies is built by
// BackfillPartition; Lookup finds every entity by the new index afterwards.
func TestIntraBackfillBuildsAnAddedIndex(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	old := b.intra(t)
	for i := range 150 {
		if err := old.Insert(b.Ctx, emp(i, "F", "L", fmt.Sprintf("e%d@contoso.com", i))); err != nil {
			t.Fatal(err)
		}
	}
	x := b.intra(t, byEmail)
	if r, err := x.Verify(b.Ctx, "Sales", nil); err != nil || r.Missing != 150 {
		t.Fatalf("before: %+v %v", r, err)
	}
	var stored secondaryindex.Checkpoint
	cp, err := x.BackfillPartition(b.Ctx, "Sales", &secondaryindex.BackfillOptions{
		Checkpoint: func(_ context.Context, cp secondaryindex.Checkpoint) error { stored = cp; return nil }})
	if err != nil || !cp.Done || cp.Scanned != 150 || cp.Written != 150 || stored != cp {
		t.Fatalf("backfill: %+v (stored %+v) %v", cp, stored, err)
	}
	mustClean(t, b.Ctx, x, 150, "Sales")
	if e, err := x.Lookup(b.Ctx, "Sales", "email", "e42@contoso.com"); err != nil || e.EmployeeID != "000042" {
		t.Fatalf("lookup: %+v %v", e, err)
	}
}

// A backfill killed (its context cancelled) at random points inside its reconciliations
// resumes from the checkpoint it last stored and ends with the partition complete.
func TestInterBackfillResumesFromCheckpointAfterKills(t *testing.T) {
	t.Parallel()
	const n = 1000
	b := setup(t, false)
	b.seedEmployees(t, n, "Sales")
	q, _ := b.Queue()
	x := b.inter(t, q, -1, byEmail)
	rng := rand.New(rand.NewPCG(14, 3))
	var stored secondaryindex.Checkpoint // what a job would persist
	kills := 0
	for runs := 0; ; runs++ {
		if runs > 50 {
			t.Fatalf("no progress after %d runs; checkpoint %+v", runs, stored)
		}
		ctx, cancel := context.WithCancel(b.Ctx)
		var left atomic.Int64                  // hook calls until the kill; the reconciliations run in parallel
		left.Store(int64(1 + rng.IntN(n*2/3))) // 2 hook calls per entity
		if kills >= 5 {
			left.Store(-1) // let it finish
		}
		secondaryindex.SetTestHook(x, func(stage string) error {
			if left.Add(-1) == 0 {
				cancel()
			}
			return nil
		})
		cp, err := x.BackfillPartition(ctx, "Sales", &secondaryindex.BackfillOptions{After: stored.After, PageSize: 100,
			Checkpoint: func(_ context.Context, cp secondaryindex.Checkpoint) error { stored = cp; return nil }})
		cancel()
		if err == nil && cp.Done {
			if cp.Scanned >= n {
				t.Fatalf("the last run scanned %d entities: it did not resume from %q", cp.Scanned, stored.After)
			}
			break
		}
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("run %d: %+v %v", runs, cp, err)
		}
		if cp.After != stored.After {
			t.Fatalf("returned checkpoint %q, stored %q", cp.After, stored.After)
		}
		kills++
	}
	secondaryindex.SetTestHook(x, nil)
	if kills < 3 {
		t.Fatalf("only %d kills", kills)
	}
	mustClean(t, b.Ctx, x, n, "Sales")
}

// Backfill jobs delivered twice, out of order, and from stale checkpoints leave the
// index complete; and a backfill that read an entity before a live update cannot replace
// the copy the update's own reconciliation wrote (the backfill's Reconcile is held after
// its reads while the live write and its reconciliation run to the end).
func TestInterBackfillDuplicatedReorderedJobsAndLiveWrites(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	b.seedEmployees(t, 300, "Sales")
	b.seedEmployees(t, 1, "Solo") // employee 000000 of Solo, alone in its partition
	q, queue := b.Queue()
	x := b.inter(t, q, -1, byEmail)
	w := b.worker(t, queue, x)
	// The live update of Solo/000000 happens while the backfill's reconciliation of it is
	// between its reads and its transaction.
	var once sync.Once
	live := b.inter(t, q, -1, byEmail)
	secondaryindex.SetTestHook(x, func(stage string) error {
		if stage != "read" {
			return nil
		}
		var err error
		once.Do(func() {
			e, gerr := live.Get(b.Ctx, "Solo", "000000")
			if gerr != nil {
				err = gerr
				return
			}
			e.Email = "newer@contoso.com"
			if err = live.Update(b.Ctx, &e); err == nil {
				err = live.Reconcile(b.Ctx, "Solo", "000000")
			}
		})
		return err
	})
	if cp, err := x.BackfillPartition(b.Ctx, "Solo", nil); err != nil || !cp.Done || cp.Scanned != 1 {
		t.Fatalf("backfill of Solo: %+v %v", cp, err)
	}
	secondaryindex.SetTestHook(x, nil)
	if got := b.rows(t, "email_Solo"); len(got) != 2 || got[1] != interKey("newer@contoso.com", "000000") {
		t.Fatalf("the backfill replaced the live write's copy: %q", got)
	}
	mustClean(t, b.Ctx, x, 1, "Solo")
	// Jobs: duplicated, reordered, one from a stale checkpoint and one past the end.
	for _, after := range []string{"000150", "", "000150", "", "000299", "000010"} {
		if _, err := queueworker.Enqueue(b.Ctx, q, x.BackfillKind(), "", secondaryindex.Checkpoint{PartitionKey: "Sales", After: after}, nil); err != nil {
			t.Fatal(err)
		}
	}
	testbed.Drain(t, w)
	mustClean(t, b.Ctx, x, 300, "Sales")
	if e, err := x.Lookup(b.Ctx, "Solo", "email", "newer@contoso.com"); err != nil || e.EmployeeID != "000000" {
		t.Fatalf("lookup of the newer value: %+v %v", e, err)
	}
	if _, err := x.Lookup(b.Ctx, "Solo", "email", "employee000000@contoso.com"); !errors.Is(err, repo.ErrNotFound) {
		t.Fatalf("the old value is still found: %v", err)
	}
}

// Bad input is refused before any request is sent.
func TestMaintenanceRefusesBadInputBeforeSending(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	q, _ := b.Queue()
	x := b.inter(t, q, -1, byEmail)
	tb := testbed.NewTable[Employee](b.Bed, nil)
	ix, err := secondaryindex.NewIntra(tb, byID, []secondaryindex.Index[Employee]{byEmail}, nil)
	if err != nil {
		t.Fatal(err)
	}
	mark := b.Proxy().Count()
	qmark := b.Proxies.Queue.Count()
	cases := []struct {
		name string
		err  error
	}{}
	add := func(name string, err error) {
		cases = append(cases, struct {
			name string
			err  error
		}{name, err})
	}
	_, err = x.BackfillPartition(b.Ctx, "", nil)
	add("inter backfill empty pk", err)
	_, err = x.BackfillPartition(b.Ctx, "email_Sales", nil)
	add("inter backfill of an index partition", err)
	_, err = x.BackfillPartition(b.Ctx, "Sales", &secondaryindex.BackfillOptions{Limit: -1})
	add("inter negative limit", err)
	_, err = x.BackfillPartition(b.Ctx, "Sales", &secondaryindex.BackfillOptions{After: "a#b"})
	add("inter bad checkpoint", err)
	_, err = x.Verify(b.Ctx, "Sales", &secondaryindex.VerifyOptions{Samples: -2})
	add("inter bad samples", err)
	_, err = x.Repair(b.Ctx, "Sa/les", nil)
	add("inter repair bad pk", err)
	add("inter start bad pk", x.StartBackfill(b.Ctx, "Sales", "a?b"))
	_, err = ix.BackfillPartition(b.Ctx, "", nil)
	add("intra backfill empty pk", err)
	_, err = ix.Verify(b.Ctx, "a#b", nil)
	add("intra verify bad pk", err)
	add("intra start without a queue", ix.StartBackfill(b.Ctx, "Sales"))
	add("intra register without a queue", ix.Register(queueworker.NewRegistry()))
	for _, c := range cases {
		if !errors.Is(c.err, repo.ErrInvalidInput) {
			t.Errorf("%s: %v, want ErrInvalidInput", c.name, c.err)
		}
	}
	if n := b.Proxy().Count() - mark; n != 0 {
		t.Errorf("%d table requests sent", n)
	}
	if n := b.Proxies.Queue.Count() - qmark; n != 0 {
		t.Errorf("%d queue requests sent", n)
	}
}

// A backfill job whose payload is not a valid checkpoint (a message is untrusted input)
// goes to the poison queue and writes nothing.
func TestInterBackfillJobWithBadPayloadIsPoisoned(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	b.seedEmployees(t, 3, "Sales")
	q, queue := b.Queue()
	x := b.inter(t, q, -1, byEmail)
	w := b.worker(t, queue, x)
	for _, cp := range []secondaryindex.Checkpoint{{PartitionKey: ""}, {PartitionKey: "Sales", After: "x\u0001"}, {PartitionKey: "email_Sales"}} {
		if _, err := queueworker.Enqueue(b.Ctx, q, x.BackfillKind(), "", cp, nil); err != nil {
			t.Fatal(err)
		}
	}
	testbed.Drain(t, w)
	pq, err := queueworker.NewClient(w.PoisonQueue(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := len(b.TakeMessages(pq)); got != 3 {
		t.Fatalf("%d poisoned, want 3", got)
	}
	if r, err := x.Verify(b.Ctx, "Sales", nil); err != nil || r.Missing != 3 {
		t.Fatalf("a bad job wrote copies: %+v %v", r, err)
	}
}

// Changing an index's Normalize changes its keys: Repair rebuilds the index (the copies
// under the new keys written, those under the old keys deleted as orphans), as the
// documentation of Index.Normalize says.
func TestIntraRepairRebuildsAfterNormalizeChange(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	plain := secondaryindex.Index[Employee]{Name: "email", Value: func(e *Employee) string { return e.Email }}
	if err := b.intra(t, plain).Insert(b.Ctx, emp(1, "Ann", "Lee", "Ann@Example.com")); err != nil {
		t.Fatal(err)
	}
	x := b.intra(t, byEmailLower)
	r, err := x.Repair(b.Ctx, "Sales", nil)
	if err != nil || r.Missing != 1 || r.Orphan != 1 || r.Repaired != 2 {
		t.Fatalf("repair: %+v %v", r, err)
	}
	mustClean(t, b.Ctx, x, 1, "Sales")
	if got := b.rows(t, "Sales"); fmt.Sprint(got) != "[email_ann@example.com empid_000001]" {
		t.Fatalf("rows %q", got)
	}
}

// An Intra backfill whose transaction is held at the proxy while a live Update of the
// same entity commits does not replace the copies that Update wrote: its transaction is
// conditional on the ETag its page read, fails, and the backfill counts the entity as
// done by the write that changed it.
func TestIntraWindowBackfillCannotOverwriteALiveUpdate(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	old := b.intra(t)
	if err := old.Insert(b.Ctx, emp(1, "Ann", "Lee", "ann@contoso.com")); err != nil {
		t.Fatal(err)
	}
	x := b.intra(t, byEmail) // through the proxy
	live, err := intraOn(b.Direct.Tables, b.Table, byID, []secondaryindex.Index[Employee]{byEmail}, b.RepoOptions())
	if err != nil {
		t.Fatal(err)
	}
	ps := b.Proxies.Table.PauseAt("backfill transaction", faultproxy.IsBatch, 1)
	type result struct {
		cp  secondaryindex.Checkpoint
		err error
	}
	done := make(chan result, 1)
	go func() {
		cp, err := x.BackfillPartition(b.Ctx, "Sales", nil)
		done <- result{cp, err}
	}()
	testbed.WaitHeld(t, ps)
	e, err := live.Get(b.Ctx, "Sales", "000001")
	if err != nil {
		t.Fatal(err)
	}
	e.Email, e.FirstName = "ann.lee@contoso.com", "Annie"
	if err := live.Update(b.Ctx, &e); err != nil {
		t.Fatal(err)
	}
	ps.Release()
	res := <-done
	if res.err != nil || !res.cp.Done || res.cp.Scanned != 1 || res.cp.Written != 0 {
		t.Fatalf("backfill: %+v %v", res.cp, res.err)
	}
	if got := b.rows(t, "Sales"); fmt.Sprint(got) != "[email_ann.lee@contoso.com empid_000001]" {
		t.Fatalf("rows %q: the backfill wrote the old value", got)
	}
	if c := b.row(t, "Sales", "email_ann.lee@contoso.com"); c.Properties["FirstName"] != "Annie" {
		t.Fatalf("copy %+v", c.Properties)
	}
	mustClean(t, b.Ctx, x, 1, "Sales")
}

// Inter's Repair forces the live path's transaction, conditional on the ref's ETag: held
// at the proxy while a live update and its reconciliation commit, it fails its condition,
// starts over from fresh reads, and leaves the copy of the newer value only.
func TestInterWindowRepairHeldWhileLiveUpdateCommits(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	q, _ := b.Queue()
	x := b.inter(t, q, -1, byEmail) // through the proxy
	live, err := secondaryindex.NewInter(b.Direct.Tables, b.Table, q, []secondaryindex.Index[Employee]{byEmail},
		&secondaryindex.InterOptions{SafetyDelay: -1, Conflict: testbed.FastRetry(), Table: repo.Options{Retry: testbed.FastRetry()}})
	if err != nil {
		t.Fatal(err)
	}
	e := iemp(1, "Ann", "Lee", "ann@contoso.com")
	if err := live.Insert(b.Ctx, e); err != nil {
		t.Fatal(err)
	}
	if err := live.Reconcile(b.Ctx, "Sales", "000001"); err != nil {
		t.Fatal(err)
	}
	c := b.row(t, "email_Sales", interKey("ann@contoso.com", "000001"))
	c.Properties["FirstName"] = "Tampered"
	if err := b.Raw.Upsert(b.Ctx, c, nil); err != nil {
		t.Fatal(err)
	}
	ps := b.Proxies.Table.PauseAt("forced repair transaction", faultproxy.IsBatch, 1)
	type result struct {
		r   *secondaryindex.Report
		err error
	}
	done := make(chan result, 1)
	go func() {
		r, err := x.Repair(b.Ctx, "Sales", nil)
		done <- result{r, err}
	}()
	testbed.WaitHeld(t, ps)
	cur, err := live.Get(b.Ctx, "Sales", "000001")
	if err != nil {
		t.Fatal(err)
	}
	cur.Email = "ann.lee@contoso.com"
	if err := live.Update(b.Ctx, &cur); err != nil {
		t.Fatal(err)
	}
	if err := live.Reconcile(b.Ctx, "Sales", "000001"); err != nil {
		t.Fatal(err)
	}
	ps.Release()
	res := <-done
	if res.err != nil || res.r.Stale != 1 || res.r.Repaired != 1 {
		t.Fatalf("repair: %+v %v", res.r, res.err)
	}
	if got := b.rows(t, "email_Sales"); len(got) != 2 || got[1] != interKey("ann.lee@contoso.com", "000001") {
		t.Fatalf("index partition %q: the repair wrote the old value", got)
	}
	mustClean(t, b.Ctx, x, 1, "Sales")
}

// maintainer is the maintenance method set that Intra and Inter share (checked at compile
// time, like the rest of their shape).
type maintainer interface {
	BackfillPartition(context.Context, string, *secondaryindex.BackfillOptions) (secondaryindex.Checkpoint, error)
	Verify(context.Context, string, *secondaryindex.VerifyOptions) (*secondaryindex.Report, error)
	Repair(context.Context, string, *secondaryindex.VerifyOptions) (*secondaryindex.Report, error)
	Partitions(context.Context) iter.Seq2[string, error]
	StartBackfill(context.Context, ...string) error
	BackfillKind() string
	Register(*queueworker.Registry) error
}

var (
	_ maintainer = (*secondaryindex.Intra[Employee])(nil)
	_ maintainer = (*secondaryindex.Inter[Employee])(nil)
)
