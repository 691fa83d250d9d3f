package secondaryindex_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tablepatterns/tablepatterns/internal/faultproxy"
	"github.com/tablepatterns/tablepatterns/patterns/internal/testbed"
	"github.com/tablepatterns/tablepatterns/patterns/secondaryindex"
	"github.com/tablepatterns/tablepatterns/queueworker"
	"github.com/tablepatterns/tablepatterns/repo"
)

// Attacks "A transaction whose outcome repo cannot prove ... is decided again from fresh
// reads: a reconciliation starts over (the ref says what is written)" on each of the
// index transactions of an entity's life: the first copy (ref insert), an email change
// (ref update, copy moved), the delete (tombstone), and a re-insert over the tombstone.
// Each transaction lands and its response is lost; Reconcile must end with nil and the
// index exact.
func TestInterReconcileLostResponseEachTransaction(t *testing.T) {
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

// "Duplicated, reordered and replayed messages all reconcile the current state", with
// forged messages among them: four more messages for one entity in flight together with
// the two of its writes, the entity changed after the first write; and forged messages of
// the index's kind (a PartitionKey inside the index key space, keys that are not keys, a
// payload of another shape). The index must end exact and the forged messages poisoned,
// nothing else.
func TestInterReplayedAndForgedMessagesInFlightTogether(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	q, queue := b.Queue()
	x := b.inter(t, q, -1, byEmailLower)
	e := iemp(61, "Kai", "Kind", "Kai@One.com")
	if err := x.Insert(b.Ctx, e); err != nil {
		t.Fatal(err)
	}
	first := b.TakeMessages(q)
	e.Email = "kai@TWO.com"
	if err := x.Update(b.Ctx, e); err != nil {
		t.Fatal(err)
	}
	second := b.TakeMessages(q)
	if len(first) != 1 || len(second) != 1 || first[0].Kind != x.Kind() {
		t.Fatalf("messages %+v %+v", first, second)
	}
	ref := secondaryindex.Ref{PartitionKey: "Sales", RowKey: e.RowKey}
	for range 4 {
		if _, err := queueworker.Enqueue(b.Ctx, q, x.Kind(), "", ref, nil); err != nil {
			t.Fatal(err)
		}
	}
	forged := []any{
		secondaryindex.Ref{PartitionKey: "email_Sales", RowKey: interKey("kai@two.com", e.RowKey)},
		secondaryindex.Ref{PartitionKey: "Sales", RowKey: "a/b"},
		secondaryindex.Ref{PartitionKey: "", RowKey: e.RowKey},
		"not a ref",
	}
	for _, f := range forged {
		if _, err := queueworker.Enqueue(b.Ctx, q, x.Kind(), "", f, nil); err != nil {
			t.Fatal(err)
		}
	}
	w := b.worker(t, queue, x)
	testbed.Drain(t, w)
	st := w.Stats()
	t.Logf("stats %+v", st)
	if st.Poisoned != int64(len(forged)) {
		t.Errorf("poisoned %d, want the %d forged messages", st.Poisoned, len(forged))
	}
	got := b.rows(t, "email_Sales")
	want := map[string]bool{"!" + e.RowKey: true, interKey("kai@two.com", e.RowKey): true}
	if len(got) != 2 || !want[got[0]] || !want[got[1]] {
		t.Fatalf("index partition %q, want the ref and the copy of kai@two.com only", got)
	}
	if v, err := x.Lookup(b.Ctx, "Sales", "email", "KAI@two.COM"); err != nil || v.RowKey != e.RowKey {
		t.Fatalf("Lookup = %+v, %v", v, err)
	}
	if p, err := x.Get(b.Ctx, "Sales", e.RowKey); err != nil || p.Email != "kai@TWO.com" {
		t.Fatalf("primary = %+v, %v", p, err)
	}
}

// The reconciler reads the tables, not the message: duplicated, reordered and replayed
// messages, delivered directly, all end with the copies of the last state.
func TestInterReconcileDuplicatedReorderedReplayed(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	q, _ := b.Queue()
	x := b.inter(t, q, -1, byEmail, byLast)
	ctx := b.Ctx
	reconcile := func(id string) {
		t.Helper()
		if err := x.Reconcile(ctx, "Sales", id); err != nil {
			t.Fatal(err)
		}
	}
	// Three versions of one employee; their three messages arrive in the order 3, 1, 2,
	// then 1 again and 3 again, long after.
	e := iemp(301, "Ken", "Kwok", "a@contoso.com")
	if err := x.Insert(ctx, e); err != nil {
		t.Fatal(err)
	}
	e.Email, e.LastName = "b@contoso.com", "Kwoh"
	if err := x.Update(ctx, e); err != nil {
		t.Fatal(err)
	}
	e.Email = "c@contoso.com"
	if err := x.Update(ctx, e); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		reconcile("000301") // message 3 and a duplicate of it
	}
	b.expect(t, "email_Sales", [2]string{"c@contoso.com", "000301"})
	reconcile("000301") // message 1
	reconcile("000301") // message 2
	b.expect(t, "email_Sales", [2]string{"c@contoso.com", "000301"})
	b.expect(t, "last_Sales", [2]string{"Kwoh", "000301"})

	// An old message delivered after a newer write: it reconciles the newer state.
	e.Email = "d@contoso.com"
	if err := x.Update(ctx, e); err != nil {
		t.Fatal(err)
	}
	reconcile("000301") // the replay of message 1 meets version 4
	b.expect(t, "email_Sales", [2]string{"d@contoso.com", "000301"})
	// A copy is refreshed when a non-indexed property changes, and only then.
	e.FirstName = "Kenneth"
	if err := x.Update(ctx, e); err != nil {
		t.Fatal(err)
	}
	reconcile("000301")
	if r := b.row(t, "email_Sales", interKey("d@contoso.com", "000301")); r.Properties["FirstName"] != "Kenneth" {
		t.Fatalf("copy not refreshed: %v", r.Properties)
	}
	// The insert's message replayed after the delete: nothing comes back.
	if err := x.Delete(ctx, "Sales", "000301", nil); err != nil {
		t.Fatal(err)
	}
	reconcile("000301")
	reconcile("000301")
	b.expect(t, "email_Sales")
	b.expect(t, "last_Sales")

	// Messages for entities that never existed are harmless.
	reconcile("999999")
	b.expect(t, "email_Sales")
}

