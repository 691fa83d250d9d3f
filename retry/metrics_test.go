package retry

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric/noop"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"reflect"
	"strings"

	"github.com/tablepatterns/tablepatterns/internal/errs"
	"github.com/tablepatterns/tablepatterns/internal/telemetry"
	"github.com/tablepatterns/tablepatterns/internal/telemetry/telemetrytest"
	"go.opentelemetry.io/otel/metric"
)

// manual returns a meter provider of the OpenTelemetry SDK read by hand.
func manual(t *testing.T) (*sdkmetric.MeterProvider, *sdkmetric.ManualReader) {
	t.Helper()
	r := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(r))
	t.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
	return mp, r
}

func collect(t *testing.T, r *sdkmetric.ManualReader) metricdata.ResourceMetrics {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := r.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	return rm
}

// find returns the metric named name of the tablepatterns scope, failing t if absent.
func find(t *testing.T, rm metricdata.ResourceMetrics, name string) metricdata.Metrics {
	t.Helper()
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name == name {
				if sm.Scope.Name != telemetry.Scope {
					t.Errorf("%s: scope %q, want %q", name, sm.Scope.Name, telemetry.Scope)
				}
				return m
			}
		}
	}
	t.Fatalf("no metric %s in %+v", name, rm.ScopeMetrics)
	return metricdata.Metrics{}
}

// counts maps each data point of an int64 counter to its value, keyed by its attributes.
func counts(t *testing.T, m metricdata.Metrics) map[string]int64 {
	t.Helper()
	sum, ok := m.Data.(metricdata.Sum[int64])
	if !ok || !sum.IsMonotonic {
		t.Fatalf("%s is %T, want a monotonic int64 sum", m.Name, m.Data)
	}
	out := map[string]int64{}
	for _, dp := range sum.DataPoints {
		out[key(dp.Attributes)] = dp.Value
	}
	return out
}

// key is an attribute set as a comparable, readable string.
func key(s attribute.Set) string { return s.Encoded(attribute.DefaultEncoder()) }

func set(kv ...attribute.KeyValue) string { return key(attribute.NewSet(kv...)) }

func attemptAttrs(op, reason, outcome string) string {
	return set(telemetry.KeyOperation.String(op), keyReason.String(reason), telemetry.KeyOutcome.String(outcome))
}

