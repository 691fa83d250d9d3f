package secondaryindex_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/tablepatterns/tablepatterns/internal/faultproxy"
	"github.com/tablepatterns/tablepatterns/internal/testenv"
	"github.com/tablepatterns/tablepatterns/patterns/internal/testbed"
	"github.com/tablepatterns/tablepatterns/patterns/secondaryindex"
	"github.com/tablepatterns/tablepatterns/queueworker"
	"github.com/tablepatterns/tablepatterns/repo"
)

// Attack on Intra.BackfillPartition over data that predates a unique index: two entities
// share an email. The backfill must not stop the whole partition on the duplicate (the
// entities after it must be backfilled, the conflict reported), or a backfill job would
// fail forever on the same page.
func TestIntraBackfillUniqueDuplicateInOldData(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	old := b.intra(t)
	for i := range 5 {
		email := fmt.Sprintf("e%d@contoso.com", i)
		if i == 2 {
			email = "e1@contoso.com" // a duplicate the unique index cannot hold
		}
		if err := old.Insert(b.Ctx, emp(i, "F", "L", email)); err != nil {
			t.Fatal(err)
		}
	}
	x := b.intra(t, byEmail)
	cp, err := x.BackfillPartition(b.Ctx, "Sales", nil)
	r, verr := x.Verify(b.Ctx, "Sales", nil)
	t.Logf("backfill: %+v %v; verify: %+v %v", cp, err, r, verr)
	if verr != nil {
		t.Fatal(verr)
	}
	if _, lerr := x.Lookup(b.Ctx, "Sales", "email", "e4@contoso.com"); lerr != nil {
		t.Fatalf("an entity after the duplicate was not backfilled (backfill: %+v %v): %v", cp, err, lerr)
	}
	if err != nil || !cp.Done {
		t.Fatalf("the backfill stopped on the duplicate: %+v %v", cp, err)
	}
	// The unique copy email_e1 can belong to one entity only. Repair must converge (a
	// second Repair finds nothing to write) rather than hand the copy back and forth.
	owner := func() any { return b.row(t, "Sales", "email_e1@contoso.com").Properties["EmployeeId"] }
	before := owner()
	r1, err := x.Repair(b.Ctx, "Sales", nil)
	mid := owner()
	r2, err2 := x.Repair(b.Ctx, "Sales", nil)
	t.Logf("copy owner %v -> %v -> %v; repair 1 %+v %v; repair 2 %+v %v", before, mid, owner(), r1, err, r2, err2)
	if cp.Written == 5 {
		t.Errorf("backfill reports 5 entities written for 4 distinct unique values: one wrote over the other's copy (owner before repair %v)", before)
	}
	if err2 == nil && r2.Repaired != 0 {
		t.Fatalf("second Repair wrote again (%d): Repair hands the unique copy back and forth (%v -> %v -> %v)", r2.Repaired, before, mid, owner())
	}
}

// A primary copy carrying a property Employee does not declare (written by another
// application) keeps it when Intra's BackfillPartition rewrites the entity.
func TestIntraBackfillKeepsUndeclaredProperties(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	old := b.intra(t)
	if err := old.Insert(b.Ctx, emp(1, "Ann", "Lee", "ann@contoso.com")); err != nil {
		t.Fatal(err)
	}
	p := b.row(t, "Sales", "empid_000001")
	p.Properties["Undeclared"] = "keep me"
	if err := b.Raw.Upsert(b.Ctx, p, nil); err != nil {
		t.Fatal(err)
	}
	x := b.intra(t, byEmail)
	if cp, err := x.BackfillPartition(b.Ctx, "Sales", nil); err != nil || cp.Written != 1 {
		t.Fatalf("backfill: %+v %v", cp, err)
	}
	if got := b.row(t, "Sales", "empid_000001"); got.Properties["Undeclared"] != "keep me" {
		t.Fatalf("the backfill erased a property the type does not declare: %+v", got.Properties)
	}
}