// Duplicated messages through the real queue and worker.
func TestInterDuplicatedMessagesThroughWorker(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	q, name := b.Queue()
	x := b.inter(t, q, -1, byEmail)
	w := b.worker(t, name, x)
	if err := x.Insert(b.Ctx, iemp(401, "Don", "Hall", "donh@contoso.com")); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, err := queueworker.Enqueue(b.Ctx, q, x.Kind(), "dup", secondaryindex.Ref{PartitionKey: "Sales", RowKey: "000401"}, nil); err != nil {
			t.Fatal(err)
		}
	}
	testbed.Drain(t, w)
	b.expect(t, "email_Sales", [2]string{"donh@contoso.com", "000401"})
	if s := w.Stats(); s.Processed != 4 || s.Failed != 0 {
		t.Fatalf("stats %+v", s)
	}
}

// A reconciliation stopped between any two of its steps, then run again, converges.
func TestInterReconcileStoppedBetweenSteps(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	q, _ := b.Queue()
	x := b.inter(t, q, -1, byEmail, byLast)
	for i, stop := range []string{"read", "index email done", "index last done"} {
		id := 600 + i
		rk := fmt.Sprintf("%06d", id)
		e := iemp(id, "F", "Old", fmt.Sprintf("old%d@contoso.com", i))
		if err := x.Insert(b.Ctx, e); err != nil {
			t.Fatal(err)
		}
		if err := x.Reconcile(b.Ctx, "Sales", rk); err != nil {
			t.Fatal(err)
		}
		e.Email, e.LastName = fmt.Sprintf("new%d@contoso.com", i), "New"
		if err := x.Update(b.Ctx, e); err != nil {
			t.Fatal(err)
		}
		secondaryindex.SetTestHook(x, func(stage string) error {
			if stage == stop {
				return errCrash
			}
			return nil
		})
		if err := x.Reconcile(b.Ctx, "Sales", rk); !errors.Is(err, errCrash) {
			t.Fatalf("%s: %v", stop, err)
		}
		secondaryindex.SetTestHook(x, nil)
		if err := x.Reconcile(b.Ctx, "Sales", rk); err != nil {
			t.Fatal(err)
		}
	}
	b.expect(t, "email_Sales", [2]string{"new0@contoso.com", "000600"}, [2]string{"new1@contoso.com", "000601"}, [2]string{"new2@contoso.com", "000602"})
	b.expect(t, "last_Sales", [2]string{"New", "000600"}, [2]string{"New", "000601"}, [2]string{"New", "000602"})
}

