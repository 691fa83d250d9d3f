package indexentity

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/internal/faultproxy"
	"github.com/tablepatterns/tablepatterns/queueworker"
	"github.com/tablepatterns/tablepatterns/repo"
	"github.com/tablepatterns/tablepatterns/repo/filter"
)

// stores are the two options of the guide that Eventual maintains.
var stores = []struct {
	name string
	make func(b *bed, opts storeOpts) Store
}{
	{"option1-blob", func(b *bed, _ storeOpts) Store { return b.blobStore() }},
	{"option3-table", func(b *bed, o storeOpts) Store { return b.tableStore(o.pageBytes) }},
}

type storeOpts struct{ pageBytes int }

func (b *bed) blobStore() *BlobStore {
	b.t.Helper()
	name := b.Container(false)
	s, err := NewBlobStore(b.Clients.Blobs, name, &BlobStoreOptions{Prefix: "lastname/", Retry: fast, Logger: b.log})
	if err != nil {
		b.t.Fatal(err)
	}
	if err := s.CreateIfNotExists(b.Ctx); err != nil {
		b.t.Fatal(err)
	}
	return s
}

func (b *bed) tableStore(pageBytes int) *TableStore {
	b.t.Helper()
	name := b.NewTableName()
	t := must(repo.New[codec.Entity](b.Clients.Tables, name, &repo.Options{Retry: fast, Logger: b.log}))
	s, err := NewTableStore(t, "LastName", &TableStoreOptions{PageBytes: pageBytes})
	if err != nil {
		b.t.Fatal(err)
	}
	return s
}

func (b *bed) eventual(s Store, q *queueworker.Client) *Eventual[Employee] {
	b.t.Helper()
	ix, err := NewEventual(b.emps, "LastName", lastName, s, q, &EventualOptions{Settle: 2 * time.Second})
	if err != nil {
		b.t.Fatal(err)
	}
	return ix
}

func k(pk, rk string) Key { return Key{pk, rk} }

// checkKeys asserts what value's list holds.
func (b *bed) checkKeys(s Store, value string, want ...Key) {
	b.t.Helper()
	got, err := s.Keys(b.Ctx, value)
	if err != nil {
		b.t.Fatal(err)
	}
	if len(got) == 0 && len(want) == 0 {
		return
	}
	if !slices.Equal(got, want) {
		b.t.Fatalf("%s lists %v, want %v", value, got, want)
	}
}

// takeMessages dequeues every message of q (and deletes them), decoded as the worker would.
func (b *bed) takeMessages(q *queueworker.Client) []*queueworker.Message[Change] {
	b.t.Helper()
	var out []*queueworker.Message[Change]
	for _, env := range b.TakeMessages(q) {
		var c Change
		if err := json.Unmarshal(env.Payload, &c); err != nil {
			b.t.Fatal(err)
		}
		out = append(out, &queueworker.Message[Change]{ID: env.ID, Kind: env.Kind, Payload: c, EnqueuedAt: env.EnqueuedAt})
	}
	return out
}

// The worker makes both options agree with the entities after inserts, a rename and a
// delete made through the API.
func TestEventualWorkerConverges(t *testing.T) {
	t.Parallel()
	for _, st := range stores {
		t.Run(st.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, false)
			q := b.queue()
			s := st.make(b, storeOpts{})
			ix := b.eventual(s, q)
			for _, e := range []*Employee{emp("Sales", "000152", "Jones"), emp("Sales", "000155", "Jones"), emp("Marketing", "000223", "Jones"), emp("Sales", "000160", "Smith"), emp("Sales", "000170", "")} {
				if err := ix.Insert(b.Ctx, e); err != nil {
					t.Fatal(err)
				}
			}
			w := b.drain(q, ix.Register)
			b.checkKeys(s, "Jones", k("Marketing", "000223"), k("Sales", "000152"), k("Sales", "000155"))
			b.checkKeys(s, "Smith", k("Sales", "000160"))
			jones, err := collect(ix.Find(b.Ctx, "Jones", nil))
			if err != nil || len(jones) != 3 || jones[0].Department != "Marketing" {
				t.Fatalf("Lookup(Jones) = %+v, %v", jones, err)
			}
			e := &jones[1]
			e.LastName = "Smith"
			if err := ix.Update(b.Ctx, e); err != nil {
				t.Fatal(err)
			}
			e.Age++ // same value: no message
			if err := ix.Update(b.Ctx, e); err != nil {
				t.Fatal(err)
			}
			if err := ix.Delete(b.Ctx, "Sales", "000155", nil); err != nil {
				t.Fatal(err)
			}
			w2 := b.drain(q, ix.Register)
			b.checkKeys(s, "Jones", k("Marketing", "000223"))
			b.checkKeys(s, "Smith", k("Sales", "000152"), k("Sales", "000160"))
			if st1, st2 := w.Stats(), w2.Stats(); st1.Processed != 4 || st2.Processed != 2 || st1.Poisoned+st2.Poisoned != 0 {
				t.Fatalf("worker stats: %+v then %+v", st1, st2)
			}
		})
	}
}

