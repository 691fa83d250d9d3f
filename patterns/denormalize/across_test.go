package denormalize

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/tablepatterns/tablepatterns/internal/faultproxy"
	"github.com/tablepatterns/tablepatterns/patterns/internal/testbed"
	"github.com/tablepatterns/tablepatterns/queueworker"
)

// Departments in a table of their own, managers in their departments' partitions: the
// copies follow through the worker.
func TestAcrossGuideFlow(t *testing.T) {
	t.Parallel()
	b := setup(t, false, true)
	q := b.queue()
	r := b.across(q, nil)
	ctx := b.Ctx
	jones, cao := manager("Sales", "000152", "Jun", "Jones", "555-0152"), manager("Marketing", "000223", "Jeff", "Cao", "555-0223")
	b.insert(jones, cao)
	for _, d := range []*Department{dept("Departments", "Sales", "Sales", jones), dept("Departments", "Support", "Support", jones), dept("Departments", "Marketing", "Marketing", cao)} {
		if err := r.PutTarget(ctx, d); err != nil {
			t.Fatal(err)
		}
		if d.ManagerName == "" {
			t.Fatalf("PutTarget did not copy the manager into %s", d.ID)
		}
	}
	st := b.drain(q, r)
	b.checkCopies(r, Key{"Sales", "000152"}, Key{"Departments", "Sales"}, Key{"Departments", "Support"})
	b.checkCopies(r, Key{"Marketing", "000223"}, Key{"Departments", "Marketing"})

	jones.Phone = "555-7777"
	if err := r.UpdateSource(ctx, jones); err != nil {
		t.Fatal(err)
	}
	st2 := b.drain(q, r)
	for _, id := range []string{"Sales", "Support"} {
		if d := b.checkCopy(r, Key{"Departments", id}); d.ManagerPhone != "555-7777" {
			t.Fatalf("%s not refreshed: %+v", id, d)
		}
	}
	// Support gets Cao as manager; then Marketing is deleted.
	support := dept("Departments", "Support", "Support", cao)
	if err := r.PutTarget(ctx, support); err != nil {
		t.Fatal(err)
	}
	if err := r.DeleteTarget(ctx, Key{"Departments", "Marketing"}, nil); err != nil {
		t.Fatal(err)
	}
	st3 := b.drain(q, r)
	b.checkCopy(r, Key{"Departments", "Support"})
	b.checkCopies(r, Key{"Sales", "000152"}, Key{"Departments", "Sales"})
	b.checkCopies(r, Key{"Marketing", "000223"}, Key{"Departments", "Support"})
	if st.Processed != 3 || st2.Processed != 1 || st3.Processed != 2 || st.Poisoned+st2.Poisoned+st3.Poisoned != 0 {
		t.Fatalf("worker stats: %+v / %+v / %+v", st, st2, st3)
	}
	// A source without copies still leaves one message: a target may link it between
	// any read of its links and the write.
	loner := manager("Sales", "000999", "Lo", "Ner", "1")
	b.insert(loner)
	loner.Phone = "2"
	if err := r.UpdateSource(ctx, loner); err != nil {
		t.Fatal(err)
	}
	if ms := b.takeMessages(q); len(ms) != 1 || ms[0].Kind != r.SourceKind() {
		t.Fatalf("%d messages for a source without copies, want 1", len(ms))
	}
}

