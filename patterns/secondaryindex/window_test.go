package secondaryindex_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tablepatterns/tablepatterns/internal/faultproxy"
	"github.com/tablepatterns/tablepatterns/internal/testenv"
	"github.com/tablepatterns/tablepatterns/patterns/internal/testbed"
	"github.com/tablepatterns/tablepatterns/patterns/secondaryindex"
	"github.com/tablepatterns/tablepatterns/repo"
)

// The tests of this file each hold one request at the proxy (faultproxy.Pause) at the
// narrowest window of a promise of the package documentation, run the competing
// operation to completion inside it, and release the request: the interleaving is exact.

// directInter is an Inter on clients that bypass the proxies: the competing operation of
// a window test, never held by a pause.
func (b *bed) directInter(t *testing.T, indexes ...secondaryindex.Index[Employee]) *secondaryindex.Inter[Employee] {
	t.Helper()
	q, _ := b.Queue()
	x, err := secondaryindex.NewInter(b.Direct.Tables, b.Table, q, indexes, &secondaryindex.InterOptions{
		SafetyDelay: -1, Table: repo.Options{Retry: testbed.FastRetry()},
	})
	if err != nil {
		t.Fatal(err)
	}
	return x
}

// Issue 15, defect 1. Attacks "two reconciliations of one entity are serialized by the
// ref's ETag; the one that loses starts over from fresh reads" at its narrowest window: a
// slow reconciliation has read "no ref, the primary holds the email" and its transaction
// is held at the proxy; meanwhile the entity is reconciled (or not), deleted, and the
// delete reconciled to completion. When the slow transaction lands, it must not leave a
// copy of the deleted entity (the ABA of a deleted ref row: an insert checked only by key
// absence).
func TestInterWindowDeleteDuringSlowReconcile(t *testing.T) {
	t.Parallel()
	for _, reconciledBefore := range []bool{true, false} {
		name := "never reconciled"
		if reconciledBefore {
			name = "ref written then removed"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, true)
			q, _ := b.Queue()
			slow := b.inter(t, q, -1, byEmail)
			fast := b.directInter(t, byEmail)
			e := iemp(801, "Ann", "Aba", "ann@contoso.com")
			if err := fast.Insert(b.Ctx, e); err != nil {
				t.Fatal(err)
			}
			ps := b.Proxies.Table.PauseAt("slow reconcile transaction", faultproxy.IsBatch, 1)
			t.Cleanup(ps.Release)
			done := make(chan error, 1)
			go func() { done <- slow.Reconcile(b.Ctx, "Sales", e.RowKey) }()
			testbed.WaitHeld(t, ps) // the slow one read "no ref" and the primary with the email

			if reconciledBefore {
				if err := fast.Reconcile(b.Ctx, "Sales", e.RowKey); err != nil {
					t.Fatal(err)
				}
			}
			if err := fast.Delete(b.Ctx, &Employee{Department: "Sales", RowKey: e.RowKey}); err != nil {
				t.Fatal(err)
			}
			if err := fast.Reconcile(b.Ctx, "Sales", e.RowKey); err != nil {
				t.Fatal(err)
			}
			ps.Release()
			if err := <-done; err != nil {
				t.Fatalf("slow reconcile: %v", err)
			}
			b.expect(t, "email_Sales") // no copy, no live ref
			if _, err := slow.Lookup(b.Ctx, "Sales", "email", "ann@contoso.com"); !errors.Is(err, repo.ErrNotFound) {
				t.Fatalf("unverified lookup of the deleted employee: %v, want ErrNotFound", err)
			}
			// Later reconciliations find the tombstone up to date: no transaction.
			mark := b.Proxies.Table.Count()
			if err := slow.Reconcile(b.Ctx, "Sales", e.RowKey); err != nil {
				t.Fatal(err)
			}
			if n := b.Proxies.Table.CountMatching(func(r faultproxy.RequestInfo) bool { return strings.HasSuffix(r.Path, "$batch") }); n != 1 {
				t.Fatalf("%d transactions in all, want only the slow one", n)
			}
			if got := requestsTo(b.Proxies.Table, mark); got != 2 {
				t.Fatalf("a reconciliation of a deleted, reconciled entity sent %d requests, want 2 reads", got)
			}
		})
	}
}