// The Done-when item: a duplicated, a reordered and a replayed reconciliation message each
// leave the right index. The messages are the ones the API really enqueued.
func TestEventualMessagesDuplicatedReorderedReplayed(t *testing.T) {
	t.Parallel()
	for _, st := range stores {
		t.Run(st.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, false)
			q := b.queue()
			s := st.make(b, storeOpts{})
			ix := b.eventual(s, q)
			ix.seams.clock = func() time.Time { return time.Now().Add(time.Hour) } // every message is settled
			handle := func(m *queueworker.Message[Change]) {
				t.Helper()
				if err := ix.Handle(b.Ctx, m); err != nil {
					t.Fatal(err)
				}
			}
			e1 := emp("Sales", "000152", "Jones")
			if err := ix.Insert(b.Ctx, e1); err != nil {
				t.Fatal(err)
			}
			m1 := b.takeMessages(q)[0]
			handle(m1)
			b.checkKeys(s, "Jones", k("Sales", "000152"))

			e1.LastName = "Smith"
			if err := ix.Update(b.Ctx, e1); err != nil {
				t.Fatal(err)
			}
			e1.LastName = "Brown"
			if err := ix.Update(b.Ctx, e1); err != nil {
				t.Fatal(err)
			}
			ms := b.takeMessages(q)
			if len(ms) != 2 {
				t.Fatalf("%d messages for two renames", len(ms))
			}
			m2, m3 := ms[0], ms[1]
			if m2.Payload.Value != "Smith" {
				m2, m3 = m3, m2
			}
			// Reordered: the Brown message first. It cannot know about Jones yet.
			handle(m3)
			b.checkKeys(s, "Brown", k("Sales", "000152"))
			// The Smith message, late: it re-reads the entity (Brown) and cleans Jones.
			handle(m2)
			b.checkKeys(s, "Brown", k("Sales", "000152"))
			b.checkKeys(s, "Jones")
			b.checkKeys(s, "Smith")
			// Duplicated: the same message again changes nothing.
			handle(m2)
			handle(m3)
			// Replayed: the first message, from when the employee was a Jones, does not
			// bring Jones back.
			handle(m1)
			b.checkKeys(s, "Jones")
			b.checkKeys(s, "Brown", k("Sales", "000152"))

			// Delete, then replay the insert: the index stays empty.
			if err := ix.Delete(b.Ctx, "Sales", "000152", nil); err != nil {
				t.Fatal(err)
			}
			m4 := b.takeMessages(q)[0]
			handle(m1)
			b.checkKeys(s, "Jones")
			handle(m4)
			handle(m4)
			b.checkKeys(s, "Brown")
		})
	}
}

