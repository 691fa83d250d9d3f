package migrate

import (
	"net/http"
	"testing"

	"github.com/tablepatterns/tablepatterns/internal/faultproxy"
)

// TestLostResponsesOnSchemaRewritesDowngradesAndTransitionsLoseNothing takes a schema
// migration to Done, and another to an abort at Verify, while a writer updates and
// deletes and the fault proxy loses the response of a quarter of the table's entity
// replaces (the rewrite's and the downgrade's among them, after the service applied
// them) and of the first state transitions: each is decided by a re-read, and the end is
// exactly the latest value of each live entity at the latest version (Done) or the
// version the migration started from (Aborted), none of the deleted.
func TestLostResponsesOnSchemaRewritesDowngradesAndTransitionsLoseNothing(t *testing.T) {
	t.Parallel()
	for _, end := range []Stage{Done, Aborted} {
		t.Run(string(end), func(t *testing.T) {
			t.Parallel()
			f := setupStaged(t, true, 30)
			keys, md := f.planned(t, 80, 4)
			p := f.b.Proxy()
			p.SetSeed(7)
			lost := faultproxy.DropAfterForward()
			p.AddRule(faultproxy.Rule{Name: "replace", Match: faultproxy.All(faultproxy.MethodIs(http.MethodPut), faultproxy.IsEntityWrite, onTable(f.b.Table)), Probability: 0.25, Action: lost})
			p.AddRule(faultproxy.Rule{Name: "transition", Match: faultproxy.All(faultproxy.IsEntityWrite, onTable(f.control), onStateRecord), Times: 3, Action: lost})
			stop := make(chan struct{})
			w := &stagedWriter{s: f.s, md: md, keys: keys, deletes: true}
			ww := w.run(f.b.Ctx, t, 2, stop)
			version := 2
			if end == Aborted {
				f.advanceTo(t, Verify)
				if _, err := f.s.Abort(f.b.Ctx); err != nil {
					t.Fatal(err)
				}
				version = 1
			}
			f.advanceTo(t, end)
			close(stop)
			ww.Wait()
			f.mustHoldAt(t, md, version)
			for _, r := range []string{"replace", "transition"} {
				if p.Fired(r) == 0 {
					t.Errorf("rule %s never fired: the attack did not happen", r)
				}
			}
		})
	}
}
