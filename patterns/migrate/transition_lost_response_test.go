package migrate

import (
	"errors"
	"testing"

	"github.com/tablepatterns/tablepatterns/errs"
	"github.com/tablepatterns/tablepatterns/internal/faultproxy"
)

// TestLostTransitionResponseOvertakenByAnotherIsDecidedByEvidence: a transition's
// response is lost, and before its retry (held at the proxy) another process moves the
// record on (an operator's Abort). When the lost write had landed, the transition
// reports success, though the record shows the other's stage now; when it never left
// the proxy, it reports errs.ErrPreconditionFailed. The record's own history decides,
// not the stage it shows.
func TestLostTransitionResponseOvertakenByAnotherIsDecidedByEvidence(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		lose    faultproxy.Action
		applied bool
	}{
		{"applied", faultproxy.DropAfterForward(), true},
		{"never sent", faultproxy.DropBeforeForward(), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := setup(t, false, true)
			f.planned(t, 4, 2)
			f.advanceTo(t, DualWrite)
			other := f.direct(t)
			st, err := f.m.load(f.b.Ctx)
			if err != nil {
				t.Fatal(err)
			}
			p := f.b.Proxy()
			onControl := faultproxy.All(faultproxy.IsEntityWrite, onTable(f.m.control.Name()))
			p.AddRule(faultproxy.Rule{Name: "lost", Match: onControl, Times: 1, Action: tc.lose})
			held := p.PauseAt("retry", onControl, 1)
			t.Cleanup(held.Release)
			done := make(chan error, 1)
			go func() {
				_, err := f.m.transition(f.b.Ctx, st, Backfill)
				done <- err
			}()
			if err := held.Wait(f.b.Ctx); err != nil {
				t.Fatal(err)
			}
			moved, err := other.Abort(f.b.Ctx)
			if err != nil {
				t.Fatal(err)
			}
			held.Release()
			err = <-done
			switch want := map[bool]Stage{true: Backfill, false: DualWrite}[tc.applied]; {
			case moved.Previous != want:
				t.Fatalf("the other process aborted from %s, want from %s: the lost write did not do what the case needs", moved.Previous, want)
			case tc.applied && err != nil:
				t.Errorf("a transition that applied, then was overtaken: %v, want success", err)
			case !tc.applied && !errors.Is(err, errs.ErrPreconditionFailed):
				t.Errorf("a transition that never applied: %v, want ErrPreconditionFailed", err)
			}
			if p.Fired("lost") != 1 {
				t.Errorf("the response was lost %d times, want once", p.Fired("lost"))
			}
		})
	}
}

// direct is another process's view of f's migration, on clients that bypass the proxy.
func (f *fix) direct(t testing.TB) *Migration[Employee, EmployeeV2] {
	t.Helper()
	m, err := New(Spec[Employee, EmployeeV2]{Name: f.m.spec.Name, Service: f.b.Direct.Tables, Source: f.src, Target: f.tgt,
		Keys: hashKeys, Transform: upgrade, Control: f.m.spec.Control}, testOptions())
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestForgedTransitionIDsRefused: the record's list of transition ids is data anyone
// with access to the control table could have written; one that is not a list of ids
// is refused (ErrInvalidInput), never used to decide a transition.
func TestForgedTransitionIDsRefused(t *testing.T) {
	t.Parallel()
	f := setup(t, false, false)
	f.planned(t, 2, 1)
	r, err := f.m.control.Get(f.b.Ctx, f.m.recordKey(), recordRowKey)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Transitions) != 16 {
		t.Fatalf("Plan wrote Transitions %q, want one id", r.Transitions)
	}
	r.Transitions += ",0123456789abcdef,../../x"
	if err := f.m.control.Update(f.b.Ctx, &r, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := f.m.Advance(f.b.Ctx); !isInvalid(err) {
		t.Errorf("Advance over forged transition ids = %v, want ErrInvalidInput", err)
	}
}
