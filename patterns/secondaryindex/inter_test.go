package secondaryindex_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tablepatterns/tablepatterns/internal/faultproxy"
	"github.com/tablepatterns/tablepatterns/internal/testenv"
	"github.com/tablepatterns/tablepatterns/patterns/internal/testbed"
	"github.com/tablepatterns/tablepatterns/patterns/secondaryindex"
	"github.com/tablepatterns/tablepatterns/queueworker"
	"github.com/tablepatterns/tablepatterns/repo"
)

// Attacks "duplicated, reordered and replayed messages all reconcile the current state"
// and the write protocol's "each step safe to interrupt" with SafetyDelay -1, at the
// primary write's lost response: the Delete lands, its response is lost, the retry meets
// 404 and repo answers ErrOutcomeUnknown. The write announces the entity in that case
// (and so does the caller's natural retry of Delete, which answers ErrNotFound): the
// deleted employee's copy is removed, not left with nothing queued to remove it.
func TestInterDeleteLostResponseWithoutSafetyStillRemovesTheCopy(t *testing.T) {
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
	err := x.Delete(b.Ctx, "Sales", e.RowKey, nil)
	t.Logf("Delete after a lost response: %v", err)
	if err != nil {
		// The caller retries, as any caller of a failed delete would.
		err2 := x.Delete(b.Ctx, "Sales", e.RowKey, nil)
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

// Through the queue and the worker: inserts, an email change and a delete end with the
// guide's index partitions holding exactly the current values.
func TestInterWorkerMaintainsIndexes(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	q, name := b.safetyQueue(t)
	x := b.inter(t, q, safety, byEmail, byLast)
	w := b.worker(t, name, x)
	for _, e := range []*Employee{iemp(223, "Jun", "Jones", "jonesj@contoso.com"), iemp(224, "Amy", "Jones", "amyj@contoso.com"), iemp(225, "Bob", "Smith", "bobs@contoso.com")} {
		if err := x.Insert(b.Ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	e, err := x.Table().Get(b.Ctx, "Sales", "000224")
	if err != nil {
		t.Fatal(err)
	}
	e.Email = "amy.jones@contoso.com"
	if err := x.Update(b.Ctx, &e); err != nil {
		t.Fatal(err)
	}
	if err := x.Delete(b.Ctx, "Sales", "000225", nil); err != nil {
		t.Fatal(err)
	}
	b.drainAfterSafety(t, w)
	b.expect(t, "email_Sales", [2]string{"jonesj@contoso.com", "000223"}, [2]string{"amy.jones@contoso.com", "000224"})
	b.expect(t, "last_Sales", [2]string{"Jones", "000223"}, [2]string{"Jones", "000224"})

	got, err := x.Lookup(b.Ctx, "Sales", "email", "amy.jones@contoso.com")
	if err != nil || got.EmployeeID != "000224" || got.RowKey != "000224" || got.Department != "Sales" || got.Age == 0 || got.ETag == "" {
		// Lookup verifies: the entity as the primary holds it, every property and its ETag.
		t.Fatalf("lookup: %+v %v", got, err)
	}
	if _, err := x.Lookup(b.Ctx, "Sales", "email", "bobs@contoso.com"); !errors.Is(err, repo.ErrNotFound) {
		t.Fatalf("lookup of a deleted employee: %v", err)
	}
	if got := ids(collect(t, x.Find(b.Ctx, "Sales", "last", "Jones", nil))); got != "000223,000224" {
		t.Fatalf("find Jones: %s", got)
	}
	if got := ids(collect(t, x.Prefix(b.Ctx, "Sales", "email", "a", nil))); got != "000224" {
		t.Fatalf("emails starting with a: %s", got)
	}
	if got := ids(collect(t, x.Range(b.Ctx, "Sales", "email", "", "z", nil))); got != "000224,000223" {
		t.Fatalf("emails in order: %s", got)
	}
	if s := w.Stats(); s.Poisoned != 0 || s.Processed < 10 {
		t.Fatalf("worker stats %+v", s)
	}
}

// A process that stops after the primary write and before the prompt message: the
// safety message, enqueued before the write, reconciles the entity once the worker runs.
func TestInterCrashBetweenPrimaryWriteAndEnqueue(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	q, name := b.safetyQueue(t)
	x := b.inter(t, q, safety, byEmail)
	w := b.worker(t, name, x)
	secondaryindex.SetTestHook(x, func(stage string) error {
		if stage == "written" {
			return errCrash
		}
		return nil
	})
	e := iemp(501, "Jeff", "Phillips", "jeffp@contoso.com")
	if err := x.Insert(b.Ctx, e); !errors.Is(err, errCrash) {
		t.Fatalf("insert: %v", err)
	}
	if _, err := x.Table().Get(b.Ctx, "Sales", "000501"); err != nil {
		t.Fatalf("the primary write did not happen: %v", err)
	}
	b.expect(t, "email_Sales") // nothing yet: the only message is still invisible
	b.drainAfterSafety(t, w)
	b.expect(t, "email_Sales", [2]string{"jeffp@contoso.com", "000501"})

	// The same for an update and a delete.
	e.Email = "jeff@contoso.com"
	if err := x.Update(b.Ctx, e); !errors.Is(err, errCrash) {
		t.Fatal(err)
	}
	b.drainAfterSafety(t, w)
	b.expect(t, "email_Sales", [2]string{"jeff@contoso.com", "000501"})
	if err := x.Delete(b.Ctx, "Sales", "000501", nil); !errors.Is(err, errCrash) {
		t.Fatal(err)
	}
	b.drainAfterSafety(t, w)
	b.expect(t, "email_Sales")
}

// The same crash injected as a fault: the queue refuses the prompt message. The write
// reports success (the safety message will do the work) and the index converges.
func TestInterPromptEnqueueFails(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	q, name := b.safetyQueue(t)
	x := b.inter(t, q, safety, byEmail)
	w := b.worker(t, name, x)
	var enqueues atomic.Int32
	b.Proxies.Queue.AddRule(faultproxy.Rule{Name: "refuse prompt", Action: faultproxy.Respond(403, "AuthorizationFailure"),
		Match: func(r *http.Request) bool { return faultproxy.IsEnqueue(r) && enqueues.Add(1) == 2 }})
	if err := x.Insert(b.Ctx, iemp(502, "Jun", "Cao", "junc@contoso.com")); err != nil {
		t.Fatalf("insert: %v", err)
	}
	if b.Proxies.Queue.Fired("refuse prompt") != 1 {
		t.Fatal("the prompt enqueue was not refused")
	}
	b.drainAfterSafety(t, w)
	b.expect(t, "email_Sales", [2]string{"junc@contoso.com", "000502"})
}

// A process that stops after the safety message and before the primary write (the write
// fails): the message finds nothing to index.
func TestInterCrashBetweenEnqueueAndPrimaryWrite(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	q, name := b.safetyQueue(t)
	x := b.inter(t, q, safety, byEmail)
	w := b.worker(t, name, x)
	b.Proxies.Table.AddRule(faultproxy.Rule{Name: "refuse write", Match: faultproxy.IsInsertEntity, Times: 1, Action: faultproxy.Respond(403, "AuthorizationFailure")})
	if err := x.Insert(b.Ctx, iemp(503, "Ken", "Kwok", "kenk@contoso.com")); err == nil {
		t.Fatal("insert succeeded through a refused write")
	}
	b.drainAfterSafety(t, w)
	b.expect(t, "email_Sales")
	if got := b.rows(t, "Sales"); len(got) != 0 {
		t.Fatalf("primary rows %q", got)
	}
}

// Copies in another table, the guide's other option.
func TestInterCopiesInAnotherTable(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	q, name := b.Queue()
	other := b.Table + "Idx"
	ix := byEmail
	ix.Table = other
	x := b.inter(t, q, -1, ix)
	if err := x.CreateIfNotExists(b.Ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = testenv.TableService(t).DeleteTable(t.Context(), other, nil) })
	w := b.worker(t, name, x)
	if err := x.Insert(b.Ctx, iemp(1001, "A", "B", "ab@contoso.com")); err != nil {
		t.Fatal(err)
	}
	testbed.Drain(t, w)
	got, err := x.Lookup(b.Ctx, "Sales", "email", "ab@contoso.com")
	if err != nil || got.EmployeeID != "001001" {
		t.Fatalf("%+v %v", got, err)
	}
	if rows := b.rows(t, "email_Sales"); len(rows) != 0 {
		t.Fatalf("copies in the primary table: %q", rows)
	}
}

// A value written around the index that no key can hold cannot be indexed: the message
// goes to the poison queue with the reason, and the other indexes are still maintained.
func TestInterUnindexableValueIsPoisoned(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	q, name := b.Queue()
	x := b.inter(t, q, -1, byEmail, byLast)
	w := b.worker(t, name, x)
	e := iemp(1101, "A", "Hall", "a#b@contoso.com")
	if err := x.Table().Insert(b.Ctx, e); err != nil {
		t.Fatal(err)
	}
	if err := x.Notify(b.Ctx, "Sales", "001101"); err != nil {
		t.Fatal(err)
	}
	testbed.Drain(t, w)
	b.expect(t, "last_Sales", [2]string{"Hall", "001101"})
	b.expect(t, "email_Sales")
	poison, err := queueworker.PeekPoison(b.Ctx, w.PoisonQueue(), 5)
	if err != nil || len(poison) != 1 || !strings.Contains(poison[0].Error, `index "email"`) {
		t.Fatalf("poison %+v %v", poison, err)
	}
}

// Bad input is refused before any request to the table or the queue.
func TestInterInvalidInputSendsNothing(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	q, _ := b.Queue()
	x := b.inter(t, q, safety, byEmail)
	tm, qm := b.Proxies.Table.Count(), b.Proxies.Queue.Count()
	cases := map[string]func() error{
		"unindexable value": func() error { return x.Insert(b.Ctx, iemp(1, "A", "B", "a/b@contoso.com")) },
		"nil":               func() error { return x.Update(b.Ctx, nil) },
		"empty partition":   func() error { return x.Upsert(b.Ctx, &Employee{RowKey: "1"}) },
		"bad key":           func() error { return x.Delete(b.Ctx, "Sales", "a?b", nil) },
		"notify bad key":    func() error { return x.Notify(b.Ctx, "", "1") },
		"reconcile bad key": func() error { return x.Reconcile(b.Ctx, "Sales", "a#b") },
		"unknown index": func() error {
			_, err := x.Lookup(b.Ctx, "Sales", "phone", "1")
			return err
		},
		"empty value": func() error {
			_, err := x.Lookup(b.Ctx, "Sales", "email", "")
			return err
		},
	}
	for name, f := range cases {
		if err := f(); !errors.Is(err, repo.ErrInvalidInput) {
			t.Errorf("%s: %v, want ErrInvalidInput", name, err)
		}
	}
	if n, m := requestsTo(b.Proxies.Table, tm), requestsTo(b.Proxies.Queue, qm); n != 0 || m != 0 {
		t.Fatalf("%d table and %d queue requests sent for refused input", n, m)
	}
	for name, c := range map[string]struct {
		q *queueworker.Client
		o *secondaryindex.InterOptions
	}{
		"no queue":     {nil, nil},
		"short safety": {q, &secondaryindex.InterOptions{SafetyDelay: time.Second}},
	} {
		if _, err := secondaryindex.NewInter(b.Clients.Tables, b.Table, c.q, []secondaryindex.Index[Employee]{byEmail}, c.o); !errors.Is(err, repo.ErrInvalidInput) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// The default kind is "secondaryindex.reconcile." and the table's name, and a message of
// that kind enqueued by another program (after a write around the index) is handled by
// Register's handler.
func TestInterRegisterHandlesTheDefaultKind(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	q, queue := b.Queue()
	x := b.inter(t, q, -1, byEmail)
	if !strings.HasPrefix(x.Kind(), "secondaryindex.reconcile.") {
		t.Fatalf("kind %q, want secondaryindex.reconcile.<table>", x.Kind())
	}
	e := iemp(21, "Old", "Kind", "old@contoso.com")
	if err := x.Table().Insert(b.Ctx, e); err != nil { // around the index: no message
		t.Fatal(err)
	}
	if _, err := queueworker.Enqueue(b.Ctx, q, "secondaryindex.reconcile."+b.Table, "", secondaryindex.Ref{PartitionKey: "Sales", RowKey: e.RowKey}, nil); err != nil {
		t.Fatal(err)
	}
	w := b.worker(t, queue, x)
	testbed.Drain(t, w)
	if st := w.Stats(); st.Processed != 1 || st.Poisoned != 0 {
		t.Fatalf("stats %+v, want the message processed", st)
	}
	if b.row(t, "email_Sales", interKey("old@contoso.com", e.RowKey)) == nil {
		t.Fatal("the message did not reconcile the copy")
	}
}

// "The other indexes are still reconciled" when one index can hold no
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

// The three-step write's bound: one deadline, SafetyDelay/2 from before the safety
// message is built, covers its enqueue and the primary write together. An enqueue that
// takes 3/4 of SafetyDelay (delayed at the proxy) leaves the write no time: Insert fails
// and writes nothing, instead of writing after a message whose visibility was counted
// from a moment long past.
func TestInterWriteBudgetCoversTheSafetyEnqueue(t *testing.T) {
	t.Parallel()
	// Short: the test waits for the deadline, and the enqueue outlasts it on any machine.
	const safety = 4 * time.Second
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
