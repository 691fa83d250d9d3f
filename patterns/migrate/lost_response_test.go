package migrate

import (
	"net/http"
	"strings"
	"testing"

	"github.com/tablepatterns/tablepatterns/internal/faultproxy"
)

// onTable matches the requests addressed to one table's entities.
func onTable(name string) func(*http.Request) bool {
	return func(r *http.Request) bool {
		seg := r.URL.Path[strings.LastIndex(r.URL.Path, "/")+1:]
		return seg == name || strings.HasPrefix(seg, name+"(")
	}
}

// onStateRecord matches the writes of a state record (its updates address it by key),
// not those of the progress rows beside it.
func onStateRecord(r *http.Request) bool {
	return strings.HasSuffix(r.URL.Path, ",RowKey='"+recordRowKey+"')")
}

// TestLostResponsesOnCopiesAndCleanUpDeletesLoseNothing takes a migration through every
// stage while a writer updates and deletes, and the fault proxy loses the response of a
// quarter of the copy writes and deletes (after the service applied them), of the old
// layout's deletes (clean-up's among them) and of the first state transitions: every
// step re-reads and decides, and the end is exactly the latest version of each live
// entity in the new layout, none of the deleted, and an empty old layout.
func TestLostResponsesOnCopiesAndCleanUpDeletesLoseNothing(t *testing.T) {
	t.Parallel()
	f := setup(t, false, true)
	keys, md := f.planned(t, 80, 4)
	p := f.b.Proxy()
	p.SetSeed(3)
	lost := faultproxy.DropAfterForward()
	p.AddRule(faultproxy.Rule{Name: "copy", Match: faultproxy.All(faultproxy.IsEntityWrite, onTable(f.tgt.Name())), Probability: 0.25, Action: lost})
	p.AddRule(faultproxy.Rule{Name: "old-delete", Match: faultproxy.All(faultproxy.MethodIs(http.MethodDelete), onTable(f.src.Name())), Probability: 0.3, Action: lost})
	p.AddRule(faultproxy.Rule{Name: "transition", Match: faultproxy.All(faultproxy.IsEntityWrite, onTable(f.m.control.Name()), onStateRecord), Times: 3, Action: lost})
	stop := make(chan struct{})
	w := &writer{f: f, md: md, keys: keys, deletes: true}
	ww := w.run(f.b.Ctx, t, 3, stop)
	f.advanceTo(t, Done)
	close(stop)
	ww.Wait()
	f.mustHoldExactly(t, md)
	for _, r := range []string{"copy", "old-delete", "transition"} {
		if p.Fired(r) == 0 {
			t.Errorf("rule %s never fired: the attack did not happen", r)
		}
	}
	t.Logf("lost responses: copy %d, old delete %d, transition %d; writes %d", p.Fired("copy"), p.Fired("old-delete"), p.Fired("transition"), w.writes.Load())
}
