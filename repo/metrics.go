package repo

import (
	"context"
	"errors"
	"net/http"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/tablepatterns/tablepatterns/internal/telemetry"
)

// The OpenTelemetry metrics of the clients built by NewClients and NewTokenClients, one
// data point per HTTP attempt (the Azure SDK's retries are off, so every attempt of
// package retry is one request): MetricRequests by service (table, queue, blob), method
// and status code (0 when no response came: the error.type attribute then says timeout,
// canceled or transport), and MetricThrottled, the attempts the service answered with 503
// (ServerBusy) or 429, by service: the throttling that package retry then backs off from.
const (
	MetricRequests  = "tablepatterns.storage.requests"
	MetricThrottled = "tablepatterns.storage.throttled"
)

// metricsPolicy counts every attempt. Its instruments come from the global meter provider,
// which delegates to a provider set later.
type metricsPolicy struct {
	service             attribute.KeyValue
	requests, throttled metric.Int64Counter
}

func newMetricsPolicy(service string) metricsPolicy {
	m := telemetry.Meter()
	p := metricsPolicy{service: attribute.String("tablepatterns.service", service)}
	// Creation only fails for invalid names and units, constants here; the instruments
	// are usable (no-op) either way.
	p.requests, _ = m.Int64Counter(MetricRequests, metric.WithUnit("{request}"),
		metric.WithDescription("HTTP attempts to the storage service, by service, method and status code."))
	p.throttled, _ = m.Int64Counter(MetricThrottled, metric.WithUnit("{request}"),
		metric.WithDescription("Attempts the storage service answered with 503 ServerBusy or 429."))
	return p
}

// Do implements policy.Policy.
func (p metricsPolicy) Do(req *policy.Request) (*http.Response, error) {
	resp, err := req.Next()
	ctx := req.Raw().Context()
	status := 0
	if resp != nil {
		status = resp.StatusCode
	} else {
		var re *azcore.ResponseError
		if errors.As(err, &re) {
			status = re.StatusCode
		}
	}
	attrs := []attribute.KeyValue{p.service, attribute.String("http.request.method", req.Raw().Method),
		attribute.Int("http.response.status_code", status)}
	if status == 0 && err != nil {
		attrs = append(attrs, attribute.String("error.type", errorType(ctx, err)))
	}
	p.requests.Add(ctx, 1, metric.WithAttributes(attrs...))
	if status == http.StatusServiceUnavailable || status == http.StatusTooManyRequests {
		p.throttled.Add(ctx, 1, metric.WithAttributes(p.service, attribute.Int("http.response.status_code", status)))
	}
	return resp, err
}

func errorType(ctx context.Context, err error) string {
	if t := telemetry.ErrorType(err); t != "error" {
		return t
	}
	if ctx.Err() != nil {
		return telemetry.ErrorType(ctx.Err())
	}
	return "transport"
}

// withMetrics returns a copy of o that also counts the attempts of service.
func withMetrics(o azcore.ClientOptions, service string) azcore.ClientOptions {
	o.PerRetryPolicies = append(append([]policy.Policy(nil), o.PerRetryPolicies...), newMetricsPolicy(service))
	return o
}
