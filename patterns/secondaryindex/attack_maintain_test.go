package secondaryindex_test

import (
	"fmt"
	"testing"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/internal/faultproxy"
	"github.com/tablepatterns/tablepatterns/patterns/internal/testbed"
	"github.com/tablepatterns/tablepatterns/patterns/secondaryindex"
)

// Attack on Inter.Repair "idempotent: a second Repair finds nothing": one entity with two
// orphan copies in the same index (two old values written around the package). Repair
// must remove both; a Verify right after must find no drift.
func TestAttackInterRepairTwoOrphansOfOneEntity(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	q, queue := b.Queue()
	x := b.inter(t, q, -1, byEmail)
	w := b.worker(t, queue, x)
	if err := x.Insert(b.Ctx, iemp(1, "F", "L", "e1@contoso.com")); err != nil {
		t.Fatal(err)
	}
	testbed.Drain(t, w)
	mustClean(t, b.Ctx, x, 1, "Sales")
	for _, k := range []string{interKey("old1@contoso.com", "000001"), interKey("old2@contoso.com", "000001")} {
		o := &codec.Entity{PartitionKey: "email_Sales", RowKey: k, Properties: map[string]any{"FirstName": "Old"}}
		if err := b.Raw.Insert(b.Ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	r, err := x.Verify(b.Ctx, "Sales", nil)
	if err != nil || r.Orphan != 2 {
		t.Fatalf("verify: %+v %v", r, err)
	}
	r, err = x.Repair(b.Ctx, "Sales", nil)
	if err != nil {
		t.Fatal(err)
	}
	after, err := x.Verify(b.Ctx, "Sales", nil)
	if err != nil {
		t.Fatal(err)
	}
	if after.Drift() != 0 {
		t.Fatalf("after one Repair (%+v): %d orphans left, samples %+v; rows %q", r, after.Orphan, after.Samples, b.rows(t, "email_Sales"))
	}
}

// Attack on Intra.Repair's orphan delete: "a write that makes it wanted rewrites it first,
// and the delete fails its condition". The orphan delete is held at the proxy while a
// live Update moves an entity's email to the orphan's value. Whatever the live write
// returns, the final state must have no drift: if it succeeded, its copy must survive.
func TestAttackIntraRepairOrphanDeleteHeldWhileLiveUpdateClaimsIt(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	x := b.intra(t, byEmail) // through the proxy
	live, err := intraOn(b.Direct.Tables, b.Table, byID, []secondaryindex.Index[Employee]{byEmail}, b.RepoOptions())
	if err != nil {
		t.Fatal(err)
	}
	if err := live.Insert(b.Ctx, emp(1, "Ann", "Lee", "ann@contoso.com")); err != nil {
		t.Fatal(err)
	}
	orphan := &codec.Entity{PartitionKey: "Sales", RowKey: "email_ghost@contoso.com", Properties: map[string]any{"EmployeeId": "000099"}}
	if err := b.Raw.Insert(b.Ctx, orphan); err != nil {
		t.Fatal(err)
	}
	ps := b.Proxies.Table.PauseAt("orphan delete", faultproxy.MethodIs("DELETE"), 1)
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
	e, err := live.Get(b.Ctx, "Sales", "000001")
	if err != nil {
		t.Fatal(err)
	}
	e.Email = "ghost@contoso.com"
	uerr := live.Update(b.Ctx, &e)
	ps.Release()
	res := <-done
	t.Logf("live update: %v; repair: %+v %v", uerr, res.r, res.err)
	if res.err != nil {
		t.Fatal(res.err)
	}
	if uerr == nil {
		if c := b.row(t, "Sales", "email_ghost@contoso.com"); c == nil || c.Properties["EmployeeId"] != "000001" {
			t.Fatalf("the live copy was deleted by the repair: %+v (rows %q)", c, b.rows(t, "Sales"))
		}
	}
	mustClean(t, b.Ctx, x, 1, "Sales")
	_ = fmt.Sprint
}

// The same window on an index with duplicates, where the orphan's key is exactly the key
// the entity's next value gives it (the key holds the primary value): the live Update can
// claim the orphan's key while the repair's conditional delete is held.
func TestAttackIntraRepairOrphanDeleteHeldWhileLiveUpdateClaimsDuplicateKey(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	x := b.intra(t, byLast) // through the proxy
	live, err := intraOn(b.Direct.Tables, b.Table, byID, []secondaryindex.Index[Employee]{byLast}, b.RepoOptions())
	if err != nil {
		t.Fatal(err)
	}
	if err := live.Insert(b.Ctx, emp(1, "Ann", "Smith", "ann@contoso.com")); err != nil {
		t.Fatal(err)
	}
	var key string
	for _, rk := range b.rows(t, "Sales") {
		if rk != "empid_000001" {
			key = rk
		}
	}
	old := b.row(t, "Sales", key)
	e, err := live.Get(b.Ctx, "Sales", "000001")
	if err != nil {
		t.Fatal(err)
	}
	e.LastName = "Lee"
	if err := live.Update(b.Ctx, &e); err != nil {
		t.Fatal(err)
	}
	old.ETag = ""
	if err := b.Raw.Insert(b.Ctx, old); err != nil { // the orphan: an old copy put back by hand
		t.Fatal(err)
	}
	ps := b.Proxies.Table.PauseAt("orphan delete", faultproxy.MethodIs("DELETE"), 1)
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
	e, err = live.Get(b.Ctx, "Sales", "000001")
	if err != nil {
		t.Fatal(err)
	}
	e.LastName = "Smith"
	uerr := live.Update(b.Ctx, &e)
	ps.Release()
	res := <-done
	t.Logf("live update: %v; repair: %+v %v; rows %q", uerr, res.r, res.err, b.rows(t, "Sales"))
	if res.err != nil {
		t.Fatal(res.err)
	}
	if uerr == nil && b.row(t, "Sales", key) == nil {
		t.Fatalf("the live copy %q was deleted by the repair (rows %q)", key, b.rows(t, "Sales"))
	}
	mustClean(t, b.Ctx, x, 1, "Sales")
}

// Attack on Inter.Repair "a concurrent write or reconciliation makes it start over": the
// forced transaction of a stale copy is held while the entity is deleted and the delete
// reconciled. Released, the repair must not bring the copy back, and must not fail.
func TestAttackInterRepairHeldWhileLiveDeleteCommits(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	q, _ := b.Queue()
	x := b.inter(t, q, -1, byEmail) // through the proxy
	live := b.directInter(t, byEmail)
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
	if err := live.Delete(b.Ctx, &cur); err != nil {
		t.Fatal(err)
	}
	if err := live.Reconcile(b.Ctx, "Sales", "000001"); err != nil {
		t.Fatal(err)
	}
	ps.Release()
	res := <-done
	t.Logf("repair: %+v %v; index rows %q", res.r, res.err, b.rows(t, "email_Sales"))
	if res.err != nil {
		t.Fatal(res.err)
	}
	if b.row(t, "email_Sales", interKey("ann@contoso.com", "000001")) != nil {
		t.Fatal("the repair brought back the copy of a deleted entity")
	}
	mustClean(t, b.Ctx, x, 0, "Sales")
}

// Attack on Intra.Verify "reports the missing, stale and orphan copies": a primary copy
// stored (around the package) under a RowKey its primary value does not give. Its copies
// point at the primary key its value gives, where nothing is stored, so a Lookup through
// the index fails; Verify must not report zero drift.
func TestAttackIntraVerifyPrimaryUnderForeignKey(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	x := b.intra(t, byEmail)
	if err := x.Insert(b.Ctx, emp(1, "Ann", "Lee", "ann@contoso.com")); err != nil {
		t.Fatal(err)
	}
	// Move the primary copy to another key by hand (a bad migration), keeping its copies.
	p := b.row(t, "Sales", "empid_000001")
	if err := b.Raw.Delete(b.Ctx, "Sales", "empid_000001", nil); err != nil {
		t.Fatal(err)
	}
	p.RowKey, p.ETag = "empid_000099", ""
	if err := b.Raw.Insert(b.Ctx, p); err != nil {
		t.Fatal(err)
	}
	_, lerr := x.Lookup(b.Ctx, "Sales", "email", "ann@contoso.com")
	r, err := x.Verify(b.Ctx, "Sales", nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("lookup by email: %v; verify %+v", lerr, r)
	if lerr != nil && r.Drift() == 0 {
		t.Fatalf("Lookup through the index fails (%v) yet Verify reports no drift: %+v", lerr, r)
	}
}

// Attack on Intra.BackfillPartition over data that predates a unique index: two entities
// share an email. The backfill must not stop the whole partition on the duplicate (the
// entities after it must be backfilled, the conflict reported), or a backfill job would
// fail forever on the same page.
func TestAttackIntraBackfillUniqueDuplicateInOldData(t *testing.T) {
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

// Attack on Inter.Repair's orphan delete: an old copy of employee 1 ("b@", written by
// hand) is an orphan; the forced repair transaction that deletes it is held while a live
// Update moves the employee's email to b@ and its reconciliation commits: the orphan's
// key is now the real copy. Released, the repair must leave the copy of b@ in place.
func TestAttackInterRepairOrphanBecomesRealCopyInWindow(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	q, _ := b.Queue()
	x := b.inter(t, q, -1, byEmail) // through the proxy
	live := b.directInter(t, byEmail)
	if err := live.Insert(b.Ctx, iemp(1, "Ann", "Lee", "a@contoso.com")); err != nil {
		t.Fatal(err)
	}
	if err := live.Reconcile(b.Ctx, "Sales", "000001"); err != nil {
		t.Fatal(err)
	}
	o := &codec.Entity{PartitionKey: "email_Sales", RowKey: interKey("b@contoso.com", "000001"), Properties: map[string]any{"FirstName": "Old"}}
	if err := b.Raw.Insert(b.Ctx, o); err != nil {
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
	cur.Email = "b@contoso.com"
	uerr := live.Update(b.Ctx, &cur)
	rerr := live.Reconcile(b.Ctx, "Sales", "000001")
	ps.Release()
	res := <-done
	t.Logf("live update %v, reconcile %v; repair %+v %v; index rows %q", uerr, rerr, res.r, res.err, b.rows(t, "email_Sales"))
	if uerr != nil || rerr != nil || res.err != nil {
		t.Fatal("an operation failed")
	}
	if e, err := x.Lookup(b.Ctx, "Sales", "email", "b@contoso.com"); err != nil || e.EmployeeID != "000001" {
		t.Fatalf("the repair deleted the real copy: %+v %v (rows %q)", e, err, b.rows(t, "email_Sales"))
	}
	mustClean(t, b.Ctx, x, 1, "Sales")
}

// The same for Intra: a primary copy carrying a property Employee does not declare
// (written by another application) loses it when BackfillPartition rewrites the entity.
func TestAttackIntraBackfillKeepsUndeclaredProperties(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	old := b.intra(t)
	if err := old.Insert(b.Ctx, emp(1, "Ann", "Lee", "ann@contoso.com")); err != nil {
		t.Fatal(err)
	}
	p := b.row(t, "Sales", "empid_000001")
	p.Properties["Legacy"] = "keep me"
	if err := b.Raw.Upsert(b.Ctx, p, nil); err != nil {
		t.Fatal(err)
	}
	x := b.intra(t, byEmail)
	if cp, err := x.BackfillPartition(b.Ctx, "Sales", nil); err != nil || cp.Written != 1 {
		t.Fatalf("backfill: %+v %v", cp, err)
	}
	if got := b.row(t, "Sales", "empid_000001"); got.Properties["Legacy"] != "keep me" {
		t.Fatalf("the backfill erased a property the type does not declare: %+v", got.Properties)
	}
}

// Attack on Intra's backfill "a lost response is decided from a fresh read": the
// response of the first backfill transaction is lost after it landed, and the response of
// the second one is lost too; the backfill must finish, count both as written, and leave
// no drift. Then an untrusted orphan key naming no possible entity is reported by Inter's
// Repair and left.
func TestAttackIntraBackfillLostResponses(t *testing.T) {
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

// Inter: an orphan copy whose key names a RowKey no entity can have ('/' once unescaped)
// is reported by Verify and left by Repair, which must not fail.
func TestAttackInterRepairForgedOwnerKey(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	q, _ := b.Queue()
	x := b.inter(t, q, -1, byEmail)
	if err := x.Insert(b.Ctx, iemp(1, "F", "L", "e1@contoso.com")); err != nil {
		t.Fatal(err)
	}
	if err := x.Reconcile(b.Ctx, "Sales", "000001"); err != nil {
		t.Fatal(err)
	}
	forged := interKey("x@contoso.com", "a/b")
	o := &codec.Entity{PartitionKey: "email_Sales", RowKey: forged, Properties: map[string]any{"FirstName": "Forged"}}
	if err := b.Raw.Insert(b.Ctx, o); err != nil {
		t.Fatal(err)
	}
	r, err := x.Repair(b.Ctx, "Sales", nil)
	if err != nil || r.Orphan != 1 {
		t.Fatalf("repair: %+v %v", r, err)
	}
	if b.row(t, "email_Sales", forged) == nil {
		t.Fatal("a copy naming no possible entity was acted on")
	}
}

// Attack on Inter.BackfillPartition "never replaces a newer copy": the backfill's
// reconciliation transaction for an employee (seeded without copies) is held while a
// live Update changes the email and its reconciliation commits. Released, the backfill
// must not list the old email.
func TestAttackInterBackfillHeldWhileLiveUpdateCommits(t *testing.T) {
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
