package heterogeneous_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/tablepatterns/tablepatterns/internal/faultproxy"
	"github.com/tablepatterns/tablepatterns/patterns/heterogeneous"
	"github.com/tablepatterns/tablepatterns/repo"
)

// loseNextTransaction drops the response of b's next transaction after the service applied
// it, and runs other, once, when the pattern learns that its outcome is unknown: the other
// writer acts between this call's landed transaction and the pattern's re-read.
func (b *bed) loseNextTransaction(t *testing.T, other func() error) {
	t.Helper()
	b.Proxy().AddRule(faultproxy.Rule{Name: "lost", Match: faultproxy.IsBatch, Times: 1, Action: faultproxy.DropAfterForward()})
	done := false
	heterogeneous.SetAfterSubmit(b.depts, func(err error) error {
		if !done && errors.Is(err, repo.ErrOutcomeUnknown) {
			done = true
			if oerr := other(); oerr != nil {
				t.Errorf("the other writer: %v", oerr)
			}
		}
		return err
	})
	t.Cleanup(func() {
		if !done {
			t.Error("the transaction's outcome was never unknown: the test proves nothing")
		}
	})
}

// An Add whose transaction landed with its response lost, then another writer's Delete of
// that child: a re-read that finds no child proves nothing (the other writer removed it),
// so Add must not insert it again; the answer is ErrOutcomeUnknown.
func TestOneToManyAddNeverReinsertsAChildRemovedByAnotherWriter(t *testing.T) {
	t.Parallel()
	b := setup(t, layouts[0])
	b.dept(t, "Sales")
	other := b.competitor(t)
	e := b.emp("Sales", 1)
	b.loseNextTransaction(t, func() error { return other.Delete(b.ctx, "Sales", e.RowKey, nil) })
	err := b.depts.Add(b.ctx, b.emp("Sales", 1))
	if !errors.Is(err, repo.ErrOutcomeUnknown) {
		t.Errorf("add: %v, want ErrOutcomeUnknown", err)
	}
	b.checkCount(t, "Sales", 0) // the other writer's acknowledged Delete stands
}

// A Delete whose transaction landed with its response lost, then another writer's Add of
// the same child: a re-read that finds the child proves nothing (it is the other writer's),
// so Delete must not delete it; the answer is ErrOutcomeUnknown.
func TestOneToManyDeleteNeverDeletesAChildReaddedByAnotherWriter(t *testing.T) {
	t.Parallel()
	b := setup(t, layouts[0])
	b.dept(t, "Sales")
	other := b.competitor(t)
	if err := b.depts.Add(b.ctx, b.emp("Sales", 1)); err != nil {
		t.Fatal(err)
	}
	b.loseNextTransaction(t, func() error { return other.Add(b.ctx, b.emp("Sales", 1)) })
	err := b.depts.Delete(b.ctx, "Sales", b.emp("Sales", 1).RowKey, nil)
	if !errors.Is(err, repo.ErrOutcomeUnknown) {
		t.Errorf("remove: %v, want ErrOutcomeUnknown", err)
	}
	b.checkCount(t, "Sales", 1) // the other writer's acknowledged Add stands
}

// A transaction that never reached the service, then a retry that meets a conflict
// (ErrOutcomeUnknown): the parent still at the version read proves nothing landed, and
// Add starts over and succeeds.
func TestOneToManyAddStartsOverWhenTheParentIsUnchanged(t *testing.T) {
	t.Parallel()
	b := setup(t, layouts[0])
	b.dept(t, "Sales")
	b.Proxy().AddRule(faultproxy.Rule{Name: "refused", Match: faultproxy.IsBatch, Times: 1, Action: faultproxy.Respond(412, "UpdateConditionNotSatisfied")})
	first := true
	heterogeneous.SetAfterSubmit(b.depts, func(err error) error {
		if first {
			first = false
			return &repo.OutcomeUnknownError{Op: "transaction", Err: err}
		}
		return err
	})
	if err := b.depts.Add(b.ctx, b.emp("Sales", 1)); err != nil {
		t.Fatalf("add: %v, want nil (nothing of the first transaction landed)", err)
	}
	b.checkCount(t, "Sales", 1)
}

// A transaction whose outcome repo cannot prove (ErrOutcomeUnknown: a lost response, then
// a retry that met a conflict) is re-decided from a fresh read, since the transaction is
// atomic: what did not land (the parent still at the version read) starts over; what did
// is reported as unknown (never ErrAlreadyExists or ErrNotFound, "nothing written", and
// never success: a gone child may be another writer's Delete). The count stays exact in
// every case.
func TestOneToManyOutcomeUnknownIsRedecided(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		op     string
		landed bool
	}{{"add", true}, {"add", false}, {"remove", true}, {"remove", false}} {
		t.Run(fmt.Sprintf("%s landed=%v", c.op, c.landed), func(t *testing.T) {
			t.Parallel()
			b := setup(t, layouts[0])
			b.dept(t, "Sales")
			e := b.emp("Sales", 1)
			if c.op == "remove" {
				if err := b.depts.Add(b.ctx, e); err != nil {
					t.Fatal(err)
				}
			}
			if !c.landed {
				b.Proxy().AddRule(faultproxy.Rule{Name: "refused", Match: faultproxy.IsBatch, Times: 1, Action: faultproxy.Respond(412, "UpdateConditionNotSatisfied")})
			}
			first := true
			heterogeneous.SetAfterSubmit(b.depts, func(err error) error {
				if !first {
					return err
				}
				first = false
				if c.landed != (err == nil) {
					t.Errorf("the first transaction landed %v, want %v: %v", err == nil, c.landed, err)
				}
				return fmt.Errorf("test: retried transaction: %w (%w)", repo.ErrOutcomeUnknown,
					&repo.Error{Op: "transaction", StatusCode: 412, Code: "UpdateConditionNotSatisfied", Kind: repo.ErrPreconditionFailed})
			})
			var err error
			want := 1
			if c.op == "add" {
				err = b.depts.Add(b.ctx, e)
			} else {
				err = b.depts.Delete(b.ctx, "Sales", e.RowKey, nil)
				want = 0
			}
			if c.landed {
				if !errors.Is(err, repo.ErrOutcomeUnknown) {
					t.Fatalf("%s whose transaction landed: %v, want ErrOutcomeUnknown", c.op, err)
				}
			} else if err != nil {
				t.Fatalf("%s: %v, want nil", c.op, err)
			}
			b.checkCount(t, "Sales", want)
		})
	}
}
