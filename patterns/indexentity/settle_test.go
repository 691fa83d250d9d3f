package indexentity

import (
	"errors"
	"testing"
	"time"

	"github.com/tablepatterns/tablepatterns/internal/faultproxy"
	"github.com/tablepatterns/tablepatterns/queueworker"
)

// Handle's promise "... while the message is younger than Settle, snoozes it to look again:
// by then the write has landed or never will" at the handler's own window. The writer's
// update (Jones -> Smith) is enqueued and its write held; the handler reads the entity
// (still Jones, twice: reconcile's read and its re-read), and only then does it ask the
// clock whether the message is Settle old. The write lands between that last read and the
// clock reading, well inside its Settle/2 budget (real time: milliseconds after the
// enqueue); the handler is slow to get there (its last read's response, a GC pause, a
// loaded worker: Settle after EnqueuedAt). The message is deleted as "settled" although
// the state the handler reconciled predates the write: Smith is never listed.
func TestEventualSettleMeasuredBeforeTheReads(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	q := b.queue()
	s := b.blobStore()
	ix := b.eventual(s, q)
	settle := ix.settle.Settle()
	e := emp("Sales", "000152", "Jones")
	if err := ix.Insert(b.Ctx, e); err != nil {
		t.Fatal(err)
	}
	for _, m := range b.takeMessages(q) {
		if err := ix.Handle(b.Ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	b.checkKeys(s, "Jones", k("Sales", "000152"))

	ps := b.Proxies.Table.PauseAt("held update", faultproxy.IsEntityWrite, 1)
	t.Cleanup(ps.Release)
	done := make(chan error, 1)
	e.LastName = "Smith"
	e.ETag = ""
	start := time.Now()
	go func() { done <- ix.Update(b.Ctx, e) }()
	select {
	case <-ps.Reached():
	case err := <-done:
		t.Fatalf("update ended before its write: %v", err)
	}
	ms := b.takeMessages(q)
	if len(ms) != 1 {
		t.Fatalf("%d messages, want 1", len(ms))
	}
	var werr error
	var landed time.Duration
	ix.seams.clock = func() time.Time {
		// The handler's reads are done: the write lands now, then the handler's clock
		// reading comes Settle after the enqueue.
		ps.Release()
		werr = <-done
		landed = time.Since(start)
		return ms[0].EnqueuedAt.Add(settle)
	}
	herr := ix.Handle(b.Ctx, ms[0])
	if werr != nil {
		t.Fatalf("Update: %v", werr)
	}
	t.Logf("write landed %v after Update began (budget %v); Handle returned %v", landed, settle/2, herr)
	var snooze *queueworker.SnoozeError
	if errors.As(herr, &snooze) {
		return // the message stays: a later delivery lists Smith
	}
	got, err := s.Keys(b.Ctx, "Smith")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) == 0 && len(b.takeMessages(q)) == 0 {
		t.Fatalf("entity is Smith, Smith lists nothing and no message is left (Handle: %v): an index entry missing forever", herr)
	}
}

// The Settle/2 protocol's "looks again later until the message was Settle old"
// with a forged envelope (DESIGN "Untrusted data": a counter in an envelope): EnqueuedAt
// is written by whoever enqueued, and one far in the future announcing a state that never
// comes makes the message younger than Settle forever (snoozes do not count towards
// MaxDequeueCount, so it is dequeued every second until its TTL). The service's
// InsertionTime is in the message; even long after the queue stored it
// (here: 100 x Settle later by the handler's clock), the handler must stop waiting.
func TestEventualForgedFutureEnqueuedAtStillSettles(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	s := b.tableStore(0)
	ix := b.eventual(s, b.queue())
	stored := time.Now()
	msg := &queueworker.Message[Change]{Payload: Change{PartitionKey: "Sales", RowKey: "000404", Value: "Ghost"},
		EnqueuedAt: stored.Add(100 * 365 * 24 * time.Hour), InsertionTime: stored}
	ix.seams.clock = func() time.Time { return stored.Add(100 * ix.settle.Settle()) }
	err := ix.Handle(b.Ctx, msg)
	var snooze *queueworker.SnoozeError
	if errors.As(err, &snooze) {
		t.Fatalf("a message stored %v ago (by the handler's clock) still snoozes %v: its forged EnqueuedAt keeps it young for a century", 100*ix.settle.Settle(), snooze.Duration)
	}
	if err != nil {
		t.Fatal(err)
	}
}