// Two reconciliations of one entity interleave: the first reads "Jones", the entity is
// renamed and the second reconciles "Smith" completely, then the first lists it under
// Jones — stale. Its closing read sees the rename, and it removes what it listed.
func TestEventualReconcileRacesWithRename(t *testing.T) {
	t.Parallel()
	for _, st := range stores {
		t.Run(st.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, false)
			s := st.make(b, storeOpts{})
			ix := b.eventual(s, b.queue())
			e := emp("Sales", "000152", "Jones")
			if err := b.emps.Insert(b.Ctx, e); err != nil {
				t.Fatal(err)
			}
			type slow struct{}
			paused, resume := make(chan struct{}), make(chan struct{})
			var once sync.Once
			ix.seams.step = func(ctx context.Context, step string) error {
				if step == "add" && ctx.Value(slow{}) != nil {
					once.Do(func() { // only the first add of the slow reconciliation pauses
						paused <- struct{}{}
						<-resume
					})
				}
				return nil
			}
			done := make(chan error)
			go func() { done <- ix.Reconcile(context.WithValue(b.Ctx, slow{}, true), k("Sales", "000152")) }()
			<-paused
			e.LastName = "Smith"
			if err := b.emps.Update(b.Ctx, e, nil); err != nil {
				t.Fatal(err)
			}
			if err := ix.Reconcile(b.Ctx, k("Sales", "000152"), "Jones"); err != nil {
				t.Fatal(err)
			}
			b.checkKeys(s, "Smith", k("Sales", "000152"))
			close(resume)
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			b.checkKeys(s, "Jones")
			b.checkKeys(s, "Smith", k("Sales", "000152"))
		})
	}
}

// The Done-when item: a stop between any two steps of an eventually consistent write
// converges after the worker runs.
func TestEventualCrashBetweenSteps(t *testing.T) {
	t.Parallel()
	for _, st := range stores {
		t.Run(st.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, false)
			q := b.queue()
			s := st.make(b, storeOpts{})
			ix := b.eventual(s, q)
			crash := errors.New("process stopped")
			crashAt := func(at string) {
				ix.seams.step = func(_ context.Context, step string) error {
					if step == at {
						return crash
					}
					return nil
				}
			}
			// Step 1 done, step 2 (the write) never happens: the message settles and
			// changes nothing.
			crashAt("write")
			if err := ix.Insert(b.Ctx, emp("Sales", "000152", "Jones")); !errors.Is(err, crash) {
				t.Fatalf("crashed insert: %v", err)
			}
			ix.seams.step = nil
			start := time.Now()
			w := b.drain(q, ix.Register)
			if time.Since(start) < time.Second || w.Stats().Snoozed == 0 {
				t.Fatalf("the handler did not wait for the write to settle (%v, %+v)", time.Since(start), w.Stats())
			}
			b.checkKeys(s, "Jones")
			// The rerun completes it.
			e := emp("Sales", "000152", "Jones")
			if err := ix.Insert(b.Ctx, e); err != nil {
				t.Fatal(err)
			}
			b.drain(q, ix.Register)
			b.checkKeys(s, "Jones", k("Sales", "000152"))

			// A rename stopped after its message: the index keeps Jones, which is right.
			crashAt("write")
			e.LastName = "Smith"
			if err := ix.Update(b.Ctx, e); !errors.Is(err, crash) {
				t.Fatalf("crashed update: %v", err)
			}
			ix.seams.step = nil
			b.drain(q, ix.Register)
			b.checkKeys(s, "Jones", k("Sales", "000152"))
			b.checkKeys(s, "Smith")

			// The worker stops between adding Smith and removing Jones: the message is
			// delivered again and finishes.
			e.LastName = "Smith"
			e.ETag = ""
			if err := ix.Update(b.Ctx, e); err != nil {
				t.Fatal(err)
			}
			var once sync.Once
			ix.seams.step = func(_ context.Context, step string) error {
				var err error
				if step == "remove" {
					once.Do(func() { err = crash })
				}
				return err
			}
			w = b.drain(q, ix.Register)
			if w.Stats().Failed != 1 {
				t.Fatalf("the stop inside the handler did not happen: %+v", w.Stats())
			}
			b.checkKeys(s, "Jones")
			b.checkKeys(s, "Smith", k("Sales", "000152"))
		})
	}
}

