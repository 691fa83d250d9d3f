package secondaryindex_test

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tablepatterns/tablepatterns/internal/faultproxy"
	"github.com/tablepatterns/tablepatterns/internal/testenv"
	"github.com/tablepatterns/tablepatterns/patterns/internal/testbed"
	"github.com/tablepatterns/tablepatterns/patterns/secondaryindex"
	"github.com/tablepatterns/tablepatterns/queueworker"
	"github.com/tablepatterns/tablepatterns/repo"
	"github.com/tablepatterns/tablepatterns/repo/filter"
)

// iemp is an employee of the primary table of an Inter: the RowKey is the employee id.
func iemp(id int, first, last, email string) *Employee {
	e := emp(id, first, last, email)
	e.RowKey = e.EmployeeID
	return e
}

var errCrash = errors.New("test: the process stops here")

// safety is the SafetyDelay of the Inter tests. A write must land within half of it (the
// Settle/2 window), so it is twice the 2 s minimum: under -race on a loaded 2-core machine a
// proxied insert plus its enqueue has taken more than 1 s.
const safety = 4 * time.Second

// state returns the copies and the live refs (those that name a copy) of an index
// partition, RowKeys in order. Tombstones (refs of entities without a copy, which are
// never deleted) are left out.
func (b *bed) state(t *testing.T, part string) (copies, refs []string) {
	t.Helper()
	all, err := b.Raw.Collect(b.Ctx, repo.Query{Filter: filter.PartitionKey(part)})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range all {
		switch {
		case !strings.HasPrefix(e.RowKey, "!"):
			copies = append(copies, e.RowKey)
		case e.Properties["Key"] != "" && e.Properties["Key"] != nil:
			refs = append(refs, e.RowKey)
		}
	}
	return copies, refs
}

// expect checks that the index partition holds exactly the copies of the given
// (value, id) pairs and one ref per id.
func (b *bed) expect(t *testing.T, part string, pairs ...[2]string) {
	t.Helper()
	var wantCopies, wantRefs []string
	for _, p := range pairs {
		wantCopies = append(wantCopies, interKey(p[0], p[1]))
		wantRefs = append(wantRefs, "!"+p[1])
	}
	slices.Sort(wantCopies)
	slices.Sort(wantRefs)
	copies, refs := b.state(t, part)
	if !slices.Equal(copies, wantCopies) || !slices.Equal(refs, wantRefs) {
		t.Fatalf("%s holds copies %q refs %q, want %q %q", part, copies, refs, wantCopies, wantRefs)
	}
}

// Through the queue and the worker: inserts, an email change and a delete end with the
// guide's index partitions holding exactly the current values.
func TestInterWorkerMaintainsIndexes(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	q, name := b.Queue()
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
	if err := x.Delete(b.Ctx, &Employee{Department: "Sales", RowKey: "000225"}); err != nil {
		t.Fatal(err)
	}
	testbed.Drain(t, w)
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
	if err := x.Delete(ctx, &Employee{Department: "Sales", RowKey: "000301"}); err != nil {
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

// A process that stops after the primary write and before the prompt message: the
// safety message, enqueued before the write, reconciles the entity once the worker runs.
func TestInterCrashBetweenPrimaryWriteAndEnqueue(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	q, name := b.Queue()
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
	testbed.Drain(t, w)
	b.expect(t, "email_Sales", [2]string{"jeffp@contoso.com", "000501"})

	// The same for an update and a delete.
	e.Email = "jeff@contoso.com"
	if err := x.Update(b.Ctx, e); !errors.Is(err, errCrash) {
		t.Fatal(err)
	}
	testbed.Drain(t, w)
	b.expect(t, "email_Sales", [2]string{"jeff@contoso.com", "000501"})
	if err := x.Delete(b.Ctx, &Employee{Department: "Sales", RowKey: "000501"}); !errors.Is(err, errCrash) {
		t.Fatal(err)
	}
	testbed.Drain(t, w)
	b.expect(t, "email_Sales")
}

// The same crash injected as a fault: the queue refuses the prompt message. The write
// reports success (the safety message will do the work) and the index converges.
func TestInterPromptEnqueueFails(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	q, name := b.Queue()
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
	testbed.Drain(t, w)
	b.expect(t, "email_Sales", [2]string{"junc@contoso.com", "000502"})
}

// A process that stops after the safety message and before the primary write (the write
// fails): the message finds nothing to index.
func TestInterCrashBetweenEnqueueAndPrimaryWrite(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	q, name := b.Queue()
	x := b.inter(t, q, safety, byEmail)
	w := b.worker(t, name, x)
	b.Proxies.Table.AddRule(faultproxy.Rule{Name: "refuse write", Match: faultproxy.IsInsertEntity, Times: 1, Action: faultproxy.Respond(403, "AuthorizationFailure")})
	if err := x.Insert(b.Ctx, iemp(503, "Ken", "Kwok", "kenk@contoso.com")); err == nil {
		t.Fatal("insert succeeded through a refused write")
	}
	testbed.Drain(t, w)
	b.expect(t, "email_Sales")
	if got := b.rows(t, "Sales"); len(got) != 0 {
		t.Fatalf("primary rows %q", got)
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

// A reader that asks to verify gets only hits the primary confirms, as the primary holds
// them; a stale hit is dropped and its repair enqueued.
func TestInterVerifiedReads(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	q, name := b.Queue()
	x := b.inter(t, q, -1, byEmail)
	w := b.worker(t, name, x)
	e := iemp(901, "Don", "Hall", "donh@contoso.com")
	if err := x.Insert(b.Ctx, e); err != nil {
		t.Fatal(err)
	}
	testbed.Drain(t, w)
	// The primary changes around the index: its copy is now stale.
	e.Email = "don.hall@contoso.com"
	if err := x.Table().Update(b.Ctx, e, nil); err != nil {
		t.Fatal(err)
	}
	if got := collect(t, x.Find(b.Ctx, "Sales", "email", "donh@contoso.com", nil)); len(got) != 1 {
		t.Fatalf("unverified: %d hits", len(got))
	}
	if got := collect(t, x.Find(b.Ctx, "Sales", "email", "donh@contoso.com", &secondaryindex.ReadOptions{Verify: true})); len(got) != 0 {
		t.Fatalf("verified read returned a stale hit: %+v", got)
	}
	testbed.Drain(t, w) // the read repair
	b.expect(t, "email_Sales", [2]string{"don.hall@contoso.com", "000901"})
	got, err := x.Lookup(b.Ctx, "Sales", "email", "don.hall@contoso.com")
	if err != nil || got.Age != e.Age || got.ETag != e.ETag {
		t.Fatalf("verified lookup: %+v %v (want ETag %s)", got, err, e.ETag)
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
		"bad key":           func() error { return x.Delete(b.Ctx, &Employee{Department: "Sales", RowKey: "a?b"}) },
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
