package denormalize

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/tablepatterns/tablepatterns/internal/faultproxy"
	"github.com/tablepatterns/tablepatterns/patterns/internal/testbed"
	"github.com/tablepatterns/tablepatterns/queueworker"
	"github.com/tablepatterns/tablepatterns/repo"
)

// The tests of this file each hold one request at the proxy (faultproxy.Pause) at the
// narrowest window of a promise of the package documentation, run the competing
// operation to completion inside it, and release the request: the interleaving is exact.

// directTables returns the bed's tables on clients that bypass the proxies.
func (b *bed) directTables() (*repo.Table[Employee], *repo.Table[Department]) {
	b.t.Helper()
	emps := must(repo.New[Employee](b.Direct.Tables, b.emps.Name(), &repo.Options{Retry: fast, Logger: b.log}))
	depts := must(repo.New[Department](b.Direct.Tables, b.depts.Name(), &repo.Options{Retry: fast, Logger: b.log}))
	return emps, depts
}

// direct returns a relation like b.relation on clients that bypass the proxies (the
// competing writer of a window test, never held).
func (b *bed) direct(opts *Options) *Relation[Employee, Department] {
	b.t.Helper()
	emps, depts := b.directTables()
	r, err := New(emps, depts, "Manager", managerOf, copyManager, opts)
	if err != nil {
		b.t.Fatal(err)
	}
	return r
}

// directAcross is direct in AcrossPartitions mode, on q.
func (b *bed) directAcross(q *queueworker.Client, opts *Options) *Relation[Employee, Department] {
	b.t.Helper()
	emps, depts := b.directTables()
	r, err := NewAcross(emps, depts, "Manager", managerOf, copyManager, q, opts)
	if err != nil {
		b.t.Fatal(err)
	}
	return r
}

func isSourceWrite(src Key) func(*http.Request) bool {
	return faultproxy.All(faultproxy.IsEntityWrite, faultproxy.PathContains(fmt.Sprintf("PartitionKey='%s',RowKey='%s'", src.PartitionKey, src.RowKey)))
}

// Issue 15, defect 3. Attacks "UpdateSource and PutTarget that race for one source
// conflict, and the loser reads again and starts over ... no copy is ever left stale by
// a race" (InPartition) at each of PutTarget's windows: its request number n (the reads
// of the target, the source's links and the source, then the transaction) is held while a
// concurrent UpdateSource of the source commits; the copy must end up current.
func TestInPartitionWindowPutTargetRacesUpdateSource(t *testing.T) {
	t.Parallel()
	for _, w := range []struct {
		name  string
		match func(*http.Request) bool
		nth   int
	}{
		{"after the target read", faultproxy.IsTableQuery, 2},
		{"between the two reads of the source's state", faultproxy.IsTableQuery, 3},
		{"before the transaction", faultproxy.IsBatch, 1},
	} {
		t.Run(w.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, true, false)
			r := b.relation(nil)
			other := b.direct(nil)
			jones := manager("Sales", "000152", "Jun", "Jones", "555-0001")
			b.insert(jones)
			ps := b.Proxies.Table.PauseAt("PutTarget "+w.name, w.match, w.nth)
			t.Cleanup(ps.Release)
			done := make(chan error, 1)
			go func() { done <- r.PutTarget(b.Ctx, dept("Sales", "dept!Sales", "Sales", jones)) }()
			testbed.WaitHeld(t, ps)
			upd := *jones
			upd.Phone, upd.ETag = "555-9999", ""
			if err := other.UpdateSource(b.Ctx, &upd); err != nil {
				t.Fatal(err)
			}
			ps.Release()
			if err := <-done; err != nil {
				t.Fatalf("PutTarget: %v", err)
			}
			if d := b.checkCopy(r, Key{"Sales", "dept!Sales"}); d.ManagerPhone != "555-9999" {
				t.Fatalf("copy %+v", d)
			}
			b.checkCopies(r, Key{"Sales", "000152"}, Key{"Sales", "dept!Sales"})
			if n := b.header(r, Key{"Sales", "000152"}); n != 1 {
				t.Fatalf("header counts %d copies, want 1", n)
			}
		})
	}
}

