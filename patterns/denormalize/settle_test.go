package denormalize

import (
	"errors"
	"testing"
	"time"

	"github.com/tablepatterns/tablepatterns/internal/faultproxy"
	"github.com/tablepatterns/tablepatterns/queueworker"
	"github.com/tablepatterns/tablepatterns/repo"
)

// Holds "the handler waits for the write until the message is Settle old by its
// EnqueuedAt ... so a slow enqueue can never let the write land after the handler gave
// up" (AcrossPartitions) at the handler's side of the window: UpdateSource's message is
// enqueued and its source write held; the handler reads the source (old phone) and its
// links and finds the copy already equal to that; only then does it read the clock. The
// source write lands between the handler's last read and its clock reading, milliseconds
// after the enqueue (well inside Settle/2); the handler is slow to get to the clock
// (Settle after EnqueuedAt: a slow response, a GC pause). Measured at the clock reading,
// the message would be settled and deleted although what the handler reconciled predates
// the write, leaving the old phone with nothing queued to fix it: the age must be taken
// before the reads.
func TestAcrossSettleIsMeasuredAfterTheReads(t *testing.T) {
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

	ps := b.Proxies.Table.PauseAt("held source write", isSourceWrite(src), 1)
	t.Cleanup(ps.Release)
	upd := *jones
	upd.Phone, upd.ETag = "555-9999", ""
	done := make(chan error, 1)
	go func() { done <- r.UpdateSource(b.Ctx, &upd) }()
	select {
	case <-ps.Reached():
	case err := <-done:
		t.Fatalf("UpdateSource ended before its write: %v", err)
	}
	ms := b.takeMessages(q)
	if len(ms) != 1 {
		t.Fatalf("%d messages, want 1", len(ms))
	}
	var werr error
	r.seams.now = func() time.Time {
		ps.Release()
		werr = <-done
		return ms[0].EnqueuedAt.Add(settle)
	}
	herr := b.handle(r, ms[0])
	if werr != nil {
		t.Fatalf("UpdateSource: %v", werr)
	}
	var snooze *queueworker.SnoozeError
	if errors.As(herr, &snooze) {
		return
	}
	d, err := b.depts.Get(b.Ctx, "Departments", "Sales")
	if err != nil {
		t.Fatal(err)
	}
	if left := len(b.takeMessages(q)); left == 0 && d.ManagerPhone != "555-9999" {
		t.Fatalf("source phone is 555-9999, copy %q, no message left (handler: %v): a stale copy forever", d.ManagerPhone, herr)
	}
}

// Handlers wait for an announced write that has not landed, and stop waiting once the
// message is Settle old; malformed keys are cancelled (poisoned), not retried.
func TestAcrossHandlersSettle(t *testing.T) {
	t.Parallel()
	b := setup(t, false, true)
	r := b.across(b.queue(), nil)
	now := time.Now()
	r.seams.now = func() time.Time { return now }
	jones := manager("Sales", "000152", "Jun", "Jones", "1")
	b.insert(jones)
	src := &queueworker.Message[SourceChange]{Payload: SourceChange{PartitionKey: "Sales", RowKey: "000152", Fingerprint: "not yet"}, EnqueuedAt: now}
	var snooze *queueworker.SnoozeError
	if err := r.HandleSource(b.Ctx, src); !errors.As(err, &snooze) {
		t.Fatalf("young source message whose write has not landed: %v", err)
	}
	src.EnqueuedAt = now.Add(-time.Minute)
	if err := r.HandleSource(b.Ctx, src); err != nil {
		t.Fatalf("settled: %v", err)
	}
	src.Payload.Fingerprint = r.fingerprint(jones)
	src.EnqueuedAt = now
	if err := r.HandleSource(b.Ctx, src); err != nil {
		t.Fatalf("landed: %v", err)
	}
	ref := Key{"Sales", "000152"}
	tgt := &queueworker.Message[TargetChange]{Payload: TargetChange{PartitionKey: "Departments", RowKey: "Sales", Ref: &ref}, EnqueuedAt: now}
	if err := r.HandleTarget(b.Ctx, tgt); !errors.As(err, &snooze) {
		t.Fatalf("young target message whose write has not landed: %v", err)
	}
	bad := &queueworker.Message[TargetChange]{Payload: TargetChange{PartitionKey: "Departments", RowKey: "a/b"}}
	var cancel *queueworker.CancelError
	if err := r.HandleTarget(b.Ctx, bad); !errors.As(err, &cancel) {
		t.Fatalf("malformed key: %v", err)
	}
	if err := r.PutTarget(b.Ctx, dept("Departments", "Sales", "Sales", jones)); err != nil {
		t.Fatal(err)
	}
	if err := r.HandleTarget(b.Ctx, tgt); err != nil {
		t.Fatalf("landed: %v", err)
	}
	if _, err := r.Copies(b.Ctx, ref); err != nil {
		t.Fatal(err)
	}
	b.checkCopies(r, ref, Key{"Departments", "Sales"})
	if err := r.DeleteTarget(b.Ctx, Key{"Departments", "Nope"}, nil); !errors.Is(err, repo.ErrNotFound) {
		t.Fatalf("delete of a missing target: %v", err)
	}
}

// Holds "a write enqueues its message first and then writes within
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
		r.seams.now = func() time.Time { return ms[0].EnqueuedAt.Add(settle) }
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

// The handlers treat EnqueuedAt as untrusted: a forged future EnqueuedAt must not
// keep a message snoozing once the queue stored it (InsertionTime) Settle ago.
func TestHandlersClampForgedEnqueuedAt(t *testing.T) {
	t.Parallel()
	b := setup(t, false, false)
	r := b.across(b.queue(), nil)
	stored := time.Now()
	forged := stored.Add(100 * 365 * 24 * time.Hour)
	// A source and a target that do not exist announce a state that never comes.
	src := &queueworker.Message[SourceChange]{Payload: SourceChange{PartitionKey: "Sales", RowKey: "000404", Fingerprint: "never"},
		EnqueuedAt: forged, InsertionTime: stored}
	tgt := &queueworker.Message[TargetChange]{Payload: TargetChange{PartitionKey: "Sales", RowKey: "dept!Ghost", Ref: &Key{"Sales", "000404"}},
		EnqueuedAt: forged, InsertionTime: stored}
	// Young by the service's clock: both snooze (the test can fail both ways).
	r.seams.now = func() time.Time { return stored.Add(time.Second) }
	var snooze *queueworker.SnoozeError
	if err := r.HandleSource(b.Ctx, src); !errors.As(err, &snooze) {
		t.Fatalf("HandleSource of a message stored 1 s ago = %v, want a snooze", err)
	}
	if err := r.HandleTarget(b.Ctx, tgt); !errors.As(err, &snooze) {
		t.Fatalf("HandleTarget of a message stored 1 s ago = %v, want a snooze", err)
	}
	// Settle after the queue stored it: done, whatever the envelope claims.
	r.seams.now = func() time.Time { return stored.Add(r.settle.Settle()) }
	if err := r.HandleSource(b.Ctx, src); err != nil {
		t.Fatalf("HandleSource of a message stored Settle ago with a forged EnqueuedAt = %v, want nil", err)
	}
	if err := r.HandleTarget(b.Ctx, tgt); err != nil {
		t.Fatalf("HandleTarget of a message stored Settle ago with a forged EnqueuedAt = %v, want nil", err)
	}
}