// Two throttled attempts and a success: three attempts by reason and outcome, two waits
// in seconds by reason, under the documented names, units and attributes.
func TestMetricsDoAttemptsAndWaitsByReason(t *testing.T) {
	t.Parallel()
	mp, r := manual(t)
	p := fastPolicy(5, nil)
	p.MeterProvider = mp
	busy := responseError(t, http.StatusServiceUnavailable, "ServerBusy")
	err := Do(context.Background(), p, testOp, func(_ context.Context, attempt int) error {
		if attempt <= 2 {
			return busy
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	rm := collect(t, r)
	attempts := find(t, rm, MetricAttempts)
	if attempts.Unit != "{attempt}" || attempts.Description == "" {
		t.Errorf("%s: unit %q, description %q", MetricAttempts, attempts.Unit, attempts.Description)
	}
	got := counts(t, attempts)
	want := map[string]int64{
		attemptAttrs("insert", ReasonThrottled, outcomeRetried): 2,
		attemptAttrs("insert", ReasonNone, outcomeSuccess):      1,
	}
	if len(got) != len(want) {
		t.Errorf("attempts: %d series, want %d: %v", len(got), len(want), got)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("attempts %v = %d, want %d", k, got[k], v)
		}
	}
	wait := find(t, rm, MetricWait)
	h, ok := wait.Data.(metricdata.Histogram[float64])
	if wait.Unit != "s" || !ok || len(h.DataPoints) != 1 {
		t.Fatalf("%s: unit %q, data %#v", MetricWait, wait.Unit, wait.Data)
	}
	dp := h.DataPoints[0]
	if key(dp.Attributes) != set(telemetry.KeyOperation.String("insert"), keyReason.String(ReasonThrottled)) {
		t.Errorf("wait attributes %v", dp.Attributes.ToSlice())
	}
	// fastPolicy waits 1 to 3 ms.
	if dp.Count != 2 || dp.Sum < 0.002 || dp.Sum > 0.006 {
		t.Errorf("waits: count %d sum %vs, want 2 waits of 1-3 ms", dp.Count, dp.Sum)
	}
	for _, kv := range append(dp.Attributes.ToSlice(), attempts.Data.(metricdata.Sum[int64]).DataPoints[0].Attributes.ToSlice()...) {
		if v := kv.Value.Emit(); v == "people" || v == "Sales" || v == "000123" {
			t.Errorf("attribute %s = %q: a table or key is not a metric dimension", kv.Key, v)
		}
	}
}

// Every way Do ends is one outcome: failed (not retryable), exhausted (policy or
// deadline), interrupted (ctx ended with a retryable failure).
func TestMetricsDoOutcomes(t *testing.T) {
	t.Parallel()
	mp, r := manual(t)
	p := fastPolicy(1, nil)
	p.MeterProvider = mp
	ctx := context.Background()
	conflict := responseError(t, http.StatusConflict, "EntityAlreadyExists")
	timeout := responseError(t, http.StatusInternalServerError, "OperationTimedOut")

	_ = Do(ctx, p, Op{Name: "a"}, func(context.Context, int) error { return conflict })
	_ = Do(ctx, p, Op{Name: "b"}, func(context.Context, int) error { return timeout })
	cctx, cancel := context.WithCancel(ctx)
	_ = Do(cctx, p, Op{Name: "c"}, func(context.Context, int) error { cancel(); return timeout })
	dctx, dcancel := context.WithDeadline(ctx, time.Now().Add(time.Hour))
	defer dcancel()
	slow := Policy{Delay: 2 * time.Hour, MinDelay: 2 * time.Hour, MaxDelay: 3 * time.Hour, MaxElapsed: Off, MeterProvider: mp}
	_ = Do(dctx, slow, Op{Name: "d"}, func(context.Context, int) error { return timeout })

	got := counts(t, find(t, collect(t, r), MetricAttempts))
	want := map[string]int64{
		attemptAttrs("a", ReasonConflict, outcomeFailed):     1,
		attemptAttrs("b", ReasonTimeout, outcomeRetried):     1,
		attemptAttrs("b", ReasonTimeout, outcomeExhausted):   1,
		attemptAttrs("c", ReasonTimeout, outcomeInterrupted): 1,
		attemptAttrs("d", ReasonTimeout, outcomeExhausted):   1,
	}
	if len(got) != len(want) {
		t.Errorf("%d series, want %d", len(got), len(want))
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("attempts %v = %d, want %d (all: %v)", k, got[k], v, got)
		}
	}
}

// With no provider in the policy, the metrics go to the global one.
func TestMetricsDoDefaultsToTheGlobalProvider(t *testing.T) {
	t.Parallel()
	telemetrytest.Install()
	op := Op{Name: "global-" + t.Name()}
	_ = Do(context.Background(), Policy{}, op, func(context.Context, int) error { return nil })
	v, ok := telemetrytest.Int64Sum(telemetrytest.Metrics(t), MetricAttempts, telemetry.KeyOperation.String(op.Name))
	if !ok || v != 1 {
		t.Fatalf("global provider: attempts %d (found %v), want 1", v, ok)
	}
}

// A no-op provider turns the metrics off: nothing reaches another provider.
func TestMetricsNoopProviderRecordsNothing(t *testing.T) {
	t.Parallel()
	telemetrytest.Install()
	op := Op{Name: "noop-" + t.Name()}
	p := Policy{MeterProvider: noop.NewMeterProvider()}
	_ = Do(context.Background(), p, op, func(context.Context, int) error { return nil })
	if _, ok := telemetrytest.Int64Sum(telemetrytest.Metrics(t), MetricAttempts, telemetry.KeyOperation.String(op.Name)); ok {
		t.Fatal("a no-op provider's attempts reached the global provider")
	}
}

type timeoutErr struct{}

func (timeoutErr) Error() string   { return "i/o timeout" }
func (timeoutErr) Timeout() bool   { return true }
func (timeoutErr) Temporary() bool { return true }

func TestReason(t *testing.T) {
	t.Parallel()
	resp := func(status int, code string) error { return responseError(t, status, code) }
	tests := []struct {
		name string
		err  error
		want string
	}{
		{"nil", nil, ReasonNone},
		{"503", resp(503, "ServerBusy"), ReasonThrottled},
		{"429", resp(429, ""), ReasonThrottled},
		{"500 ServerBusy", resp(500, "ServerBusy"), ReasonThrottled},
		{"408", resp(408, ""), ReasonTimeout},
		{"504", resp(504, ""), ReasonTimeout},
		{"500 OperationTimedOut", resp(500, "OperationTimedOut"), ReasonTimeout},
		{"500 InternalError", resp(500, "InternalError"), ReasonServerError},
		{"502", resp(502, ""), ReasonServerError},
		{"409", resp(409, "EntityAlreadyExists"), ReasonConflict},
		{"412", resp(412, "UpdateConditionNotSatisfied"), ReasonPrecondition},
		{"404", resp(404, "ResourceNotFound"), ReasonNotFound},
		{"400", resp(400, "InvalidInput"), ReasonClientError},
		{"403", resp(403, "AuthorizationFailure"), ReasonClientError},
		{"transaction action 409 in a 202", &errs.ServiceError{StatusCode: 409, Code: "EntityAlreadyExists", Err: resp(202, "")}, ReasonConflict},
		{"wrapped 412 sentinel", fmt.Errorf("update: %w", errs.ErrPreconditionFailed), ReasonPrecondition},
		{"already exists sentinel", errs.ErrAlreadyExists, ReasonConflict},
		{"not found sentinel", errs.ErrNotFound, ReasonNotFound},
		{"outcome unknown", &errs.OutcomeUnknownError{Op: "insert", Err: resp(409, "EntityAlreadyExists")}, ReasonUnknown},
		{"invalid input", errs.Invalid("x", "bad"), ReasonOther},
		{"canceled", fmt.Errorf("get: %w", context.Canceled), ReasonCanceled},
		{"deadline", context.DeadlineExceeded, ReasonTimeout},
		{"net timeout", &url.Error{Op: "Get", URL: "https://x", Err: timeoutErr{}}, ReasonTimeout},
		{"ETIMEDOUT", &net.OpError{Op: "read", Err: os.NewSyscallError("read", syscall.ETIMEDOUT)}, ReasonTimeout},
		{"reset", &url.Error{Op: "Post", URL: "https://x", Err: &net.OpError{Op: "read", Err: os.NewSyscallError("read", syscall.ECONNRESET)}}, ReasonReset},
		{"EOF", &url.Error{Op: "Post", URL: "https://x", Err: io.EOF}, ReasonReset},
		{"unexpected EOF", io.ErrUnexpectedEOF, ReasonReset},
		{"broken pipe", os.NewSyscallError("write", syscall.EPIPE), ReasonReset},
		{"closed while writing", closedWhileWriting(), ReasonReset},
		{"server closed idle", closedIdleConn(), ReasonReset},
		{"refused", &net.OpError{Op: "dial", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}, ReasonUnreachable},
		{"dns", &net.DNSError{Err: "no such host", Name: "x", IsNotFound: true}, ReasonUnreachable},
		{"other", errors.New("boom"), ReasonOther},
	}
	for _, tt := range tests {
		if got := Reason(tt.err); got != tt.want {
			t.Errorf("%s: Reason(%v) = %q, want %q", tt.name, tt.err, got, tt.want)
		}
	}
}

// Under sustained throttling the Gate's metrics show the throttled answers, the cut and
// the requests it held, by host, through a real Azure SDK pipeline.
func TestMetricsGate(t *testing.T) {
	t.Parallel()
	mp, r := manual(t)
	g := mustGate(t, &GateOptions{MeterProvider: mp, Quiet: time.Hour})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	defer srv.Close()
	pl := runtime.NewPipeline("test", "v0", runtime.PipelineOptions{}, &policy.ClientOptions{
		Retry: policy.RetryOptions{MaxRetries: -1}, PerRetryPolicies: []policy.Policy{g},
	})
	const n = 7
	for range n {
		req, err := runtime.NewRequest(context.Background(), http.MethodGet, srv.URL)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := pl.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	if g.Rate() == 0 {
		t.Fatal("the Gate set no limit")
	}
	host := set(keyServerAddress.String("127.0.0.1"))
	rm := collect(t, r)
	throttled := find(t, rm, MetricGateThrottled)
	if throttled.Unit != "{response}" || counts(t, throttled)[host] != n {
		t.Errorf("throttled: unit %q, counts %v, want %d at %v", throttled.Unit, counts(t, throttled), n, host)
	}
	cuts := find(t, rm, MetricGateCuts)
	if c := counts(t, cuts)[host]; cuts.Unit != "{cut}" || c < 1 {
		t.Errorf("cuts: unit %q, %d, want at least 1", cuts.Unit, c)
	}
	wait := find(t, rm, MetricGateWait)
	h, ok := wait.Data.(metricdata.Histogram[float64])
	if wait.Unit != "s" || !ok || len(h.DataPoints) != 1 || key(h.DataPoints[0].Attributes) != host || h.DataPoints[0].Count == 0 || h.DataPoints[0].Sum <= 0 {
		t.Errorf("gate wait: unit %q, %#v: want the held requests at %v", wait.Unit, wait.Data, host)
	}
}

// A Gate that limits nothing records no wait: the histogram is of held requests only.
func TestMetricsGateQuietRecordsNothing(t *testing.T) {
	t.Parallel()
	mp, r := manual(t)
	g := mustGate(t, &GateOptions{MeterProvider: mp})
	for range 100 {
		if err := g.Wait(context.Background()); err != nil {
			t.Fatal(err)
		}
		g.Observe(false)
	}
	if rm := collect(t, r); len(rm.ScopeMetrics) != 0 && len(rm.ScopeMetrics[0].Metrics) != 0 {
		t.Fatalf("an idle Gate recorded %+v", rm.ScopeMetrics[0].Metrics)
	}
}

// A throttling wait the service asked for (x-ms-retry-after-ms) is recorded as what Do
// waited, under reason throttled.
func TestMetricsThrottlingWaitFollowsRetryAfter(t *testing.T) {
	t.Parallel()
	mp, r := manual(t)
	throttled := responseError(t, http.StatusTooManyRequests, "TooManyRequests")
	var re *azcore.ResponseError
	errors.As(throttled, &re)
	re.RawResponse.Header.Set("x-ms-retry-after-ms", "25")
	p := Policy{Delay: time.Millisecond, MinDelay: time.Millisecond, MaxDelay: 40 * time.Millisecond, MaxRetries: 1, MeterProvider: mp}
	err := Do(context.Background(), p, testOp, func(_ context.Context, attempt int) error {
		if attempt == 1 {
			return throttled
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	h := find(t, collect(t, r), MetricWait).Data.(metricdata.Histogram[float64])
	if len(h.DataPoints) != 1 || h.DataPoints[0].Count != 1 || h.DataPoints[0].Sum != 0.025 ||
		key(h.DataPoints[0].Attributes) != set(telemetry.KeyOperation.String("insert"), keyReason.String(ReasonThrottled)) {
		t.Fatalf("throttling wait %+v, want one wait of 0.025 s, reason throttled", h.DataPoints)
	}
}

// Errors that carry a SAS signature, an account key, a URL query, entity keys and
// unbounded text (messages of any length, codes nobody defined), on operations whose
// Resource and keys come from untrusted jobs: the attempt and wait metrics must carry only
// the operation's constant name and the fixed reason and outcome values, and their series
// must stay bounded however many distinct errors and resources pass.
func TestMetricsCarryOnlyBoundedAttributesAndNoSecrets(t *testing.T) {
	t.Parallel()
	mp, r := manual(t)
	reasons := map[string]bool{ReasonNone: true, ReasonThrottled: true, ReasonTimeout: true, ReasonReset: true, ReasonUnreachable: true,
		ReasonServerError: true, ReasonConflict: true, ReasonPrecondition: true, ReasonNotFound: true, ReasonClientError: true,
		ReasonCanceled: true, ReasonUnknown: true, ReasonOther: true}
	outcomes := map[string]bool{outcomeSuccess: true, outcomeRetried: true, outcomeFailed: true, outcomeExhausted: true, outcomeInterrupted: true}
	for i := range 200 {
		p := fastPolicy(2, nil)
		p.MeterProvider = mp
		op := Op{Name: "insert", Resource: fmt.Sprintf("jobTable%d?sig=SECRET%d", i, i), PartitionKey: fmt.Sprintf("pk%d", i), RowKey: fmt.Sprintf("rk%d", i)}
		var e error
		switch i % 5 {
		case 0:
			e = responseError(t, 400+i%99, fmt.Sprintf("Code%dAccountKey=SECRET", i))
		case 1:
			e = fmt.Errorf("GET https://acct.blob.core.windows.net/c/b%d?sv=1&sig=SECRET%d: %w", i, i, errs.ErrTransient)
		case 2:
			e = responseError(t, 500+i%11, strings.Repeat("x", i))
		case 3:
			e = errors.New(strings.Repeat("secret text ", i))
		case 4:
			e = fmt.Errorf("%w: key %d", errs.ErrOutcomeUnknown, i)
		}
		_ = Do(context.Background(), p, op, func(context.Context, int) error { return e })
	}
	rm := collect(t, r)
	attempts := find(t, rm, MetricAttempts)
	sum := attempts.Data.(metricdata.Sum[int64])
	for _, dp := range sum.DataPoints {
		for _, kv := range dp.Attributes.ToSlice() {
			v := kv.Value.Emit()
			switch string(kv.Key) {
			case "tablepatterns.operation":
				if v != "insert" {
					t.Errorf("operation %q", v)
				}
			case string(keyReason):
				if !reasons[v] {
					t.Errorf("reason %q is not a Reason constant", v)
				}
			case "tablepatterns.outcome":
				if !outcomes[v] {
					t.Errorf("outcome %q", v)
				}
			default:
				t.Errorf("unexpected attribute %s=%q", kv.Key, v)
			}
		}
	}
	if n := len(sum.DataPoints); n > len(reasons)*len(outcomes) {
		t.Errorf("%d attempt series for one operation", n)
	}
}

// Do's decisions (attempts made, error returned) are the same with no provider, a no-op
// provider, an SDK provider, and a provider of a type that is not comparable.
func TestMetricsNeverChangeDosDecisions(t *testing.T) {
	t.Parallel()
	mp, _ := manual(t)
	type result struct {
		attempts int
		err      string
		kind     string
	}
	run := func(p Policy, fail func(int) error) result {
		n := 0
		err := Do(context.Background(), p, testOp, func(_ context.Context, a int) error { n = a; return fail(a) })
		s := ""
		if err != nil {
			s = err.Error()
		}
		return result{n, s, fmt.Sprintf("%T", err)}
	}
	scenarios := []func(int) error{
		func(a int) error { return responseError(t, http.StatusServiceUnavailable, "ServerBusy") },
		func(a int) error {
			if a < 3 {
				return responseError(t, http.StatusInternalServerError, "InternalError")
			}
			return nil
		},
		func(a int) error { return responseError(t, http.StatusConflict, "EntityAlreadyExists") },
	}
	providers := map[string]Policy{"nil": fastPolicy(4, nil)}
	sdk := fastPolicy(4, nil)
	sdk.MeterProvider = mp
	providers["sdk"] = sdk
	nc := fastPolicy(4, nil)
	nc.MeterProvider = uncomparable{metricMP: mp, tags: []string{"x"}}
	providers["uncomparable"] = nc
	for i, f := range scenarios {
		var base *result
		for name, p := range providers {
			got := run(p, f)
			if base == nil {
				base = &got
				continue
			}
			if !reflect.DeepEqual(got, *base) {
				t.Errorf("scenario %d, provider %s: %+v, another provider %+v", i, name, got, *base)
			}
		}
	}
}

// uncomparable is a MeterProvider whose dynamic type cannot be compared with ==.
type uncomparable struct {
	metricMP
	tags []string
}

type metricMP = metric.MeterProvider