// Denormalization across partitions converges: duplicated, reordered and replayed messages, taken from the queue as the API wrote them, leave the right copies and
// links.
func TestAcrossMessagesDuplicatedReorderedReplayed(t *testing.T) {
	t.Parallel()
	b := setup(t, false, true)
	q := b.queue()
	r := b.across(q, nil)
	r.seams.now = func() time.Time { return time.Now().Add(time.Hour) } // every message is settled
	jones, cao := manager("Sales", "000152", "Jun", "Jones", "1"), manager("Marketing", "000223", "Jeff", "Cao", "1")
	b.insert(jones, cao)
	handle := func(ms ...message) {
		t.Helper()
		for _, m := range ms {
			if err := b.handle(r, m); err != nil {
				t.Fatal(err)
			}
		}
	}
	sales := dept("Departments", "Sales", "Sales", jones)
	if err := r.PutTarget(b.Ctx, sales); err != nil {
		t.Fatal(err)
	}
	mPut := b.takeMessages(q)[0]
	handle(mPut)
	b.checkCopies(r, Key{"Sales", "000152"}, Key{"Departments", "Sales"})

	// Three changes, handled late and out of order.
	jones.Phone = "2"
	if err := r.UpdateSource(b.Ctx, jones); err != nil {
		t.Fatal(err)
	}
	mSrc1 := b.takeMessages(q)[0]
	jones.Phone = "3"
	jones.ETag = ""
	if err := r.UpdateSource(b.Ctx, jones); err != nil {
		t.Fatal(err)
	}
	mSrc2 := b.takeMessages(q)[0]
	moved := dept("Departments", "Sales", "Sales", cao)
	if err := r.PutTarget(b.Ctx, moved); err != nil {
		t.Fatal(err)
	}
	mMove := b.takeMessages(q)[0]
	cao.Phone = "9"
	if err := r.UpdateSource(b.Ctx, cao); err != nil {
		t.Fatal(err)
	}
	// Cao had no link yet, and still gets a message: a target may link him before the
	// write lands.
	mCao := b.takeMessages(q)
	if len(mCao) != 1 {
		t.Fatalf("%d messages for an update of a source without links, want 1", len(mCao))
	}
	// Reordered: the newest source message first, then the move, then the older one.
	handle(mSrc2, mMove, mCao[0], mSrc1)
	b.checkCopy(r, Key{"Departments", "Sales"})
	b.checkCopies(r, Key{"Sales", "000152"})
	b.checkCopies(r, Key{"Marketing", "000223"}, Key{"Departments", "Sales"})
	// Duplicated and replayed: all of them again, the first put last.
	handle(mMove, mSrc1, mCao[0], mSrc2, mMove, mPut)
	if d := b.checkCopy(r, Key{"Departments", "Sales"}); d.ManagerPhone != "9" || d.ManagerName != "Jeff Cao" {
		t.Fatalf("department %+v", d)
	}
	b.checkCopies(r, Key{"Sales", "000152"})
	b.checkCopies(r, Key{"Marketing", "000223"}, Key{"Departments", "Sales"})
}

// A stop between any two steps converges after the worker runs: after the message and
// before the write, and inside the handler between its steps.
func TestAcrossCrashBetweenSteps(t *testing.T) {
	t.Parallel()
	b := setup(t, false, true)
	q := b.queue()
	r := b.across(q, nil)
	jones := manager("Sales", "000152", "Jun", "Jones", "1")
	b.insert(jones)
	if err := r.PutTarget(b.Ctx, dept("Departments", "Sales", "Sales", jones)); err != nil {
		t.Fatal(err)
	}
	b.drain(q, r)
	crash := errors.New("process stopped")
	crashAt := func(at string, times int) {
		var n int
		var mu sync.Mutex
		r.seams.step = func(_ context.Context, step string) error {
			mu.Lock()
			defer mu.Unlock()
			if step == at && n < times {
				n++
				return crash
			}
			return nil
		}
	}
	// Message stored, source never written: the copies stay equal to the source.
	crashAt("write", 1)
	jones.Phone = "2"
	if err := r.UpdateSource(b.Ctx, jones); !errors.Is(err, crash) {
		t.Fatalf("stopped update: %v", err)
	}
	r.seams.step = nil
	start := time.Now()
	if st := b.drain(q, r); st.Snoozed == 0 || time.Since(start) < time.Second {
		t.Fatalf("the handler did not wait for the write: %+v", st)
	}
	if d := b.checkCopy(r, Key{"Departments", "Sales"}); d.ManagerPhone != "1" {
		t.Fatalf("copy %+v", d)
	}
	// Rerun, with the worker stopping once before each of its steps.
	jones.ETag = ""
	if err := r.UpdateSource(b.Ctx, jones); err != nil {
		t.Fatal(err)
	}
	crashAt("copy", 1)
	if st := b.drain(q, r); st.Failed != 1 {
		t.Fatalf("the stop inside the handler did not happen: %+v", st)
	}
	if d := b.checkCopy(r, Key{"Departments", "Sales"}); d.ManagerPhone != "2" {
		t.Fatalf("copy %+v", d)
	}
	// A new target whose handler stops before linking, then before unlinking the old
	// source on a move.
	cao := manager("Marketing", "000223", "Jeff", "Cao", "7")
	b.insert(cao)
	crashAt("link", 1)
	if err := r.PutTarget(b.Ctx, dept("Departments", "Support", "Support", jones)); err != nil {
		t.Fatal(err)
	}
	b.drain(q, r)
	crashAt("unlink", 1)
	if err := r.PutTarget(b.Ctx, dept("Departments", "Sales", "Sales", cao)); err != nil {
		t.Fatal(err)
	}
	b.drain(q, r)
	r.seams.step = nil
	b.checkCopies(r, Key{"Sales", "000152"}, Key{"Departments", "Support"})
	b.checkCopies(r, Key{"Marketing", "000223"}, Key{"Departments", "Sales"})
	b.checkCopy(r, Key{"Departments", "Sales"})
	b.checkCopy(r, Key{"Departments", "Support"})
}

