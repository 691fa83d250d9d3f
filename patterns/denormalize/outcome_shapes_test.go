package denormalize

import (
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/tablepatterns/tablepatterns/internal/faultproxy"
	"github.com/tablepatterns/tablepatterns/patterns/internal/testbed"
	"github.com/tablepatterns/tablepatterns/queueworker"
	"github.com/tablepatterns/tablepatterns/repo"
)

// The shape of TestAttackDeleteTargetConditionalUnknownThenRecreated on UpdateSource
// without an ETag: the write lands, its response is lost, repo's retry meets the changed
// source (ErrOutcomeUnknown), and another writer deletes the source before the next
// attempt reads it. "Not found" would say "nothing updated" of an update that landed: the
// answer must be the unknown outcome. Both modes: one transaction (InPartition) and a
// single update after the message (AcrossPartitions).
func TestUpdateSourceUnknownThenDeletedIsUnknown(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name  string
		write func(*http.Request) bool
	}{
		{"in partition", faultproxy.IsBatch},
		{"across partitions", faultproxy.All(faultproxy.IsEntityWrite, faultproxy.PathContains("RowKey='000152'"))},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, true, false)
			var r *Relation[Employee, Department]
			if c.name == "in partition" {
				r = b.relation(nil)
			} else {
				r = b.across(b.queue(), nil)
			}
			emps, _ := b.directTables()
			jones := manager("Sales", "000152", "Jun", "Jones", "555-0001")
			b.insert(jones)
			if err := r.PutTarget(b.Ctx, dept("Sales", "dept!Sales", "Sales", jones)); err != nil {
				t.Fatal(err)
			}
			b.Proxies.Table.AddRule(faultproxy.Rule{Name: "lost update response", Match: c.write, Times: 1, Action: faultproxy.DropAfterForward()})
			ps := b.Proxies.Table.PauseAt("next attempt's read", faultproxy.All(faultproxy.IsGetEntity, faultproxy.PathContains("RowKey='000152'")), 2)
			t.Cleanup(ps.Release)
			s := manager("Sales", "000152", "Jun", "Jones", "555-0002") // no ETag: last writer wins
			done := make(chan error, 1)
			go func() { done <- r.UpdateSource(b.Ctx, s) }()
			testbed.WaitHeld(t, ps)
			got, err := emps.Get(b.Ctx, "Sales", "000152")
			if err != nil || got.Phone != "555-0002" {
				t.Fatalf("the first update did not land: %+v, %v", got, err)
			}
			if err := emps.Delete(b.Ctx, "Sales", "000152", nil); err != nil {
				t.Fatal(err)
			}
			ps.Release()
			if err := <-done; !errors.Is(err, repo.ErrOutcomeUnknown) || errors.Is(err, repo.ErrNotFound) {
				t.Fatalf("UpdateSource whose write landed, then deleted = %v; want ErrOutcomeUnknown, not ErrNotFound", err)
			}
		})
	}
}

// item 7 of the review on the denormalize handlers: a forged future EnqueuedAt must not
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
	r.now = func() time.Time { return stored.Add(time.Second) }
	var snooze *queueworker.SnoozeError
	if err := r.HandleSource(b.Ctx, src); !errors.As(err, &snooze) {
		t.Fatalf("HandleSource of a message stored 1 s ago = %v, want a snooze", err)
	}
	if err := r.HandleTarget(b.Ctx, tgt); !errors.As(err, &snooze) {
		t.Fatalf("HandleTarget of a message stored 1 s ago = %v, want a snooze", err)
	}
	// Settle after the queue stored it: done, whatever the envelope claims.
	r.now = func() time.Time { return stored.Add(r.settle.Settle()) }
	if err := r.HandleSource(b.Ctx, src); err != nil {
		t.Fatalf("HandleSource of a message stored Settle ago with a forged EnqueuedAt = %v, want nil", err)
	}
	if err := r.HandleTarget(b.Ctx, tgt); err != nil {
		t.Fatalf("HandleTarget of a message stored Settle ago with a forged EnqueuedAt = %v, want nil", err)
	}
}

// The shape of the review's item 4 (a forged row blocks a read) on the links: a link row
// in the source's partition whose target key no entity can have must not make UpdateSource
// (one transaction) or RefreshSource (the worker) fail; the real copy is refreshed.
func TestForgedLinkDoesNotBlockTheSource(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"in partition", "across partitions"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			b := setup(t, false, false)
			q := b.queue()
			r := b.relation(nil)
			if mode != "in partition" {
				r = b.across(q, nil)
			}
			jones := manager("Sales", "000152", "Jun", "Jones", "555-0001")
			b.insert(jones)
			if err := r.PutTarget(b.Ctx, dept("Sales", "dept!Sales", "Sales", jones)); err != nil {
				t.Fatal(err)
			}
			if mode != "in partition" {
				b.drain(q, r)
			}
			_, links, err := r.readLinks(b.Ctx, Key{"Sales", "000152"})
			if err != nil || len(links) != 1 {
				t.Fatalf("links %+v, %v", links, err)
			}
			forged := links[0]
			forged.RowKey += "x"
			forged.TargetRowKey, forged.ETag = "a/b?", ""
			if err := r.links.Upsert(b.Ctx, &forged, nil); err != nil {
				t.Fatal(err)
			}
			s, err := b.emps.Get(b.Ctx, "Sales", "000152")
			if err != nil {
				t.Fatal(err)
			}
			s.Phone = "555-0009"
			if err := r.UpdateSource(b.Ctx, &s); err != nil {
				t.Fatalf("UpdateSource with a forged link: %v", err)
			}
			if mode != "in partition" {
				if st := b.drain(q, r); st.Poisoned != 0 {
					t.Fatalf("worker stats %+v: the refresh failed", st)
				}
			}
			if d := b.checkCopy(r, Key{"Sales", "dept!Sales"}); d.ManagerPhone != "555-0009" {
				t.Fatalf("copy %+v not refreshed", d)
			}
		})
	}
}
