package secondaryindex_test

import (
	"testing"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/internal/faultproxy"
	"github.com/tablepatterns/tablepatterns/patterns/internal/testbed"
	"github.com/tablepatterns/tablepatterns/patterns/secondaryindex"
)

// Intra's Verify reports a unique copy held by another entity as a Conflict (not Stale;
// counted in Drift since the owner-rule fold: the index lacks the other entity), and
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

// Attack on Intra's backfill "a missing unique copy is inserted, never taken over": the
// backfill transaction of employee 1 (whose copy is missing) is held at the proxy while a
// live Insert of employee 2 claims the same email. Released, the backfill's insert fails;
// it reads again, finds employee 2's copy and leaves it: the live copy keeps its owner,
// and Verify reports employee 1 as a conflict.
func TestAttackIntraBackfillHeldWhileLiveInsertClaimsTheValue(t *testing.T) {
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
	// Drift 1: the Conflict counts in Drift (decided in the owner-rule fold).
	if err != nil || r.Conflict != 1 || r.Drift() != 1 || r.Samples[0].RowKey != "empid_000001" {
		t.Fatalf("verify: %+v %v", r, err)
	}
}

// Attack on Inter.Repair "each orphan delete is conditional": an entity has two orphan
// copies in one index; the second forced transaction (the one deleting the second orphan)
// is held while a live Update moves the entity's email to that orphan's value and its
// reconciliation commits. Released, the repair must leave that copy (now the real one).
func TestAttackInterRepairSecondOrphanBecomesRealCopyInWindow(t *testing.T) {
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
