package denormalize

import (
	"errors"
	"testing"

	"github.com/tablepatterns/tablepatterns/internal/faultproxy"
	"github.com/tablepatterns/tablepatterns/patterns/internal/testbed"
	"github.com/tablepatterns/tablepatterns/repo"
)

// Attacks DeleteTarget's "After a delete whose outcome repo cannot prove
// (errs.ErrOutcomeUnknown), the next attempt's read decides: ... an error wrapping
// errs.ErrOutcomeUnknown with it" (opts.ETag set) at the window between the lost response
// and that read: the transaction lands, its response is lost, repo's retry meets the
// missing target (ErrOutcomeUnknown), and another writer puts the target again before the
// next attempt reads it. That read shows a target with another ETag, which DeleteTarget
// answers with errs.ErrPreconditionFailed ("your ETag is stale; nothing deleted") although
// its delete landed.
func TestAttackDeleteTargetConditionalUnknownThenRecreated(t *testing.T) {
	t.Parallel()
	b := setup(t, true, false)
	r := b.relation(nil)
	other := b.direct(nil)
	jones := manager("Sales", "000152", "Jun", "Jones", "555-0001")
	b.insert(jones)
	d := dept("Sales", "dept!Sales", "Sales", jones)
	if err := r.PutTarget(b.Ctx, d); err != nil {
		t.Fatal(err)
	}
	want := d.ETag
	b.Proxies.Table.AddRule(faultproxy.Rule{Name: "lost delete response", Match: faultproxy.IsBatch, Times: 1, Action: faultproxy.DropAfterForward()})
	ps := b.Proxies.Table.PauseAt("next attempt's read", faultproxy.All(faultproxy.IsGetEntity, faultproxy.PathContains("RowKey='dept!Sales'")), 2)
	t.Cleanup(ps.Release)
	done := make(chan error, 1)
	go func() { done <- r.DeleteTarget(b.Ctx, Key{"Sales", "dept!Sales"}, &repo.DeleteOptions{ETag: want}) }()
	testbed.WaitHeld(t, ps)
	if _, err := b.depts.Get(b.Ctx, "Sales", "dept!Sales"); !errors.Is(err, repo.ErrNotFound) {
		t.Fatalf("the first delete did not land: %v", err)
	}
	if err := other.PutTarget(b.Ctx, dept("Sales", "dept!Sales", "Sales", jones)); err != nil {
		t.Fatal(err)
	}
	ps.Release()
	err := <-done
	if !errors.Is(err, repo.ErrOutcomeUnknown) {
		t.Fatalf("DeleteTarget whose delete landed = %v; want an error wrapping ErrOutcomeUnknown", err)
	}
}