// The same window with the value removed instead of the entity: the slow reconciliation
// read the old email; the entity loses its email and is reconciled meanwhile.
func TestInterWindowValueRemovedDuringSlowReconcile(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	q, _ := b.Queue()
	slow := b.inter(t, q, -1, byEmail)
	fast := b.directInter(t, byEmail)
	e := iemp(802, "Ben", "Aba", "ben@contoso.com")
	if err := fast.Insert(b.Ctx, e); err != nil {
		t.Fatal(err)
	}
	ps := b.Proxies.Table.PauseAt("slow reconcile transaction", faultproxy.IsBatch, 1)
	t.Cleanup(ps.Release)
	done := make(chan error, 1)
	go func() { done <- slow.Reconcile(b.Ctx, "Sales", e.RowKey) }()
	testbed.WaitHeld(t, ps)
	e.Email = ""
	if err := fast.Update(b.Ctx, e); err != nil {
		t.Fatal(err)
	}
	if err := fast.Reconcile(b.Ctx, "Sales", e.RowKey); err != nil {
		t.Fatal(err)
	}
	ps.Release()
	if err := <-done; err != nil {
		t.Fatalf("slow reconcile: %v", err)
	}
	b.expect(t, "email_Sales")
}

// Issue 15, defect 2: the copies of partition P live in "<index>_P" of the primary's
// table, so a primary PartitionKey of that form is refused before anything is sent, by
// every write, Notify and Reconcile (a primary there would be overwritten by copies and
// removed with them). With the index in another table the same keys are fine.
func TestInterPrimaryPartitionInIndexKeySpaceIsRefused(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	q, _ := b.Queue()
	x := b.inter(t, q, -1, byEmail, byLast)
	e := iemp(803, "Cy", "Col", "cy@contoso.com")
	e.Department = "email_Sales"
	mark := b.Proxies.Table.Count() + b.Proxies.Queue.Count()
	calls := map[string]error{
		"Insert":    x.Insert(b.Ctx, e),
		"Upsert":    x.Upsert(b.Ctx, e),
		"Update":    x.Update(b.Ctx, e),
		"Delete":    x.Delete(b.Ctx, &Employee{Department: "last_Sales", RowKey: "000803"}),
		"Notify":    x.Notify(b.Ctx, "email_", "000803"),
		"Reconcile": x.Reconcile(b.Ctx, "email_Sales", "000803"),
	}
	for name, err := range calls {
		if !errors.Is(err, repo.ErrInvalidInput) || !strings.Contains(err.Error(), "Index.Table") {
			t.Errorf("%s of a primary in an index partition: %v, want ErrInvalidInput naming Index.Table", name, err)
		}
	}
	if n := b.Proxies.Table.Count() + b.Proxies.Queue.Count() - mark; n != 0 {
		t.Fatalf("%d requests sent for refused keys", n)
	}
	// A PartitionKey that only resembles the prefix is fine ("emails_" is not "email_").
	ok := iemp(804, "Di", "Col", "di@contoso.com")
	ok.Department = "emailSales"
	if err := x.Insert(b.Ctx, ok); err != nil {
		t.Fatal(err)
	}

	// The index in another table: the primary key space is free.
	other := testenv.TableName(t) + "x"
	testenv.Table(t, other)
	user := secondaryindex.Index[Employee]{Name: "user", Value: func(e *Employee) string { return e.Email }, Table: other}
	y := b.inter(t, q, -1, user)
	u := iemp(805, "Ed", "Col", "ed@contoso.com")
	u.Department = "user_42"
	if err := y.Insert(b.Ctx, u); err != nil {
		t.Fatalf("a user_ partition with the user index in another table: %v", err)
	}
	if err := y.Reconcile(b.Ctx, "user_42", u.RowKey); err != nil {
		t.Fatal(err)
	}
	got, err := y.Lookup(b.Ctx, "user_42", "user", "ed@contoso.com")
	if err != nil || got.EmployeeID != "000805" {
		t.Fatalf("lookup: %+v %v", got, err)
	}
}

// Issue 15, defect 6: "the other indexes are still reconciled" when one index can hold no
// copy of the entity, here because its partition key ("email_" + a 508-character
// PartitionKey) exceeds the key limit while the other's ("e_" + it) does not.
func TestInterReconcileKeepsOtherIndexesWhenOnePartitionKeyIsTooLong(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	q, _ := b.Queue()
	short := secondaryindex.Index[Employee]{Name: "e", Value: func(e *Employee) string { return e.Email }}
	x := b.inter(t, q, -1, byEmail, short)
	e := iemp(806, "Flo", "Long", "flo@contoso.com")
	e.Department = strings.Repeat("S", 508)
	// Written around the package (Insert refuses it: the email index cannot hold it).
	if err := x.Insert(b.Ctx, e); !errors.Is(err, repo.ErrInvalidInput) {
		t.Fatalf("insert: %v, want ErrInvalidInput", err)
	}
	if err := x.Table().Insert(b.Ctx, e); err != nil {
		t.Fatal(err)
	}
	err := x.Reconcile(b.Ctx, e.Department, e.RowKey)
	if !errors.Is(err, repo.ErrInvalidInput) || !strings.Contains(err.Error(), `"email"`) {
		t.Fatalf("reconcile: %v, want ErrInvalidInput naming the email index", err)
	}
	b.expect(t, "e_"+e.Department, [2]string{"flo@contoso.com", "000806"})
	got, err := x.Lookup(b.Ctx, e.Department, "e", "flo@contoso.com")
	if err != nil || got.EmployeeID != "000806" {
		t.Fatalf("lookup through the other index: %+v %v", got, err)
	}
}

