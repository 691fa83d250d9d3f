package secondaryindex_test

import (
	"bytes"
	"io"
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/internal/faultproxy"
	"github.com/tablepatterns/tablepatterns/patterns/internal/testbed"
	"github.com/tablepatterns/tablepatterns/patterns/secondaryindex"
	"github.com/tablepatterns/tablepatterns/repo"
)

// repairBed is a proxied bed with n employees in Sales and an Inter on their emails
// (no queue delay, fast retries), backfilled.
func repairBed(t *testing.T, n int) (*bed, *secondaryindex.Inter[Employee]) {
	t.Helper()
	b := setup(t, true)
	b.seedEmployeesIn(t, n, func(int) string { return "Sales" })
	q, _ := b.Queue()
	x, err := secondaryindex.NewInter(b.Clients.Tables, b.Table, q, []secondaryindex.Index[Employee]{byEmail},
		&secondaryindex.InterOptions{SafetyDelay: -1, Conflict: testbed.FastRetry(), Table: repo.Options{Retry: testbed.FastRetry()}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := x.BackfillPartition(b.Ctx, "Sales", nil); err != nil {
		t.Fatal(err)
	}
	return b, x
}

// batchHolding selects the transactions whose body holds s.
func batchHolding(s string) func(*http.Request) bool {
	return func(r *http.Request) bool {
		if !faultproxy.IsBatch(r) {
			return false
		}
		body, _ := io.ReadAll(r.Body)
		return bytes.Contains(body, []byte(s))
	}
}

// Report.Repaired counts "the entities (Intra, Inter) ... that Repair wrote". Entity 1
// has two orphan copies in the email index (written around this package); Repair
// deletes them in two transactions. The first lands and answers; the second is refused
// (403, every time). The entity was written (its first orphan is gone), so it is
// counted, beside the error.
func TestInterRepairCountsAnEntityWrittenBeforeItsFailure(t *testing.T) {
	t.Parallel()
	b, x := repairBed(t, 2)
	for _, old := range []string{"old1@contoso.com", "old2@contoso.com"} {
		o := &codec.Entity{PartitionKey: "email_Sales", RowKey: interKey(old, "000001"), Properties: map[string]any{"EmployeeId": "000001", "Email": old}}
		if err := b.Raw.Insert(b.Ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	b.Proxies.Table.AddRule(faultproxy.Rule{Name: "refuse the second orphan", Action: faultproxy.Respond(http.StatusForbidden, "AuthorizationFailure"),
		Match: batchHolding("old2")})
	r, err := x.Repair(b.Ctx, "Sales", nil)
	if err == nil || r == nil {
		t.Fatalf("repair: %+v, %v; want the refusal", r, err)
	}
	if b.row(t, "email_Sales", interKey("old1@contoso.com", "000001")) != nil {
		t.Fatal("the first orphan is still there: the repair wrote nothing (the test would prove nothing)")
	}
	if r.Orphan != 2 || r.Repaired != 1 {
		t.Fatalf("repair: %d orphans, Repaired %d (error %v); want the entity it wrote counted", r.Orphan, r.Repaired, err)
	}
}

// Repaired counts each entity it wrote once, whatever its transactions' answers: three
// entities with stale copies, the answers of the first three repair transactions lost
// after they landed (the retries meet their own writes).
func TestInterRepairCountsEachEntityOnceThroughLostAnswers(t *testing.T) {
	t.Parallel()
	b, x := repairBed(t, 5)
	for _, id := range []string{"000000", "000002", "000004"} {
		email := "employee" + id + "@contoso.com"
		c := b.row(t, "email_Sales", interKey(email, id))
		if c == nil {
			t.Fatalf("no copy of %s", id)
		}
		c.Properties["FirstName"] = "Tampered"
		if err := b.Raw.Upsert(b.Ctx, c, nil); err != nil {
			t.Fatal(err)
		}
	}
	b.Proxies.Table.AddRule(faultproxy.Rule{Name: "lost answer", Times: 3, Action: faultproxy.DropAfterForward(), Match: faultproxy.IsBatch})
	r, err := x.Repair(b.Ctx, "Sales", nil)
	if err != nil {
		t.Fatal(err)
	}
	if n := b.Proxies.Table.Fired("lost answer"); n != 3 {
		t.Fatalf("%d answers lost, want 3", n)
	}
	if r.Stale != 3 || r.Repaired != 3 {
		t.Fatalf("repair: %d stale, Repaired %d; want the three entities counted once each", r.Stale, r.Repaired)
	}
	mustClean(t, b.Ctx, x, 5, "Sales")
}

// The same when the write that landed is the live reconciliation's: entity 1 lost its
// copy and its ref (Missing); Repair's Reconcile writes both, and the forced
// transaction after it is refused (403, every time). The entity was written (its copy
// is back), so it is counted, beside the error.
func TestInterRepairCountsAnEntityItsReconcileWroteBeforeAFailure(t *testing.T) {
	t.Parallel()
	b, x := repairBed(t, 2)
	for _, rk := range []string{interKey("employee000001@contoso.com", "000001"), "!000001"} {
		if err := b.Raw.Delete(b.Ctx, "email_Sales", rk, nil); err != nil {
			t.Fatal(err)
		}
	}
	var seen atomic.Int32
	held := batchHolding("employee000001")
	b.Proxies.Table.AddRule(faultproxy.Rule{Name: "refuse all but the first", Action: faultproxy.Respond(http.StatusForbidden, "AuthorizationFailure"),
		Match: func(r *http.Request) bool { return held(r) && seen.Add(1) > 1 }})
	r, err := x.Repair(b.Ctx, "Sales", nil)
	if err == nil || r == nil {
		t.Fatalf("repair: %+v, %v; want the refusal", r, err)
	}
	if b.row(t, "email_Sales", interKey("employee000001@contoso.com", "000001")) == nil {
		t.Fatal("the copy is still missing: the repair wrote nothing (the test would prove nothing)")
	}
	if r.Missing != 1 || r.Repaired != 1 {
		t.Fatalf("repair: %d missing, Repaired %d (error %v); want the entity it wrote counted", r.Missing, r.Repaired, err)
	}
}
