package repo_test

import (
	"net/http"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"

	"github.com/tablepatterns/tablepatterns/internal/faultproxy"
	"github.com/tablepatterns/tablepatterns/internal/telemetry/telemetrytest"
	"github.com/tablepatterns/tablepatterns/repo"
	"github.com/tablepatterns/tablepatterns/retry"
)

// Every attempt is counted once, by status, and the throttling answers (503 ServerBusy)
// that package retry backs off from are counted apart. Not parallel: the counters are
// process-wide, and parallel tests only start after the serial ones.
func TestRequestMetricsCountAttemptsAndThrottling(t *testing.T) {
	telemetrytest.Install()
	b := setup(t, true)
	emps, err := repo.New[Employee](b.clients.Tables, b.name, &repo.Options{
		Retry: retry.Policy{Delay: 2 * time.Millisecond, MinDelay: time.Millisecond, MaxDelay: 20 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	table := attribute.String("tablepatterns.service", "table")
	value := func(name string, kv ...attribute.KeyValue) int64 {
		v, _ := telemetrytest.Int64Sum(telemetrytest.Metrics(t), name, kv...)
		return v
	}
	busy := attribute.Int("http.response.status_code", http.StatusServiceUnavailable)
	created := attribute.Int("http.response.status_code", http.StatusCreated)
	busy0, thr0, ok0 := value(repo.MetricRequests, table, busy), value(repo.MetricThrottled, table), value(repo.MetricRequests, table, created)

	b.proxy.AddRule(faultproxy.Rule{Name: "busy", Times: 2, Match: faultproxy.MethodIs(http.MethodPost), Action: faultproxy.Respond(http.StatusServiceUnavailable, "ServerBusy")})
	if err := emps.Insert(b.ctx, employee("Sales", "1")); err != nil {
		t.Fatal(err)
	}
	if d := value(repo.MetricRequests, table, busy) - busy0; d != 2 {
		t.Errorf("503 attempts counted: %d, want 2", d)
	}
	if d := value(repo.MetricThrottled, table) - thr0; d != 2 {
		t.Errorf("throttled attempts counted: %d, want 2", d)
	}
	if d := value(repo.MetricRequests, table, created) - ok0; d != 1 {
		t.Errorf("successful insert attempts counted: %d, want 1", d)
	}
}