// Many writers and refreshes at once; after the worker drains, every copy equals its
// source.
func TestAcrossConcurrentWriters(t *testing.T) {
	t.Parallel()
	b := setup(t, false, true)
	q := b.queue()
	r := b.across(q, nil)
	jones := manager("Sales", "000152", "Jun", "Jones", "0")
	b.insert(jones)
	var want []Key
	var wg sync.WaitGroup
	for i := range 10 {
		id := fmt.Sprintf("D%02d", i)
		want = append(want, Key{"Departments", id})
		wg.Go(func() {
			if err := r.PutTarget(b.Ctx, dept("Departments", id, id, jones)); err != nil {
				t.Error(err)
			}
		})
		wg.Go(func() {
			if err := r.UpdateSource(b.Ctx, manager("Sales", "000152", "Jun", "Jones", fmt.Sprint(i+1))); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	// Handlers running concurrently with each other too.
	var hw sync.WaitGroup
	for range 4 {
		hw.Go(func() {
			if err := r.RefreshSource(b.Ctx, Key{"Sales", "000152"}); err != nil {
				t.Error(err)
			}
		})
	}
	b.drain(q, r)
	hw.Wait()
	b.checkCopies(r, Key{"Sales", "000152"}, want...)
	for _, k := range want {
		b.checkCopy(r, k)
	}
}

// Faults on the wire: a duplicated message (lost enqueue response), busy servers and a
// lost response of a copy's update.
func TestAcrossFaults(t *testing.T) {
	t.Parallel()
	b := setup(t, true, true)
	q := b.queue()
	r := b.across(q, nil)
	jones := manager("Sales", "000152", "Jun", "Jones", "1")
	b.insert(jones)
	b.Proxies.Queue.AddRule(faultproxy.Rule{Name: "dup", Match: faultproxy.IsEnqueue, Times: 1, Action: faultproxy.DropAfterForward()})
	if err := r.PutTarget(b.Ctx, dept("Departments", "Sales", "Sales", jones)); err != nil {
		t.Fatal(err)
	}
	if st := b.drain(q, r); st.Processed != 2 || st.Poisoned != 0 {
		t.Fatalf("the lost enqueue response should have stored the message twice: %+v", st)
	}
	b.Proxies.Table.AddRule(faultproxy.Rule{Name: "busy", Match: faultproxy.IsEntityWrite, Times: 2, Action: faultproxy.Respond(503, "ServerBusy")})
	b.Proxies.Table.AddRule(faultproxy.Rule{Name: "lost", Match: faultproxy.All(faultproxy.IsEntityWrite, faultproxy.PathContains("Departments")), Times: 1, Action: faultproxy.DropAfterForward()})
	jones.Phone = "2"
	if err := r.UpdateSource(b.Ctx, jones); err != nil {
		t.Fatal(err)
	}
	st := b.drain(q, r)
	if b.Proxies.Queue.Fired("dup") != 1 || b.Proxies.Table.Fired("busy") != 2 || b.Proxies.Table.Fired("lost") != 1 {
		t.Fatalf("faults fired: dup %d busy %d lost %d", b.Proxies.Queue.Fired("dup"), b.Proxies.Table.Fired("busy"), b.Proxies.Table.Fired("lost"))
	}
	if st.Processed != 1 || st.Poisoned != 0 {
		t.Fatalf("worker stats %+v", st)
	}
	if d := b.checkCopy(r, Key{"Departments", "Sales"}); d.ManagerPhone != "2" {
		t.Fatalf("copy %+v", d)
	}
	b.checkCopies(r, Key{"Sales", "000152"}, Key{"Departments", "Sales"})
}

// Holds "a target links itself before it copies, so a source
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

// "Duplicated, reordered and replayed messages end in the same copies", through the
// worker: every message of a put, two source updates and a move re-enqueued twice,
// newest first, plus forged messages (keys that are not keys, an Old naming a source the
// target never copied). The copies and links must end exact and only the malformed
// messages be poisoned.
func TestAcrossMessagesReplayedNewestFirstAndForgedConverge(t *testing.T) {
	t.Parallel()
	b := setup(t, false, true)
	q := b.queue()
	r := b.across(q, nil)
	jones, cao := manager("Sales", "000152", "Jun", "Jones", "1"), manager("Marketing", "000223", "Jeff", "Cao", "1")
	b.insert(jones, cao)
	var all []message
	if err := r.PutTarget(b.Ctx, dept("Departments", "Sales", "Sales", jones)); err != nil {
		t.Fatal(err)
	}
	all = append(all, b.takeMessages(q)...)
	jones.Phone, jones.ETag = "2", ""
	if err := r.UpdateSource(b.Ctx, jones); err != nil {
		t.Fatal(err)
	}
	all = append(all, b.takeMessages(q)...)
	if err := r.PutTarget(b.Ctx, dept("Departments", "Sales", "Sales", cao)); err != nil {
		t.Fatal(err)
	}
	all = append(all, b.takeMessages(q)...)
	cao.Phone, cao.ETag = "9", ""
	if err := r.UpdateSource(b.Ctx, cao); err != nil {
		t.Fatal(err)
	}
	all = append(all, b.takeMessages(q)...)
	for i := len(all) - 1; i >= 0; i-- {
		m := all[i]
		if m.Kind != r.SourceKind() && m.Kind != r.TargetKind() {
			t.Fatalf("message of kind %q", m.Kind)
		}
		for range 2 {
			if _, err := queueworker.Enqueue(b.Ctx, q, m.Kind, "", json.RawMessage(m.Payload), nil); err != nil {
				t.Fatal(err)
			}
		}
	}
	forged := []struct {
		kind    string
		payload any
	}{
		{r.SourceKind(), SourceChange{PartitionKey: "Sales\x01", RowKey: "000152"}},
		{r.TargetKind(), TargetChange{PartitionKey: "Departments", RowKey: "a/b"}},
	}
	for _, f := range forged {
		if _, err := queueworker.Enqueue(b.Ctx, q, f.kind, "", f.payload, nil); err != nil {
			t.Fatal(err)
		}
	}
	// A well-formed forged target message naming Jones as an old source: harmless.
	if _, err := queueworker.Enqueue(b.Ctx, q, r.TargetKind(), "", TargetChange{PartitionKey: "Departments", RowKey: "Sales",
		Ref: &Key{"Sales", "000152"}, Old: []Key{{"Marketing", "000223"}}}, nil); err != nil {
		t.Fatal(err)
	}
	st := b.drain(q, r)
	t.Logf("stats %+v", st)
	if st.Poisoned != int64(len(forged)) {
		t.Errorf("poisoned %d, want %d", st.Poisoned, len(forged))
	}
	if d := b.checkCopy(r, Key{"Departments", "Sales"}); d.ManagerPhone != "9" || d.ManagerName != "Jeff Cao" {
		t.Fatalf("department %+v", d)
	}
	b.checkCopies(r, Key{"Sales", "000152"})
	b.checkCopies(r, Key{"Marketing", "000223"}, Key{"Departments", "Sales"})
}
