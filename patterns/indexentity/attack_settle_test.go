package indexentity

import (
	"errors"
	"testing"
	"time"

	"github.com/tablepatterns/tablepatterns/internal/faultproxy"
	"github.com/tablepatterns/tablepatterns/queueworker"
)

// Attacks "Handle ... while the message is younger than Settle, snoozes it to look again:
// by then the write has landed or never will" at the handler's own window. The writer's
// update (Jones -> Smith) is enqueued and its write held; the handler reads the entity
// (still Jones, twice: reconcile's read and its re-read), and only then does it ask the
// clock whether the message is Settle old. The write lands between that last read and the
// clock reading, well inside its Settle/2 budget (real time: milliseconds after the
// enqueue); the handler is slow to get there (its last read's response, a GC pause, a
// loaded worker: Settle after EnqueuedAt). The message is deleted as "settled" although
// the state the handler reconciled predates the write: Smith is never listed.
func TestAttackEventualSettleMeasuredAfterTheReads(t *testing.T) {
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
	ix.now = func() time.Time {
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
