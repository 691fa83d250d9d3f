package secondaryindex_test

import (
	"errors"
	"github.com/tablepatterns/tablepatterns/patterns/internal/testbed"
	"github.com/tablepatterns/tablepatterns/patterns/secondaryindex"
	"net/http"
	"testing"

	"github.com/tablepatterns/tablepatterns/internal/faultproxy"
	"github.com/tablepatterns/tablepatterns/repo"
)

// Attacks "duplicated, reordered and replayed messages all reconcile the current state"
// and the write protocol's "each step safe to interrupt" with SafetyDelay -1, at the
// primary write's lost response: the Delete lands, its response is lost, the retry meets
// 404 and repo answers ErrOutcomeUnknown. write() returns before Notify, so nothing is
// enqueued; the caller's natural retry of Delete answers ErrNotFound, again before
// Notify. The deleted employee's copy stays in the index with nothing queued to remove it.
func TestAttackInterDeleteLostResponseNoSafetyLeavesCopy(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	q, queue := b.Queue()
	x := b.inter(t, q, -1, byEmail)
	w := b.worker(t, queue, x)
	e := iemp(901, "Lu", "Lost", "lu@contoso.com")
	if err := x.Insert(b.Ctx, e); err != nil {
		t.Fatal(err)
	}
	testbed.Drain(t, w)
	b.expect(t, "email_Sales", [2]string{"lu@contoso.com", e.RowKey})

	b.Proxies.Table.AddRule(faultproxy.Rule{Name: "lost delete response", Times: 1, Action: faultproxy.DropAfterForward(),
		Match: faultproxy.All(faultproxy.IsEntityWrite, faultproxy.MethodIs(http.MethodDelete))})
	err := x.Delete(b.Ctx, &Employee{Department: "Sales", RowKey: e.RowKey})
	t.Logf("Delete after a lost response: %v", err)
	if err != nil {
		// The caller retries, as any caller of a failed delete would.
		err2 := x.Delete(b.Ctx, &Employee{Department: "Sales", RowKey: e.RowKey})
		t.Logf("retried Delete: %v", err2)
	}
	testbed.Drain(t, w)
	if _, gerr := x.Table().Get(b.Ctx, "Sales", e.RowKey); !errors.Is(gerr, repo.ErrNotFound) {
		t.Fatalf("primary: %v, want deleted", gerr)
	}
	if v, lerr := x.Lookup(b.Ctx, "Sales", "email", "lu@contoso.com"); lerr == nil {
		t.Fatalf("the deleted employee %s is still found by email, with no message queued (Delete: %v)", v.RowKey, err)
	}
}

// Attacks "A transaction whose outcome repo cannot prove ... is decided again from fresh
// reads: a reconciliation starts over (the ref says what is written)" on each of the
// index transactions of an entity's life: the first copy (ref insert), an email change
// (ref update, copy moved), the delete (tombstone), and a re-insert over the tombstone.
// Each transaction lands and its response is lost; Reconcile must end with nil and the
// index exact.
func TestAttackInterReconcileLostResponseEachTransaction(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	q, _ := b.Queue()
	x := b.inter(t, q, -1, byEmail)
	lose := func(name string) {
		b.Proxies.Table.AddRule(faultproxy.Rule{Name: name, Match: faultproxy.IsBatch, Times: 1, Action: faultproxy.DropAfterForward()})
	}
	reconcile := func(step string) {
		t.Helper()
		lose(step)
		if err := x.Reconcile(b.Ctx, "Sales", "000902"); err != nil {
			t.Fatalf("%s: Reconcile after a lost response: %v", step, err)
		}
		if n := b.Proxies.Table.Fired(step); n != 1 {
			t.Fatalf("%s: the lost-response rule fired %d times", step, n)
		}
	}
	e := iemp(902, "Mo", "Drop", "mo@contoso.com")
	if err := x.Table().Insert(b.Ctx, e); err != nil {
		t.Fatal(err)
	}
	reconcile("first copy")
	b.expect(t, "email_Sales", [2]string{"mo@contoso.com", e.RowKey})
	e.Email = "mo2@contoso.com"
	if err := x.Table().Update(b.Ctx, e, nil); err != nil {
		t.Fatal(err)
	}
	reconcile("moved copy")
	b.expect(t, "email_Sales", [2]string{"mo2@contoso.com", e.RowKey})
	if err := x.Table().Delete(b.Ctx, "Sales", e.RowKey, nil); err != nil {
		t.Fatal(err)
	}
	reconcile("tombstone")
	b.expect(t, "email_Sales")
	e2 := iemp(902, "Mo", "Drop", "mo@contoso.com")
	if err := x.Table().Insert(b.Ctx, e2); err != nil {
		t.Fatal(err)
	}
	reconcile("over the tombstone")
	b.expect(t, "email_Sales", [2]string{"mo@contoso.com", e.RowKey})
}

// Attacks "a primary PartitionKey that starts with an index's name and '_' is refused by
// every write, Notify and Reconcile" with two index sets over one table (InterOptions.Kind
// documents that two index sets of one table may share a queue): set A indexes email,
// set B indexes last names. B knows nothing of A's "email_" partitions and stores a
// primary in "email_Sales" under a compound RowKey built with keys.Join (the SDK's own
// compound keys). A's reconciliation of Sales/000777 then replaces it with a copy: a
// primary entity overwritten by another index set's copy, and A's lookups return it.
func TestAttackInterTwoIndexSetsOneTable(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	q, _ := b.Queue()
	a := b.inter(t, q, -1, byEmail)
	bset, err := secondaryindex.NewInter(b.Clients.Tables, b.Table, q, []secondaryindex.Index[Employee]{byLast},
		&secondaryindex.InterOptions{Kind: "set-b", SafetyDelay: -1, Table: repo.Options{Retry: testbed.FastRetry()}})
	if err != nil {
		t.Fatal(err)
	}
	victim := iemp(500, "Vic", "Tim", "")
	victim.Department = "email_Sales"
	victim.RowKey = interKey("ann@contoso.com", "000777")
	if err := bset.Insert(b.Ctx, victim); errors.Is(err, repo.ErrInvalidInput) {
		return // held: set B refuses a primary in the form of any index partition
	} else if err != nil {
		t.Fatal(err)
	}
	ann := iemp(777, "Ann", "Other", "ann@contoso.com")
	if err := a.Insert(b.Ctx, ann); err != nil {
		t.Fatal(err)
	}
	if err := a.Reconcile(b.Ctx, "Sales", ann.RowKey); err != nil {
		t.Fatal(err)
	}
	got, err := bset.Table().Get(b.Ctx, victim.Department, victim.RowKey)
	if err != nil {
		t.Fatalf("set B's primary is gone: %v", err)
	}
	if got.FirstName != "Vic" {
		t.Fatalf("set B's primary email_Sales/%s now holds %+v: overwritten by set A's copy of Sales/000777", victim.RowKey, got)
	}
}
