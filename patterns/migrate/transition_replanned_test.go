package migrate

import (
	"testing"

	"github.com/tablepatterns/tablepatterns/internal/faultproxy"
)

// TestLostEndingTransitionOvertakenByANewPlanIsDecidedByEvidence: a transition that
// ends a migration (Aborting -> Aborted) loses its response, and before its retry (held
// at the proxy) another migration of the same source table, under another name, is
// planned over the ended record, carrying the ids forward. The lost write landed and
// the record's history lists it: the transition must report success ("a transition
// whose answer was lost is decided by evidence: it landed, even when another process
// moved the record on before the re-read"), not the other migration's ErrInProgress.
func TestLostEndingTransitionOvertakenByANewPlanIsDecidedByEvidence(t *testing.T) {
	t.Parallel()
	f := setup(t, false, true)
	f.planned(t, 4, 2)
	if _, err := f.m.Abort(f.b.Ctx); err != nil {
		t.Fatal(err)
	}
	st, err := f.m.load(f.b.Ctx)
	if err != nil || st.Stage != Aborting {
		t.Fatalf("record = %s, %v; want aborting", st.Stage, err)
	}
	next, err := New(Spec[Employee, EmployeeV2]{Name: "next-migration", Service: f.b.Direct.Tables, Source: f.src, Target: f.tgt,
		Keys: hashKeys, Transform: upgrade, Control: f.m.spec.Control}, testOptions())
	if err != nil {
		t.Fatal(err)
	}
	p := f.b.Proxy()
	onControl := faultproxy.All(faultproxy.IsEntityWrite, onTable(f.m.control.Name()))
	p.AddRule(faultproxy.Rule{Name: "lost", Match: onControl, Times: 1, Action: faultproxy.DropAfterForward()})
	held := p.PauseAt("retry", onControl, 1)
	t.Cleanup(held.Release)
	done := make(chan error, 1)
	go func() {
		_, err := f.m.transition(f.b.Ctx, st, Aborted)
		done <- err
	}()
	if err := held.Wait(f.b.Ctx); err != nil {
		t.Fatal(err)
	}
	if err := next.Plan(f.b.Ctx); err != nil {
		t.Fatalf("planning the next migration over the aborted one: %v", err)
	}
	held.Release()
	if err := <-done; err != nil {
		t.Errorf("an ending transition that landed, then was overtaken by a new plan: %v, want success", err)
	}
	if p.Fired("lost") != 1 {
		t.Errorf("the response was lost %d times, want once", p.Fired("lost"))
	}
}