// Attack on Intra's backfill "a lost response is decided from a fresh read": the
// response of the first backfill transaction is lost after it landed, and the response of
// the second one is lost too; the backfill must finish, count both as written, and leave
// no drift. Then an untrusted orphan key naming no possible entity is reported by Inter's
// Repair and left.
func TestIntraBackfillLostResponses(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	old := b.intra(t)
	for i := 1; i <= 3; i++ {
		if err := old.Insert(b.Ctx, emp(i, "F", "L", fmt.Sprintf("e%d@contoso.com", i))); err != nil {
			t.Fatal(err)
		}
	}
	x := b.intra(t, byEmail)
	b.Proxies.Table.AddRule(faultproxy.Rule{Name: "lost", Match: faultproxy.IsBatch, Times: 2, Action: faultproxy.DropAfterForward()})
	cp, err := x.BackfillPartition(b.Ctx, "Sales", nil)
	if err != nil || !cp.Done || cp.Written != 3 {
		t.Fatalf("backfill: %+v %v", cp, err)
	}
	mustClean(t, b.Ctx, x, 3, "Sales")
}

// Attack on Inter.BackfillPartition "never replaces a newer copy": the backfill's
// reconciliation transaction for an employee (seeded without copies) is held while a
// live Update changes the email and its reconciliation commits. Released, the backfill
// must not list the old email.
func TestInterBackfillHeldWhileLiveUpdateCommits(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	b.seedEmployees(t, 1, "Sales")
	q, _ := b.Queue()
	x := b.inter(t, q, -1, byEmail) // through the proxy
	live := b.directInter(t, byEmail)
	ps := b.Proxies.Table.PauseAt("backfill reconciliation", faultproxy.IsBatch, 1)
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
	cur, err := live.Get(b.Ctx, "Sales", "000000")
	if err != nil {
		t.Fatal(err)
	}
	oldEmail := cur.Email
	cur.Email = "new@contoso.com"
	if err := live.Update(b.Ctx, &cur); err != nil {
		t.Fatal(err)
	}
	if err := live.Reconcile(b.Ctx, "Sales", "000000"); err != nil {
		t.Fatal(err)
	}
	ps.Release()
	res := <-done
	t.Logf("backfill %+v %v; rows %q", res.cp, res.err, b.rows(t, "email_Sales"))
	if res.err != nil {
		t.Fatal(res.err)
	}
	if b.row(t, "email_Sales", interKey(oldEmail, "000000")) != nil {
		t.Fatal("the backfill listed the old email")
	}
	mustClean(t, b.Ctx, x, 1, "Sales")
}

