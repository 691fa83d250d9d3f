package denormalize

import (
	"errors"
	"net/http"
	"testing"

	"github.com/tablepatterns/tablepatterns/internal/faultproxy"
	"github.com/tablepatterns/tablepatterns/patterns/internal/testbed"
	"github.com/tablepatterns/tablepatterns/repo"
)

// lostThenOther runs call, whose first write (matched by write) lands with its response
// lost, and runs other between that write and the pattern's next read of the entity
// (RowKey rk): the window in which another writer acts before the re-read. It returns
// call's answer.
func (b *bed) lostThenOther(t *testing.T, write func(*http.Request) bool, rk string, call func() error, other func()) error {
	t.Helper()
	b.Proxies.Table.AddRule(faultproxy.Rule{Name: "lost", Match: write, Times: 1, Action: faultproxy.DropAfterForward()})
	ps := b.Proxies.Table.PauseAt("the re-read", faultproxy.All(faultproxy.IsGetEntity, faultproxy.PathContains("RowKey='"+rk+"'")), 2)
	t.Cleanup(ps.Release)
	done := make(chan error, 1)
	go func() { done <- call() }()
	testbed.WaitHeld(t, ps)
	other()
	ps.Release()
	err := <-done
	if b.Proxies.Table.Fired("lost") != 1 {
		t.Fatal("the lost response did not fire")
	}
	return err
}

// modes are the two write paths of a relation, with the request that writes a target.
var modes = []struct {
	name   string
	across bool
}{{"in partition", false}, {"across partitions", true}}

func (b *bed) pair(across bool) (r, other *Relation[Employee, Department]) {
	if !across {
		return b.relation(nil), b.direct(nil)
	}
	q := b.queue()
	return b.across(q, nil), b.directAcross(q, nil)
}

// writeOf matches the request that writes entity rk in the given mode: the transaction
// in partition, the single entity write across partitions (an insert when method is POST).
func writeOf(across bool, method, rk string) func(*http.Request) bool {
	switch {
	case !across:
		return faultproxy.IsBatch
	case method == "POST":
		return faultproxy.IsInsertEntity
	}
	return faultproxy.All(faultproxy.IsEntityWrite, faultproxy.MethodIs(method), faultproxy.PathContains("RowKey='"+rk+"'"))
}

// A DeleteTarget without an ETag whose delete landed with its response lost, then another
// writer's PutTarget of the same target: the re-read finds a target, which proves nothing
// (it is the other writer's), so DeleteTarget must not delete it; the answer is
// ErrOutcomeUnknown.
func TestDeleteTargetNeverDeletesATargetPutAgainByAnotherWriter(t *testing.T) {
	t.Parallel()
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, true, false)
			r, other := b.pair(m.across)
			jones := manager("Sales", "000152", "Jun", "Jones", "555-0001")
			b.insert(jones)
			if err := r.PutTarget(b.Ctx, dept("Sales", "dept!Sales", "Sales", jones)); err != nil {
				t.Fatal(err)
			}
			err := b.lostThenOther(t, writeOf(m.across, "DELETE", "dept!Sales"), "dept!Sales",
				func() error { return r.DeleteTarget(b.Ctx, Key{"Sales", "dept!Sales"}, nil) },
				func() {
					if err := other.PutTarget(b.Ctx, dept("Sales", "dept!Sales", "Sales", jones)); err != nil {
						t.Errorf("the other writer's put after the landed delete: %v", err)
					}
				})
			if !errors.Is(err, repo.ErrOutcomeUnknown) {
				t.Errorf("DeleteTarget: %v, want ErrOutcomeUnknown", err)
			}
			if _, err := b.depts.Get(b.Ctx, "Sales", "dept!Sales"); err != nil {
				t.Errorf("the other writer's target: %v, want it stored", err)
			}
		})
	}
}

// A PutTarget of a new target whose insert landed with its response lost, then another
// writer's DeleteTarget: the re-read finds no target, which proves nothing, so PutTarget
// must not insert it again; the answer is ErrOutcomeUnknown.
func TestPutTargetNeverReinsertsATargetDeletedByAnotherWriter(t *testing.T) {
	t.Parallel()
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, true, false)
			r, other := b.pair(m.across)
			jones := manager("Sales", "000152", "Jun", "Jones", "555-0001")
			b.insert(jones)
			err := b.lostThenOther(t, writeOf(m.across, "POST", "dept!Sales"), "dept!Sales",
				func() error { return r.PutTarget(b.Ctx, dept("Sales", "dept!Sales", "Sales", jones)) },
				func() {
					if err := other.DeleteTarget(b.Ctx, Key{"Sales", "dept!Sales"}, nil); err != nil {
						t.Errorf("the other writer's delete after the landed put: %v", err)
					}
				})
			if !errors.Is(err, repo.ErrOutcomeUnknown) {
				t.Errorf("PutTarget: %v, want ErrOutcomeUnknown", err)
			}
			if _, err := b.depts.Get(b.Ctx, "Sales", "dept!Sales"); !errors.Is(err, repo.ErrNotFound) {
				t.Errorf("the target the other writer deleted: %v, want ErrNotFound", err)
			}
		})
	}
}

// An UpdateSource without an ETag whose write landed with its response lost, then another
// writer's update of the source: the re-read finds another version, which proves nothing,
// so UpdateSource must not write over it; the answer is ErrOutcomeUnknown.
func TestUpdateSourceNeverOverwritesAnotherWritersUpdate(t *testing.T) {
	t.Parallel()
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, true, false)
			r, other := b.pair(m.across)
			jones := manager("Sales", "000152", "Jun", "Jones", "555-0001")
			b.insert(jones)
			if err := r.PutTarget(b.Ctx, dept("Sales", "dept!Sales", "Sales", jones)); err != nil {
				t.Fatal(err)
			}
			err := b.lostThenOther(t, writeOf(m.across, "PUT", "000152"), "000152",
				func() error { return r.UpdateSource(b.Ctx, manager("Sales", "000152", "Jun", "Jones", "555-0002")) },
				func() {
					if err := other.UpdateSource(b.Ctx, manager("Sales", "000152", "Jun", "Jones", "555-0003")); err != nil {
						t.Errorf("the other writer's update after the landed one: %v", err)
					}
				})
			if !errors.Is(err, repo.ErrOutcomeUnknown) {
				t.Errorf("UpdateSource: %v, want ErrOutcomeUnknown", err)
			}
			if got, err := b.emps.Get(b.Ctx, "Sales", "000152"); err != nil || got.Phone != "555-0003" {
				t.Errorf("the source: %+v, %v; want the other writer's 555-0003", got, err)
			}
		})
	}
}
