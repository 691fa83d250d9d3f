package denormalize

import (
	"errors"
	"testing"
	"time"

	"github.com/tablepatterns/tablepatterns/queueworker"
)

// Attacks "the handler waits for the write until the message is Settle old by its
// EnqueuedAt ... so a slow enqueue can never let the write land after the handler gave
// up" (AcrossPartitions) at the handler's side of the window: UpdateSource's message is
// enqueued and its source write held; the handler reads the source (old phone) and its
// links and finds the copy already equal to that; only then does it read the clock. The
// source write lands between the handler's last read and its clock reading, milliseconds
// after the enqueue (well inside Settle/2); the handler is slow to get to the clock
// (Settle after EnqueuedAt: a slow response, a GC pause). settled() then deletes the
// message although what it reconciled predates the write: the copy keeps the old phone
// and nothing is queued to fix it.
func TestAttackAcrossSettleMeasuredAfterTheReads(t *testing.T) {
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
	r.now = func() time.Time {
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
