package migrate

import (
	"context"
	"net/http"
	"testing"

	"github.com/tablepatterns/tablepatterns/internal/faultproxy"
	"github.com/tablepatterns/tablepatterns/patterns/internal/testbed"
)

// TestLostAndBusyAnswersOnCleanUpTransactionsLoseNothing takes a migration through every
// stage while a writer updates and deletes some entities, and the fault proxy answers 503 ServerBusy to
// clean-up's first two entity group transactions of old deletes (not applied), then
// loses the answer of the next three (after the service applied them): every transaction's
// entities end deleted, and the new layout holds exactly the latest version of each live
// entity.
func TestLostAndBusyAnswersOnCleanUpTransactionsLoseNothing(t *testing.T) {
	t.Parallel()
	f := setup(t, false, true)
	// The busy answers cut their partitions' rate in the client's Gate, and the retried
	// transactions wait there behind the writer's requests: their chunks outlast even a
	// patient deadline and are finished entity by entity. So this proves that nothing is
	// lost whichever path finishes them; the chunk's own handling of a lost answer is
	// TestLostAnswersOnCleanUpTransactionsAreSettledInTheirChunk's.
	f.patient(t)
	keys, md := f.planned(t, 120, 2)
	p := f.b.Proxy()
	p.SetSeed(5)
	deletes := testbed.DeletesFrom(f.src.Name())
	p.AddRule(faultproxy.Rule{Name: "busy", Match: deletes, Times: 2, Action: faultproxy.Respond(http.StatusServiceUnavailable, "ServerBusy")})
	p.AddRule(faultproxy.Rule{Name: "lost", Match: deletes, Times: 3, Action: faultproxy.DropAfterForward()})
	stop := make(chan struct{})
	w := &writer{f: f, md: md, keys: keys[:20], deletes: true} // most entities are left to clean-up
	ww := w.run(f.b.Ctx, t, 2, stop)
	f.advanceTo(t, Done)
	close(stop)
	ww.Wait()
	f.mustHoldExactly(t, md)
	for _, r := range []string{"busy", "lost"} {
		if p.Fired(r) == 0 {
			t.Errorf("rule %s never fired: the attack did not happen", r)
		}
	}
	t.Logf("clean-up transactions: busy %d, lost %d; writes %d", p.Fired("busy"), p.Fired("lost"), w.writes.Load())
}

// TestOldWriteBetweenCleanUpDetachAndItsTransactionIsNeverDeleted: a write in the old
// layout alone (a process past every stage bound) lands on one entity of a partition
// while clean-up's transaction deleting the partition's old entities is held: the
// transaction fails If-Match on it, its other entities are deleted one by one, and the
// changed entity, whose detached copy holds the version before, is never deleted.
func TestOldWriteBetweenCleanUpDetachAndItsTransactionIsNeverDeleted(t *testing.T) {
	t.Parallel()
	f := setup(t, false, true)
	keys, _ := f.planned(t, 20, 1)
	f.advanceTo(t, CleanUp)
	f.settled(t)
	ps := f.b.Proxy().PauseAt("clean-up transaction", testbed.DeletesFrom(f.src.Name()), 1)
	t.Cleanup(ps.Release)
	done := make(chan error, 1)
	go func() {
		_, err := f.m.RunAll(f.b.Ctx, KindCleanUp)
		done <- err
	}()
	if err := ps.Wait(f.b.Ctx); err != nil {
		t.Fatal(err)
	}
	victim := keys[5]
	if err := f.src.Upsert(context.Background(), &Employee{Department: victim[0], EmployeeID: victim[1], Seq: 77}, nil); err != nil {
		t.Fatal(err)
	}
	ps.Release()
	err := <-done
	t.Logf("clean-up: %v", err)
	got, gerr := f.src.Get(f.b.Ctx, victim[0], victim[1])
	if gerr != nil || got.Seq != 77 {
		t.Errorf("the old entity written during the held transaction = Seq %d, %v; want it kept at Seq 77", got.Seq, gerr)
	}
	if old, _ := f.rows(t, f.src.Name()); len(old) != 1 {
		t.Errorf("%d old entities left, want only the one written", len(old))
	}
}