// Tombstones are collected once older than TombstoneAge, live refs never; a
// reconciliation holding a tombstone it read when the tombstone is collected fails its
// condition and starts over (its transaction is held at the proxy while the collection
// runs), so collection cannot bring the ABA of defect 1 back.
func TestInterCollectTombstones(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	q, _ := b.Queue()
	x := b.inter(t, q, -1, byEmail)
	fast := b.directInter(t, byEmail)
	a, gone, none := iemp(811, "A", "T", "a@contoso.com"), iemp(812, "B", "T", "b@contoso.com"), iemp(813, "C", "T", "")
	for _, e := range []*Employee{a, gone, none} {
		if err := fast.Insert(b.Ctx, e); err != nil {
			t.Fatal(err)
		}
		if err := fast.Reconcile(b.Ctx, "Sales", e.RowKey); err != nil {
			t.Fatal(err)
		}
	}
	if err := fast.Delete(b.Ctx, &Employee{Department: "Sales", RowKey: gone.RowKey}); err != nil {
		t.Fatal(err)
	}
	if err := fast.Reconcile(b.Ctx, "Sales", gone.RowKey); err != nil {
		t.Fatal(err)
	}
	if _, refs := b.state(t, "email_Sales"); len(refs) != 1 || len(b.rows(t, "email_Sales")) != 4 {
		t.Fatalf("before collection: rows %q", b.rows(t, "email_Sales"))
	}
	if n, err := x.CollectTombstones(b.Ctx, "Sales"); err != nil || n != 0 {
		t.Fatalf("young tombstones: removed %d, %v", n, err)
	}
	later := time.Now().Add(2 * time.Hour)
	secondaryindex.SetClock(x, func() time.Time { return later })

	// The deleted employee comes back; a reconciliation reads its tombstone and holds its
	// transaction while the tombstones are collected.
	back := iemp(812, "B", "T", "b2@contoso.com")
	if err := fast.Insert(b.Ctx, back); err != nil {
		t.Fatal(err)
	}
	ps := b.Proxies.Table.PauseAt("reconcile over a tombstone", faultproxy.IsBatch, 1)
	t.Cleanup(ps.Release)
	done := make(chan error, 1)
	go func() { done <- x.Reconcile(b.Ctx, "Sales", back.RowKey) }()
	testbed.WaitHeld(t, ps)
	n, err := fast.CollectTombstones(b.Ctx, "Sales") // the fast Inter's clock is real: nothing old
	if err != nil || n != 0 {
		t.Fatalf("collect with the real clock: %d, %v", n, err)
	}
	secondaryindex.SetClock(fast, func() time.Time { return later })
	if n, err = fast.CollectTombstones(b.Ctx, "Sales"); err != nil || n != 2 {
		t.Fatalf("collect: removed %d, %v; want the 2 tombstones", n, err)
	}
	ps.Release()
	if err := <-done; err != nil {
		t.Fatalf("reconcile over a collected tombstone: %v", err)
	}
	b.expect(t, "email_Sales", [2]string{"a@contoso.com", "000811"}, [2]string{"b2@contoso.com", "000812"})
	if got := len(b.rows(t, "email_Sales")); got != 4 {
		t.Fatalf("rows %q, want 2 copies and 2 refs", b.rows(t, "email_Sales"))
	}
}