// Issue 15, defect 4. Attacks "a target links itself before it copies, so a source
// update either finds the link or the target's own reconciliation copies the new
// details" (AcrossPartitions) at UpdateSource's window: its source write is held while a
// target is put, linked and copied (its message handled to completion by another worker)
// from the old source. After the write lands and the queue is drained, the copy is
// current: UpdateSource left a message even though the source had no copy when it began.
func TestAcrossWindowTargetLinkedDuringUpdateSource(t *testing.T) {
	t.Parallel()
	b := setup(t, true, true)
	q := b.queue()
	r := b.across(q, &Options{Settle: time.Minute})
	q2 := b.queue()
	other := b.directAcross(q2, &Options{Settle: time.Minute})
	jones := manager("Sales", "000152", "Jun", "Jones", "555-0001")
	b.insert(jones)
	src := Key{"Sales", "000152"}

	ps := b.Proxies.Table.PauseAt("UpdateSource write", isSourceWrite(src), 1)
	t.Cleanup(ps.Release)
	upd := *jones
	upd.Phone, upd.ETag = "555-9999", ""
	done := make(chan error, 1)
	go func() { done <- r.UpdateSource(b.Ctx, &upd) }()
	testbed.WaitHeld(t, ps)
	// Inside the window: a target is put and fully reconciled from the old source.
	if err := other.PutTarget(b.Ctx, dept("Departments", "Sales", "Sales", jones)); err != nil {
		t.Fatal(err)
	}
	b.drain(q2, other)
	b.checkCopies(other, src, Key{"Departments", "Sales"})
	ps.Release()
	if err := <-done; err != nil {
		t.Fatalf("UpdateSource: %v", err)
	}
	b.drain(q, r)
	if d := b.checkCopy(r, Key{"Departments", "Sales"}); d.ManagerPhone != "555-9999" {
		t.Fatalf("copy %+v", d)
	}
}

// Issue 15, defect 5. Attacks "a write enqueues its message first and then writes within
// Settle/2 ... a stop between enqueue and write ends with the message settling and
// changing nothing" at the settle window: the enqueue is slow (the proxy delays it by
// 3/4 of Settle, which the message's EnqueuedAt does not show) and the source write, if it
// is ever sent, is held while the worker handles the message at the moment it gives up
// (EnqueuedAt + Settle). The write must never land after that: with one deadline taken
// before the envelope is built, the slow enqueue exhausts the write's budget and
// UpdateSource fails having written nothing.
func TestAcrossWindowSlowEnqueueCannotOutliveSettle(t *testing.T) {
	t.Parallel()
	b := setup(t, true, true)
	q := b.queue()
	const settle = 2 * time.Second
	r := b.across(q, &Options{Settle: settle})
	jones := manager("Sales", "000152", "Jun", "Jones", "555-0001")
	b.insert(jones)
	src := Key{"Sales", "000152"}
	if err := r.PutTarget(b.Ctx, dept("Departments", "Sales", "Sales", jones)); err != nil {
		t.Fatal(err)
	}
	b.drain(q, r)

	b.Proxies.Queue.AddRule(faultproxy.Rule{Name: "slow enqueue", Match: faultproxy.IsEnqueue, Times: 1, Action: faultproxy.Delay(settle * 3 / 4)})
	ps := b.Proxies.Table.PauseAt("late source write", isSourceWrite(src), 1)
	t.Cleanup(ps.Release)
	upd := *jones
	upd.Phone, upd.ETag = "555-9999", ""
	done := make(chan error, 1)
	go func() { done <- r.UpdateSource(b.Ctx, &upd) }()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("UpdateSource succeeded although its enqueue took most of Settle")
		}
		if ps.Seen() != 0 {
			t.Fatal("the source write was sent after its budget ran out")
		}
	case <-ps.Reached():
		// The write is on its way after the slow enqueue: the worker sees the message
		// at the moment it stops waiting for the write, and gives up.
		ms := b.takeMessages(q)
		if len(ms) != 1 {
			t.Fatalf("%d messages", len(ms))
		}
		r.now = func() time.Time { return ms[0].EnqueuedAt.Add(settle) }
		if err := b.handle(r, ms[0]); err != nil {
			t.Fatal(err)
		}
		ps.Release()
		if err := <-done; err != nil {
			t.Fatalf("UpdateSource: %v", err)
		}
	}
	// Whatever happened, the copy agrees with the source as stored, and nothing is left
	// to fix it later.
	if n := len(b.takeMessages(q)); n != 0 {
		t.Fatalf("%d messages left", n)
	}
	b.checkCopy(r, Key{"Departments", "Sales"})
	if s, err := b.emps.Get(b.Ctx, src.PartitionKey, src.RowKey); err != nil || s.Phone != "555-0001" {
		t.Fatalf("source %+v %v: the write landed although its message had settled", s, err)
	}
}