// Attack on Intra's backfill "a missing unique copy is inserted, never taken over": the
// backfill transaction of employee 1 (whose copy is missing) is held at the proxy while a
// live Insert of employee 2 claims the same email. Released, the backfill's insert fails;
// it reads again, finds employee 2's copy and leaves it: the live copy keeps its owner,
// and Verify reports employee 1 as a conflict.
func TestIntraBackfillHeldWhileLiveInsertClaimsTheValue(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	old := b.intra(t)
	if err := old.Insert(b.Ctx, emp(1, "Ann", "Lee", "same@contoso.com")); err != nil {
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
	ierr := live.Insert(b.Ctx, emp(2, "Bo", "Kim", "same@contoso.com"))
	ps.Release()
	res := <-done
	t.Logf("live insert %v; backfill %+v %v; rows %q", ierr, res.cp, res.err, b.rows(t, "Sales"))
	if ierr != nil || res.err != nil {
		t.Fatal("an operation failed")
	}
	if got := b.row(t, "Sales", "email_same@contoso.com"); got == nil || got.Properties["EmployeeId"] != "000002" {
		t.Fatalf("the backfill took over the live entity's unique copy: %+v", got)
	}
	if res.cp.Written != 0 {
		t.Fatalf("the backfill reports %d written for an entity whose only copy it could not write", res.cp.Written)
	}
	r, err := x.Verify(b.Ctx, "Sales", nil)
	// Drift 1: the Conflict counts in Drift (lookups by the value cannot find that entity).
	if err != nil || r.Conflict != 1 || r.Drift() != 1 || r.Samples[0].RowKey != "empid_000001" {
		t.Fatalf("verify: %+v %v", r, err)
	}
}

// Backfill loads many entities with bulk transactions; the index then answers as if they
// had been inserted one by one.
func TestIntraBackfill(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	x := b.intra(t, byEmail, byLast)
	var items []*Employee
	for i := 0; i < 250; i++ {
		items = append(items, emp(i, "F", fmt.Sprintf("L%d", i%7), fmt.Sprintf("e%03d@contoso.com", i)))
	}
	if err := x.Backfill(b.Ctx, items); err != nil {
		t.Fatal(err)
	}
	if items[17].ETag == "" {
		t.Fatal("no ETag after Backfill")
	}
	if n := len(b.rows(t, "Sales")); n != 750 {
		t.Fatalf("%d rows, want 750", n)
	}
	got, err := x.Lookup(b.Ctx, "Sales", "email", "e123@contoso.com")
	if err != nil || got.EmployeeID != "000123" {
		t.Fatalf("%+v %v", got, err)
	}
	if n := len(collect(t, x.Find(b.Ctx, "Sales", "last", "L3", nil))); n != 36 {
		t.Fatalf("%d employees named L3, want 36", n)
	}
	// The loaded entity can be updated with its ETag from Backfill.
	items[17].Age = 99
	if err := x.Update(b.Ctx, items[17]); err != nil {
		t.Fatal(err)
	}
}

// A backfill of an email index over 1,200 existing employees
// (10,000 under make soak) in 4 departments, run by the worker one job per partition,
// while 4 writers keep inserting and updating through the index, ends with Verify
// reporting no drift in any partition, and every employee counted.
func TestInterBackfillWhileWritersWrite(t *testing.T) {
	t.Parallel()
	// Sales holds 1,050: its backfill spans two jobs of 1,000 (a job stops at the end of
	// the page that reaches 1,000), so the writers race a backfill that checkpoints and
	// continues, not only one that reads once; the other departments' backfills (50 each)
	// run alongside. make soak spreads 10,000 evenly: every partition spans 3 jobs.
	n, big := testenv.Scale(1200, 10000), testenv.Scale(1050, 2500)
	depts := []string{"Sales", "Marketing", "Finance", "Support"}
	deptOf := func(i int) string {
		if i < big {
			return depts[0]
		}
		return depts[1+(i-big)%(len(depts)-1)]
	}
	b := setup(t, false)
	b.seedEmployeesIn(t, n, deptOf)
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
	if err := x.StartBackfill(b.Ctx); err != nil { // discovers the 4 partitions
		t.Fatal(err)
	}
	// The worker runs the jobs while the writers write, until the queue is empty; it is
	// not stopped meanwhile: a stop that cancels a dequeue the queue already served leaves
	// its messages invisible for the worker's visibility timeout (30 s) before a drain.
	drained := make(chan error, 1)
	go func() { drained <- w.Drain(b.Ctx) }()
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
				e, err := x.Get(b.Ctx, deptOf(id), fmt.Sprintf("%06d", id))
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
	if err := <-drained; err != nil {
		t.Fatal(err)
	}
	testbed.Drain(t, w) // what the writers enqueued after the queue was first found empty
	mustClean(t, b.Ctx, x, n+int(inserted.Load()), depts...)
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
	// 300 employees in pages of 30: ten checkpoints, and each kill comes within a third of
	// the partition's reconciliations, as with 1,000 in pages of 100 (make soak).
	n, page := testenv.Scale(300, 1000), testenv.Scale(30, 100)
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
		cp, err := x.BackfillPartition(ctx, "Sales", &secondaryindex.BackfillOptions{After: stored.After, PageSize: page,
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
	// 100 employees of Sales (300 under make soak): the jobs below start at its beginning,
	// its middle, its last employee and its tenth.
	n := testenv.Scale(100, 300)
	b := setup(t, false)
	b.seedEmployees(t, n, "Sales")
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
	mid, last := fmt.Sprintf("%06d", n/2), fmt.Sprintf("%06d", n-1)
	for _, after := range []string{mid, "", mid, "", last, "000010"} {
		if _, err := queueworker.Enqueue(b.Ctx, q, x.BackfillKind(), "", secondaryindex.Checkpoint{PartitionKey: "Sales", After: after}, nil); err != nil {
			t.Fatal(err)
		}
	}
	testbed.Drain(t, w)
	mustClean(t, b.Ctx, x, n, "Sales")
	if e, err := x.Lookup(b.Ctx, "Solo", "email", "newer@contoso.com"); err != nil || e.EmployeeID != "000000" {
		t.Fatalf("lookup of the newer value: %+v %v", e, err)
	}
	if _, err := x.Lookup(b.Ctx, "Solo", "email", "employee000000@contoso.com"); !errors.Is(err, repo.ErrNotFound) {
		t.Fatalf("the old value is still found: %v", err)
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
	e, err := live.Get(b.Ctx, "Sales", "empid_000001")
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