// A reconciliation that read an old version of the primary while a newer one was written
// and reconciled cannot commit its stale copy: the ref's ETag makes it start over.
func TestInterStaleReconcilerStartsOver(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	q, _ := b.Queue()
	x := b.inter(t, q, -1, byEmail)
	for _, reconciledFirst := range []bool{false, true} {
		id := 700
		if reconciledFirst {
			id = 701
		}
		rk := fmt.Sprintf("%06d", id)
		e := iemp(id, "F", "L", "a@contoso.com")
		if err := x.Insert(b.Ctx, e); err != nil {
			t.Fatal(err)
		}
		if reconciledFirst {
			if err := x.Reconcile(b.Ctx, "Sales", rk); err != nil {
				t.Fatal(err)
			}
			e.Email = "b@contoso.com"
			if err := x.Update(b.Ctx, e); err != nil {
				t.Fatal(err)
			}
		}
		var reads atomic.Int32
		secondaryindex.SetTestHook(x, func(stage string) error {
			if stage != "read" || reads.Add(1) != 1 {
				return nil
			}
			// The slow reconciler has read; meanwhile the employee changes and a fast
			// reconciler runs to completion.
			e.Email = "c@contoso.com"
			if err := x.Update(b.Ctx, e); err != nil {
				return err
			}
			return x.Reconcile(b.Ctx, "Sales", rk)
		})
		if err := x.Reconcile(b.Ctx, "Sales", rk); err != nil {
			t.Fatal(err)
		}
		secondaryindex.SetTestHook(x, nil)
		if reads.Load() < 3 {
			t.Fatalf("the slow reconciler did not start over (%d reads)", reads.Load())
		}
		copies, _ := b.state(t, "email_Sales")
		if !slices.Contains(copies, interKey("c@contoso.com", rk)) || slices.Contains(copies, interKey("a@contoso.com", rk)) || slices.Contains(copies, interKey("b@contoso.com", rk)) {
			t.Fatalf("copies %q", copies)
		}
	}
}

// Many reconciliations of one entity at once, while it changes: afterwards one copy,
// the last value's.
func TestInterConcurrentReconciles(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	q, _ := b.Queue()
	x := b.inter(t, q, -1, byEmail)
	e := iemp(801, "F", "L", "v0@contoso.com")
	if err := x.Insert(b.Ctx, e); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 100)
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 4 {
				if err := x.Reconcile(b.Ctx, "Sales", "000801"); err != nil {
					errs <- err
				}
			}
		}()
	}
	for i := 1; i <= 6; i++ {
		e.Email = fmt.Sprintf("v%d@contoso.com", i)
		if err := x.Update(b.Ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	// The message of the last write.
	if err := x.Reconcile(b.Ctx, "Sales", "000801"); err != nil {
		t.Fatal(err)
	}
	b.expect(t, "email_Sales", [2]string{"v6@contoso.com", "000801"})
}

// Attacks "two reconciliations of one entity are serialized by the
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
			if err := fast.Delete(b.Ctx, "Sales", e.RowKey, nil); err != nil {
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

// Tombstones are collected once older than TombstoneAge, live refs never; a
// reconciliation holding a tombstone it read when the tombstone is collected fails its
// condition and starts over (its transaction is held at the proxy while the collection
// runs), so collection cannot let a slow reconciliation insert a fresh ref, and a copy,
// for an entity that was deleted and reconciled meanwhile.
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
	if err := fast.Delete(b.Ctx, "Sales", gone.RowKey, nil); err != nil {
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
