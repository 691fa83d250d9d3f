package tablearchive

import (
	"net/http"
	"testing"
	"time"

	"github.com/tablepatterns/tablepatterns/internal/faultproxy"
	"github.com/tablepatterns/tablepatterns/internal/testenv"
)

// The manifest upload lands but its response is lost: the retry meets 409, reads the
// stored manifest back, finds it is its own and goes on; the table is deleted after a
// complete generation, its data is kept, and a sweep (clock two hours ahead) removes
// nothing.
func TestAttackLostManifestResponseKeepsData(t *testing.T) {
	t.Parallel()
	ps := testenv.Proxies(t)
	b := setup(t, ps.ConnectionString)
	container := testenv.ContainerName(t)
	name := b.current.Name()
	fillTable(t, b, name, 30, "a")
	ps.Blob.AddRule(faultproxy.Rule{Name: "lost manifest response", Times: 1, Action: faultproxy.DropAfterForward(),
		Match: faultproxy.All(faultproxy.MethodIs(http.MethodPut), faultproxy.PathContains("manifest.json"))})
	rep, err := b.a.ArchiveTable(b.ctx, ArchiveTableJob{Table: name, Container: container, Sealed: true})
	if err != nil || rep.Outcome != OutcomeMoved {
		t.Fatalf("archive after a lost manifest response: %+v %v", rep.Outcome, err)
	}
	if ps.Blob.Fired("lost manifest response") != 1 {
		t.Fatal("the rule did not fire")
	}
	s := sweeper(t, ps, 2*time.Hour)
	if swept, err := s.SweepAbortedExports(b.ctx, container, name, time.Hour, false); err != nil || len(swept) != 0 {
		t.Fatalf("sweep after a complete export: %v %v", swept, err)
	}
	assertRestorable(t, b, container, name, 30)
}
