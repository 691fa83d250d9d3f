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
			r.seams.step = func(ctx context.Context, s string) error {
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

// Holds DeleteTarget's "After a delete whose outcome repo cannot prove
// (errs.ErrOutcomeUnknown), the next attempt's read decides: ... an error wrapping
// errs.ErrOutcomeUnknown with it" (opts.ETag set) at the window between the lost response
// and that read: the transaction lands, its response is lost, repo's retry meets the
// missing target (ErrOutcomeUnknown), and another writer puts the target again before the
// next attempt reads it. That read shows a target with another ETag; the answer must be
// the unknown outcome, never errs.ErrPreconditionFailed ("your ETag is stale; nothing
// deleted"), since the delete landed.
func TestDeleteTargetConditionalUnknownThenPutAgainIsUnknown(t *testing.T) {
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

// The shape of TestDeleteTargetConditionalUnknownThenPutAgainIsUnknown on UpdateSource
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