// The InPartition promise "sources and copies change together or not at all", attacked at
// UpdateSource's window: its transaction is held while the target is re-put with a fresh
// copy by another writer; the held transaction then fails its conditions and starts over,
// and the copy is current.
func TestInPartitionWindowUpdateSourceRacesPutTarget(t *testing.T) {
	t.Parallel()
	b := setup(t, true, false)
	r := b.relation(nil)
	other := b.direct(nil)
	jones := manager("Sales", "000152", "Jun", "Jones", "555-0001")
	b.insert(jones)
	if err := other.PutTarget(b.Ctx, dept("Sales", "dept!Sales", "Sales", jones)); err != nil {
		t.Fatal(err)
	}
	ps := b.Proxies.Table.PauseAt("UpdateSource transaction", faultproxy.IsBatch, 1)
	t.Cleanup(ps.Release)
	upd := *jones
	upd.Phone, upd.ETag = "555-9999", ""
	done := make(chan error, 1)
	go func() { done <- r.UpdateSource(b.Ctx, &upd) }()
	testbed.WaitHeld(t, ps)
	if err := other.PutTarget(b.Ctx, dept("Sales", "dept!Support", "Support", jones)); err != nil {
		t.Fatal(err)
	}
	ps.Release()
	if err := <-done; err != nil {
		t.Fatalf("UpdateSource: %v", err)
	}
	for _, id := range []string{"dept!Sales", "dept!Support"} {
		if d := b.checkCopy(r, Key{"Sales", id}); d.ManagerPhone != "555-9999" {
			t.Fatalf("%s: copy %+v", id, d)
		}
	}
	if n := b.header(r, Key{"Sales", "000152"}); n != 2 {
		t.Fatalf("header counts %d copies, want 2", n)
	}
}

// A DeleteTarget whose delete repo cannot prove (repo.ErrOutcomeUnknown: a lost response,
// then a retry that met a conflict) decides from a fresh read: the target gone proves
// nothing (here another writer deleted it), so the answer is the unknown outcome, never
// nil (this call deleted it) nor "no such target" (nothing deleted). Played by a step
// hook that lets another writer do the delete and then reports the unknown outcome.
func TestDeleteTargetOutcomeUnknownIsRedecided(t *testing.T) {
	t.Parallel()
	for _, mode := range []Mode{InPartition, AcrossPartitions} {
		t.Run(mode.String(), func(t *testing.T) {
			t.Parallel()
			b := setup(t, false, mode == AcrossPartitions)
			step, pk := "transaction", "Sales"
			var r, other *Relation[Employee, Department]
			if mode == AcrossPartitions {
				q := b.queue()
				step, pk = "write", "Departments"
				r, other = b.across(q, nil), b.directAcross(q, &Options{Settle: 2 * time.Second})
			} else {
				r, other = b.relation(nil), b.direct(nil)
			}
			jones := manager("Sales", "000152", "Jun", "Jones", "555-0001")
			b.insert(jones)
			k := Key{pk, "Sales"}
			if err := r.PutTarget(b.Ctx, dept(pk, "Sales", "Sales", jones)); err != nil {
				t.Fatal(err)
			}
			first := true
			r.hook = func(ctx context.Context, s string) error {
				if s != step || !first {
					return nil
				}
				first = false
				if err := other.DeleteTarget(ctx, k, nil); err != nil {
					return err
				}
				return fmt.Errorf("test: retried delete: %w", repo.ErrOutcomeUnknown)
			}
			if err := r.DeleteTarget(b.Ctx, k, nil); !errors.Is(err, repo.ErrOutcomeUnknown) || errors.Is(err, repo.ErrNotFound) {
				t.Fatalf("delete whose outcome was unknown: %v, want ErrOutcomeUnknown", err)
			}
			if _, found, err := r.getTarget(b.Ctx, k); err != nil || found {
				t.Fatalf("target still there (%v)", err)
			}
			if mode == InPartition {
				b.checkCopies(r, Key{"Sales", "000152"})
				if n := b.header(r, Key{"Sales", "000152"}); n != 0 {
					t.Fatalf("header counts %d copies", n)
				}
			}
		})
	}
}
