package secondaryindex_test

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/internal/faultproxy"
	"github.com/tablepatterns/tablepatterns/patterns/internal/testbed"
	"github.com/tablepatterns/tablepatterns/patterns/secondaryindex"
	"github.com/tablepatterns/tablepatterns/queueworker"
	"github.com/tablepatterns/tablepatterns/repo"
)

// Attack on Inter.Repair "idempotent: a second Repair finds nothing": one entity with two
// orphan copies in the same index (two old values written around the package). Repair
// must remove both; a Verify right after must find no drift.
func TestInterRepairTwoOrphansOfOneEntity(t *testing.T) {
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
func TestIntraRepairOrphanDeleteHeldWhileLiveUpdateClaimsIt(t *testing.T) {
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
	e, err := live.Get(b.Ctx, "Sales", "empid_000001")
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
func TestIntraRepairOrphanDeleteHeldWhileLiveUpdateClaimsDuplicateKey(t *testing.T) {
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
	e, err := live.Get(b.Ctx, "Sales", "empid_000001")
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
	e, err = live.Get(b.Ctx, "Sales", "empid_000001")
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
func TestInterRepairHeldWhileLiveDeleteCommits(t *testing.T) {
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
	if err := live.Delete(b.Ctx, cur.Department, cur.RowKey, &repo.DeleteOptions{ETag: cur.ETag}); err != nil {
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
func TestIntraVerifyPrimaryUnderForeignKey(t *testing.T) {
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

// Attack on Inter.Repair's orphan delete: an old copy of employee 1 ("b@", written by
// hand) is an orphan; the forced repair transaction that deletes it is held while a live
// Update moves the employee's email to b@ and its reconciliation commits: the orphan's
// key is now the real copy. Released, the repair must leave the copy of b@ in place.
func TestInterRepairOrphanBecomesRealCopyInWindow(t *testing.T) {
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

// Inter: an orphan copy whose key names a RowKey no entity can have ('/' once unescaped)
// is reported by Verify and left by Repair, which must not fail.
func TestInterRepairLeavesOrphanWithForgedOwnerKey(t *testing.T) {
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

// Intra's Verify reports a unique copy held by another entity as a Conflict (not Stale;
// counted in Drift: the index lacks the other entity), and
// Repair writes nothing for it: the copy keeps its owner.
func TestIntraVerifyReportsUniqueConflictRepairLeavesIt(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	old := b.intra(t)
	for _, e := range []*Employee{emp(1, "Ann", "Lee", "same@contoso.com"), emp(2, "Bo", "Kim", "same@contoso.com"), emp(3, "Cy", "Ro", "c@contoso.com")} {
		if err := old.Insert(b.Ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	x := b.intra(t, byEmail)
	cp, err := x.BackfillPartition(b.Ctx, "Sales", nil)
	if err != nil || !cp.Done || cp.Scanned != 3 || cp.Written != 2 {
		t.Fatalf("backfill: %+v %v (want 3 scanned, 2 written: one of the two sharing a value writes nothing)", cp, err)
	}
	owner := b.row(t, "Sales", "email_same@contoso.com").Properties["EmployeeId"]
	r, err := x.Verify(b.Ctx, "Sales", nil)
	if err != nil {
		t.Fatal(err)
	}
	if r.Conflict != 1 || r.Drift() != 1 || len(r.Samples) != 1 || r.Samples[0].Drift != secondaryindex.Conflict || r.Samples[0].CopyKey != "email_same@contoso.com" {
		t.Fatalf("verify: %+v (want one conflict, which is the only drift)", r)
	}
	if r.Samples[0].RowKey == "empid_"+owner.(string) {
		t.Fatalf("the conflict names the copy's owner %v, not the other entity: %+v", owner, r.Samples)
	}
	for i := range 2 {
		r, err := x.Repair(b.Ctx, "Sales", nil)
		if err != nil || r.Repaired != 0 || r.Conflict != 1 {
			t.Fatalf("repair %d: %+v %v (want nothing written, the conflict reported)", i, r, err)
		}
		if got := b.row(t, "Sales", "email_same@contoso.com").Properties["EmployeeId"]; got != owner {
			t.Fatalf("repair %d moved the unique copy from %v to %v", i, owner, got)
		}
	}
}

// Attack on Inter.Repair "each orphan delete is conditional": an entity has two orphan
// copies in one index; the second forced transaction (the one deleting the second orphan)
// is held while a live Update moves the entity's email to that orphan's value and its
// reconciliation commits. Released, the repair must leave that copy (now the real one).
func TestInterRepairSecondOrphanBecomesRealCopyInWindow(t *testing.T) {
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
	for _, v := range []string{"b@contoso.com", "c@contoso.com"} {
		o := &codec.Entity{PartitionKey: "email_Sales", RowKey: interKey(v, "000001"), Properties: map[string]any{"FirstName": "Old"}}
		if err := b.Raw.Insert(b.Ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	ps := b.Proxies.Table.PauseAt("second forced repair transaction", faultproxy.IsBatch, 2)
	done := make(chan error, 1)
	go func() {
		_, err := x.Repair(b.Ctx, "Sales", nil)
		done <- err
	}()
	testbed.WaitHeld(t, ps)
	cur, err := live.Get(b.Ctx, "Sales", "000001")
	if err != nil {
		t.Fatal(err)
	}
	cur.Email = "c@contoso.com"
	uerr := live.Update(b.Ctx, &cur)
	rerr := live.Reconcile(b.Ctx, "Sales", "000001")
	ps.Release()
	err = <-done
	t.Logf("live update %v, reconcile %v; repair %v; index rows %q", uerr, rerr, err, b.rows(t, "email_Sales"))
	if uerr != nil || rerr != nil || err != nil {
		t.Fatal("an operation failed")
	}
	if e, err := x.Lookup(b.Ctx, "Sales", "email", "c@contoso.com"); err != nil || e.EmployeeID != "000001" {
		t.Fatalf("the repair deleted the real copy: %+v %v (rows %q)", e, err, b.rows(t, "email_Sales"))
	}
	mustClean(t, b.Ctx, x, 1, "Sales")
}

// A copy removed around the index (by hand, by a tool) does not block later writes: the
// update drops it from its plan and writes the new copies.
func TestIntraRepairsAMissingCopy(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	x := b.intra(t, byEmail)
	e := emp(12, "Jeff", "Phillips", "jeffp@contoso.com")
	if err := x.Insert(b.Ctx, e); err != nil {
		t.Fatal(err)
	}
	if err := b.Raw.Delete(b.Ctx, "Sales", "email_jeffp@contoso.com", nil); err != nil {
		t.Fatal(err)
	}
	e.Email = "jeff.phillips@contoso.com"
	if err := x.Update(b.Ctx, e); err != nil {
		t.Fatal(err)
	}
	if got := b.rows(t, "Sales"); !slices.Equal(got, []string{"email_jeff.phillips@contoso.com", "empid_000012"}) {
		t.Fatalf("rows %q", got)
	}
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