// Faults injected on the wire: lost responses (a duplicated message, a write applied but
// unacknowledged) and a busy server, on the queue, the table and the store.
func TestEventualFaults(t *testing.T) {
	t.Parallel()
	for _, st := range stores {
		t.Run(st.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, true)
			q := b.queue()
			s := st.make(b, storeOpts{})
			ix := b.eventual(s, q)
			b.Proxies.Queue.AddRule(faultproxy.Rule{Name: "dup", Match: faultproxy.IsEnqueue, Times: 1, Action: faultproxy.DropAfterForward()})
			b.Proxies.Table.AddRule(faultproxy.Rule{Name: "lost write", Match: faultproxy.IsInsertEntity, Times: 1, Action: faultproxy.DropAfterForward()})
			storeWrite := faultproxy.Any(faultproxy.IsPutBlob, faultproxy.IsBatch)
			b.Proxies.Blob.AddRule(faultproxy.Rule{Name: "busy blob", Match: storeWrite, Times: 2, Action: faultproxy.Respond(503, "ServerBusy")})
			b.Proxies.Table.AddRule(faultproxy.Rule{Name: "lost index", Match: faultproxy.IsBatch, Times: 1, Action: faultproxy.DropAfterForward()})
			for _, e := range []*Employee{emp("Sales", "000152", "Jones"), emp("Sales", "000155", "Jones")} {
				// A lost insert response may be answered ErrOutcomeUnknown (the insert
				// landed; repo cannot prove it was this one without write tracking).
				if err := ix.Insert(b.Ctx, e); err != nil && !errors.Is(err, repo.ErrOutcomeUnknown) {
					t.Fatal(err)
				}
			}
			w := b.drain(q, ix.Register)
			b.checkKeys(s, "Jones", k("Sales", "000152"), k("Sales", "000155"))
			if b.Proxies.Queue.Fired("dup") != 1 || b.Proxies.Table.Fired("lost write") != 1 {
				t.Fatalf("faults did not fire")
			}
			if st.name == "option1-blob" && b.Proxies.Blob.Fired("busy blob") != 2 {
				t.Fatalf("blob fault fired %d times", b.Proxies.Blob.Fired("busy blob"))
			}
			if st.name == "option3-table" && b.Proxies.Table.Fired("lost index") != 1 {
				t.Fatalf("table fault fired %d times", b.Proxies.Table.Fired("lost index"))
			}
			if got := w.Stats().Processed; got != 3 {
				t.Fatalf("processed %d messages, want 3 (one duplicated by a lost enqueue response)", got)
			}
		})
	}
}

// The Done-when item for the eventual options: 20 reconciliations of different employees
// with the same last name, at once, lose no key (they contend on one blob or one index
// entity and retry on its ETag).
func TestEventualConcurrentReconcilesLoseNoKey(t *testing.T) {
	t.Parallel()
	for _, st := range stores {
		t.Run(st.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, false)
			s := st.make(b, storeOpts{pageBytes: 200}) // table: spills while contended
			ix := b.eventual(s, b.queue())
			var items []*Employee
			var want []Key
			for i := range 24 {
				e := emp(fmt.Sprintf("D%02d", i%3), fmt.Sprintf("%06d", i), "Jones")
				items = append(items, e)
				want = append(want, k(e.Department, e.EmployeeID))
			}
			if err := b.emps.BulkWrite(b.Ctx, items, nil); err != nil {
				t.Fatal(err)
			}
			slices.SortFunc(want, compareKeys)
			var wg sync.WaitGroup
			for _, key := range want {
				wg.Go(func() {
					if err := ix.Reconcile(b.Ctx, key); err != nil {
						t.Error(err)
					}
				})
			}
			wg.Wait()
			b.checkKeys(s, "Jones", want...)
			got, err := collect(ix.Find(b.Ctx, "Jones", nil))
			if err != nil || len(got) != len(want) {
				t.Fatalf("Lookup = %d, %v", len(got), err)
			}
		})
	}
}