// Attacks Intra's "a reader never sees an entity under both its old and new email, nor
// under neither" at its window: Update's transaction is held at the proxy after its read;
// readers in the window find the entity under the old email only, and after it under the
// new one only.
func TestIntraWindowReadersSeeOldOrNewNeverBoth(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	x := b.intra(t, byEmail)
	reader, err := intraOn(b.Direct.Tables, b.Table, byID, []secondaryindex.Index[Employee]{byEmail}, nil)
	if err != nil {
		t.Fatal(err)
	}
	e := emp(821, "Gus", "Win", "old@contoso.com")
	if err := x.Insert(b.Ctx, e); err != nil {
		t.Fatal(err)
	}
	found := func(email string) bool {
		t.Helper()
		_, err := reader.Lookup(b.Ctx, "Sales", "email", email)
		if err != nil && !errors.Is(err, repo.ErrNotFound) {
			t.Fatal(err)
		}
		return err == nil
	}
	ps := b.Proxies.Table.PauseAt("Intra update transaction", faultproxy.IsBatch, 1)
	t.Cleanup(ps.Release)
	e.Email = "new@contoso.com"
	done := make(chan error, 1)
	go func() { done <- x.Update(b.Ctx, e) }()
	testbed.WaitHeld(t, ps)
	if !found("old@contoso.com") || found("new@contoso.com") {
		t.Fatal("inside the update's window the entity must be found under the old email only")
	}
	ps.Release()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if found("old@contoso.com") || !found("new@contoso.com") {
		t.Fatal("after the update the entity must be found under the new email only")
	}
}

// Attacks Intra's "every write rewrites every copy": an update that read the entity and
// is held before its transaction while another writer changes the email loses: with the
// ETag it read, ErrPreconditionFailed; without, it reads again and wins (last writer),
// and in both cases every copy matches the primary.
func TestIntraWindowConcurrentUpdate(t *testing.T) {
	t.Parallel()
	for _, withETag := range []bool{true, false} {
		t.Run(fmt.Sprintf("etag=%v", withETag), func(t *testing.T) {
			t.Parallel()
			b := setup(t, true)
			x := b.intra(t, byEmail)
			other, err := intraOn(b.Direct.Tables, b.Table, byID, []secondaryindex.Index[Employee]{byEmail}, nil)
			if err != nil {
				t.Fatal(err)
			}
			e := emp(822, "Hal", "Win", "a@contoso.com")
			if err := x.Insert(b.Ctx, e); err != nil {
				t.Fatal(err)
			}
			mine := *e
			if !withETag {
				mine.ETag = ""
			}
			mine.Email = "mine@contoso.com"
			ps := b.Proxies.Table.PauseAt("held update", faultproxy.IsBatch, 1)
			t.Cleanup(ps.Release)
			done := make(chan error, 1)
			go func() { done <- x.Update(b.Ctx, &mine) }()
			testbed.WaitHeld(t, ps)
			theirs := *e
			theirs.ETag, theirs.Email = "", "theirs@contoso.com"
			if err := other.Update(b.Ctx, &theirs); err != nil {
				t.Fatal(err)
			}
			ps.Release()
			err = <-done
			want := "mine@contoso.com"
			if withETag {
				if !errors.Is(err, repo.ErrPreconditionFailed) {
					t.Fatalf("stale update: %v, want ErrPreconditionFailed", err)
				}
				want = "theirs@contoso.com"
			} else if err != nil {
				t.Fatal(err)
			}
			got, err := x.Get(b.Ctx, "Sales", "000822")
			if err != nil || got.Email != want {
				t.Fatalf("primary %+v %v, want email %s", got, err, want)
			}
			if rows := b.rows(t, "Sales"); len(rows) != 2 || !slices.Contains(rows, "email_"+want) {
				t.Fatalf("rows %q, want the primary and email_%s", rows, want)
			}
		})
	}
}

// The three-step write's bound: one deadline, SafetyDelay/2 from before the safety
// message is built, covers its enqueue and the primary write together. An enqueue that
// takes 3/4 of SafetyDelay (delayed at the proxy) leaves the write no time: Insert fails
// and writes nothing, instead of writing after a message whose visibility was counted
// from a moment long past.
func TestInterWriteBudgetCoversTheSafetyEnqueue(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	q, _ := b.Queue()
	x := b.inter(t, q, safety, byEmail)
	b.Proxies.Queue.AddRule(faultproxy.Rule{Name: "slow enqueue", Match: faultproxy.IsEnqueue, Times: 1, Action: faultproxy.Delay(safety * 3 / 4)})
	e := iemp(851, "Ivy", "Slow", "ivy@contoso.com")
	if err := x.Insert(b.Ctx, e); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("insert after a slow safety enqueue: %v, want context.DeadlineExceeded", err)
	}
	if n := b.Proxies.Table.CountMatching(func(r faultproxy.RequestInfo) bool { return r.Method == "POST" }); n != 0 {
		t.Fatalf("%d inserts sent after the budget ran out", n)
	}
	if got := b.rows(t, "Sales"); len(got) != 0 {
		t.Fatalf("primary rows %q", got)
	}
}
