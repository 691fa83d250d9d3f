package tablearchive

import (
	"net/http"
	"testing"

	"github.com/tablepatterns/tablepatterns/internal/faultproxy"
	"github.com/tablepatterns/tablepatterns/internal/testenv"
)

// The responses of the plan's create, of the generation manifest's create, of the
// combine's last touch and of the table's delete are lost after the requests landed:
// every retry recognizes its own write, one generation, the table deleted, whole.
func TestAttackShardedLostResponses(t *testing.T) {
	t.Parallel()
	ps := testenv.Proxies(t)
	sb := setupShardsAt(t, ps.ConnectionString, 900)
	rules := map[string]faultproxy.Rule{
		"plan": {Times: 1, Action: faultproxy.DropAfterForward(),
			Match: faultproxy.All(faultproxy.MethodIs(http.MethodPut), faultproxy.PathContains("plan.json"))},
		"manifest": {Times: 1, Action: faultproxy.DropAfterForward(),
			Match: faultproxy.All(faultproxy.MethodIs(http.MethodPut), faultproxy.PathContains("manifest.json"))},
	}
	for name, r := range rules {
		r.Name = name
		ps.Blob.AddRule(r)
	}
	ps.Table.AddRule(faultproxy.Rule{Name: "delete", Times: 1, Action: faultproxy.DropAfterForward(),
		Match: faultproxy.MethodIs(http.MethodDelete)})
	cj, _ := sb.exportShards(t, sb.container, 3)
	sb.combined(t, cj)
	for name := range rules {
		if ps.Blob.Fired(name) != 1 {
			t.Errorf("rule %s did not fire", name)
		}
	}
	if ps.Table.Fired("delete") != 1 {
		t.Error("the table delete rule did not fire")
	}
	sb.assertArchivedOnce(t, cj.Generation)
}