// A stale entry (the worker has not caught up) is never returned by Lookup.
func TestEventualFindVerifiesHits(t *testing.T) {
	t.Parallel()
	for _, st := range stores {
		t.Run(st.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, false)
			s := st.make(b, storeOpts{})
			ix := b.eventual(s, b.queue())
			if err := b.emps.Insert(b.Ctx, emp("Sales", "000152", "Smith")); err != nil {
				t.Fatal(err)
			}
			for _, key := range []Key{k("Sales", "000152"), k("Sales", "999999")} {
				if err := s.Add(b.Ctx, "Jones", key); err != nil {
					t.Fatal(err)
				}
			}
			if err := s.Add(b.Ctx, "Jones", k("Sales", "000152")); err != nil { // idempotent
				t.Fatal(err)
			}
			keys, _ := ix.Keys(b.Ctx, "Jones")
			if len(keys) != 2 {
				t.Fatalf("Keys = %v", keys)
			}
			got, err := collect(ix.Find(b.Ctx, "Jones", nil))
			if err != nil || len(got) != 0 {
				t.Fatalf("Lookup returned stale hits: %+v, %v", got, err)
			}
			if err := s.Remove(b.Ctx, "Jones", k("Sales", "000152")); err != nil {
				t.Fatal(err)
			}
			if err := s.Remove(b.Ctx, "Jones", k("Sales", "000152")); err != nil { // idempotent
				t.Fatal(err)
			}
			b.checkKeys(s, "Jones", k("Sales", "999999"))
		})
	}
}

