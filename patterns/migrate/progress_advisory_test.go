package migrate

import (
	"net/http"
	"strings"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/tablepatterns/tablepatterns/internal/faultproxy"
)

// TestAProgressWriteTheServiceRefusesIsTriedOnceAndNeverFailsThePage has the control
// table refuse every request for a progress row (throttled, then failing) while a
// backfill runs: each page's progress write is sent once, logged and given up, not
// retried on the migration's policy (a worker's batch policy waits minutes on each), and
// the backfill copies every entity and returns no error.
func TestAProgressWriteTheServiceRefusesIsTriedOnceAndNeverFailsThePage(t *testing.T) {
	t.Parallel()
	for _, refusal := range []struct {
		status int
		code   string
	}{{http.StatusServiceUnavailable, "ServerBusy"}, {http.StatusInternalServerError, "InternalError"}, {http.StatusForbidden, "AuthorizationFailure"}} {
		t.Run(refusal.code, func(t *testing.T) {
			t.Parallel()
			f := setup(t, false, true)
			const n = 30
			f.atBackfill(t, n, 2, 10)
			core, logs := observer.New(zap.WarnLevel)
			f.m.opts.Logger = zap.New(core)
			control := onTable(f.m.control.Name())
			p := f.b.Proxy()
			p.AddRule(faultproxy.Rule{Name: "progress", Action: faultproxy.Respond(refusal.status, refusal.code), Match: func(r *http.Request) bool {
				return control(r) && strings.Contains(r.URL.Path, "RowKey='progress")
			}})
			rep, err := f.m.RunAll(f.b.Ctx, KindBackfill)
			if err != nil || rep.Scanned != n || rep.Copied != n {
				t.Fatalf("the backfill under refused progress writes: %+v, %v: want %d copied", rep, err, n)
			}
			warned := logs.FilterMessageSnippet("progress not recorded").Len()
			if warned == 0 || p.Fired("progress") != warned {
				t.Errorf("%d requests for progress rows refused over %d pages whose progress was not recorded: want one each", p.Fired("progress"), warned)
			}
		})
	}
}