// Values that cannot be indexed are refused before anything is sent: no message, no
// write, no store request.
func TestEventualRefusesBadInputWithoutRequest(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	q := b.queue()
	blobIx := b.eventual(b.blobStore(), q)
	tableIx := b.eventual(b.tableStore(0), q)
	count := func() int { return b.Proxies.Table.Count() + b.Proxies.Queue.Count() + b.Proxies.Blob.Count() }
	mark := count()
	cases := map[string]func() error{
		"blob name over 1024":  func() error { return blobIx.Insert(b.Ctx, emp("Sales", "1", strings.Repeat("é", 200))) },
		"index key over 1 KiB": func() error { return tableIx.Insert(b.Ctx, emp("Sales", "1", strings.Repeat("J", 600))) },
		"nil entity":           func() error { return tableIx.Insert(b.Ctx, nil) },
		"bad key":              func() error { return tableIx.Update(b.Ctx, emp("Sales", "a?b", "Jones")) },
		"bad delete key":       func() error { return blobIx.Delete(b.Ctx, "", "1", nil) },
		"empty find":           func() error { _, err := collect(blobIx.Find(b.Ctx, "", nil)); return err },
		"reconcile bad key":    func() error { return tableIx.Reconcile(b.Ctx, k("Sales", "a\nb")) },
		"store add bad key":    func() error { return tableIx.Store().Add(b.Ctx, "Jones", k("Sales", "a#b")) },
	}
	for name, f := range cases {
		if err := f(); !errors.Is(err, repo.ErrInvalidInput) {
			t.Errorf("%s: %v, want ErrInvalidInput", name, err)
		}
	}
	if n := count() - mark; n != 0 {
		t.Fatalf("%d requests were sent for refused input", n)
	}
	for name, c := range map[string]struct {
		name  string
		store Store
		queue *queueworker.Client
		o     *EventualOptions
	}{
		"no store":     {"LastName", nil, q, nil},
		"no queue":     {"LastName", blobIx.Store(), nil, nil},
		"short settle": {"LastName", blobIx.Store(), q, &EventualOptions{Settle: time.Second}},
		"long name":    {strings.Repeat("n", 65), blobIx.Store(), q, nil},
	} {
		if _, err := NewEventual(b.emps, c.name, lastName, c.store, c.queue, c.o); !errors.Is(err, repo.ErrInvalidInput) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// Option 3's lists spill across index entities of their partition like option 2's.
func TestTableStoreSpills(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	s := b.tableStore(64)
	var want []Key
	for i := range 20 {
		key := k("Sales", fmt.Sprintf("%03d", i))
		want = append(want, key)
		if err := s.Add(b.Ctx, "O'Brien", key); err != nil {
			t.Fatal(err)
		}
	}
	pk, _ := s.PartitionKey("O'Brien")
	pages, err := s.Table().Collect(b.Ctx, repo.Query{Filter: filter.PartitionKey(pk)})
	if err != nil || len(pages) < 4 {
		t.Fatalf("%d pages, %v", len(pages), err)
	}
	b.checkKeys(s, "O'Brien", want...)
	for _, key := range want[:15] {
		if err := s.Remove(b.Ctx, "O'Brien", key); err != nil {
			t.Fatal(err)
		}
	}
	b.checkKeys(s, "O'Brien", want[15:]...)
	pages, _ = s.Table().Collect(b.Ctx, repo.Query{Filter: filter.PartitionKey(pk)})
	if len(pages) > 2 {
		t.Fatalf("%d pages left for 5 keys", len(pages))
	}
}

// Handle waits for a write that has not landed, and gives up waiting once the message is
// Settle old.
func TestEventualHandleSettles(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	s := b.tableStore(0)
	ix := b.eventual(s, b.queue())
	now := time.Now()
	ix.seams.clock = func() time.Time { return now }
	msg := &queueworker.Message[Change]{Payload: Change{PartitionKey: "Sales", RowKey: "000152", Value: "Jones"}, EnqueuedAt: now.Add(-500 * time.Millisecond)}
	var snooze *queueworker.SnoozeError
	if err := ix.Handle(b.Ctx, msg); !errors.As(err, &snooze) || snooze.Duration < time.Second {
		t.Fatalf("young message about a missing write: %v, want a snooze", err)
	}
	msg.EnqueuedAt = now.Add(-3 * time.Second)
	if err := ix.Handle(b.Ctx, msg); err != nil {
		t.Fatalf("settled message: %v", err)
	}
	if err := b.emps.Insert(b.Ctx, emp("Sales", "000152", "Jones")); err != nil {
		t.Fatal(err)
	}
	msg.EnqueuedAt = now
	if err := ix.Handle(b.Ctx, msg); err != nil {
		t.Fatalf("message whose write landed: %v", err)
	}
	b.checkKeys(s, "Jones", k("Sales", "000152"))
}

// The promise "a write enqueues its message first and then writes the
// entity within Settle/2 ... a stop between steps 1 and 2 ends with the message settling
// and changing nothing" at the settle window: the enqueue is slow (the proxy delays it by
// 3/4 of Settle, which the message's EnqueuedAt does not show) and the entity insert, if
// it is ever sent, is held while the worker handles the message at the moment it gives
// up (EnqueuedAt + Settle). The insert must never land after that, or the entity would
// exist and never be listed: one deadline taken before the envelope is built makes the
// slow enqueue exhaust the insert's budget, and Insert fails having written nothing.
func TestEventualWindowSlowEnqueueCannotOutliveSettle(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	q := b.queue()
	s := b.blobStore()
	ix := b.eventual(s, q)
	settle := ix.settle.Settle()
	b.Proxies.Queue.AddRule(faultproxy.Rule{Name: "slow enqueue", Match: faultproxy.IsEnqueue, Times: 1, Action: faultproxy.Delay(settle * 3 / 4)})
	ps := b.Proxies.Table.PauseAt("late insert", faultproxy.IsInsertEntity, 1)
	t.Cleanup(ps.Release)
	done := make(chan error, 1)
	go func() { done <- ix.Insert(b.Ctx, emp("Sales", "000152", "Jones")) }()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("Insert succeeded although its enqueue took most of Settle")
		}
		if ps.Seen() != 0 {
			t.Fatal("the insert was sent after its budget ran out")
		}
	case <-ps.Reached():
		ms := b.takeMessages(q)
		if len(ms) != 1 {
			t.Fatalf("%d messages", len(ms))
		}
		ix.seams.clock = func() time.Time { return ms[0].EnqueuedAt.Add(settle) }
		if err := ix.Handle(b.Ctx, ms[0]); err != nil {
			t.Fatal(err)
		}
		ps.Release()
		if err := <-done; err != nil {
			t.Fatalf("Insert: %v", err)
		}
	}
	if n := len(b.takeMessages(q)); n != 0 {
		t.Fatalf("%d messages left", n)
	}
	_, err := b.emps.Get(b.Ctx, "Sales", "000152")
	stored := err == nil
	if err != nil && !errors.Is(err, repo.ErrNotFound) {
		t.Fatal(err)
	}
	listed, err := s.Keys(b.Ctx, "Jones")
	if err != nil {
		t.Fatal(err)
	}
	if stored != (len(listed) == 1) {
		t.Fatalf("entity stored: %v, listed under Jones: %v: nothing is left to reconcile them", stored, listed)
	}
}
