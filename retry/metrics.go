package retry

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"reflect"
	"sync"
	"syscall"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/tablepatterns/tablepatterns/internal/errs"
	"github.com/tablepatterns/tablepatterns/internal/telemetry"
)

// The OpenTelemetry metrics of Do and the Gate (meter "github.com/tablepatterns/tablepatterns"
// of Policy.MeterProvider or GateOptions.MeterProvider, the global provider when nil).
//
// MetricAttempts counts every call of fn by Do, with the attributes
// tablepatterns.operation (Op.Name: keep it a constant, it is a metric dimension),
// tablepatterns.retry.reason (why the attempt failed, see Reason; "none" for a success)
// and tablepatterns.outcome (what Do did next: "success"; "retried" when it waits to
// retry, even if ctx then ends during the wait; "failed" for an error that is not
// retryable; "exhausted" when the policy, or ctx's deadline, leaves no retry;
// "interrupted" when ctx had ended by the time the attempt failed). MetricWait records each wait Do takes before a retry, by operation and
// reason: the waits with reason "throttled" are the throttling waits, Retry-After included.
//
// MetricGateWait records how long the Gate held a request before sending it, for the
// requests it held (none while it limits nothing); MetricGateThrottled counts the 503 and
// 429 answers it saw; MetricGateCuts counts the times it lowered the client's rate. The
// Gate's metrics carry server.address (the host a request went to) when the Gate runs as
// a client policy.
const (
	MetricAttempts      = "tablepatterns.retry.attempts"
	MetricWait          = "tablepatterns.retry.wait"
	MetricGateWait      = "tablepatterns.retry.gate.wait"
	MetricGateThrottled = "tablepatterns.retry.gate.throttled"
	MetricGateCuts      = "tablepatterns.retry.gate.cuts"
)

// Metric attribute keys of this package (tablepatterns.operation and tablepatterns.outcome
// are shared with the rest of the SDK).
const (
	keyReason        = attribute.Key("tablepatterns.retry.reason")
	keyServerAddress = attribute.Key("server.address")
)

// Outcomes of an attempt, the values of tablepatterns.outcome on MetricAttempts.
const (
	outcomeSuccess     = "success"
	outcomeRetried     = "retried"
	outcomeFailed      = "failed"
	outcomeExhausted   = "exhausted"
	outcomeInterrupted = "interrupted"
)

// Reasons of a failed attempt, the values of tablepatterns.retry.reason.
const (
	ReasonNone         = "none"                // the attempt succeeded
	ReasonThrottled    = "throttled"           // 503 ServerBusy, 429
	ReasonTimeout      = "timeout"             // 408, 504, OperationTimedOut, a per-try or transport timeout
	ReasonReset        = "reset"               // the connection broke after it was made (reset, EOF, broken pipe, closed)
	ReasonUnreachable  = "unreachable"         // no connection: refused, DNS failure, dial error
	ReasonServerError  = "server_error"        // another 5xx (500 InternalError, 502, ...)
	ReasonConflict     = "conflict"            // 409: already exists, or a creation race
	ReasonPrecondition = "precondition_failed" // 412: the ETag changed
	ReasonNotFound     = "not_found"           // 404
	ReasonClientError  = "client_error"        // another 4xx
	ReasonCanceled     = "canceled"            // context.Canceled
	ReasonUnknown      = "outcome_unknown"     // errs.ErrOutcomeUnknown: a retried write met its own possible success
	ReasonOther        = "other"               // anything else (invalid input, ...)
)

// Reason classifies err for the tablepatterns.retry.reason attribute: one of the Reason
// constants, never text taken from the error.
func Reason(err error) string {
	switch {
	case err == nil:
		return ReasonNone
	case errors.Is(err, context.Canceled):
		return ReasonCanceled
	case errors.Is(err, errs.ErrOutcomeUnknown):
		return ReasonUnknown
	}
	if status, code, ok := statusOf(err); ok && status != http.StatusAccepted {
		switch code {
		case "ServerBusy":
			return ReasonThrottled
		case "OperationTimedOut":
			return ReasonTimeout
		}
		switch {
		case status == http.StatusServiceUnavailable, status == http.StatusTooManyRequests:
			return ReasonThrottled
		case status == http.StatusRequestTimeout, status == http.StatusGatewayTimeout:
			return ReasonTimeout
		case status >= 500:
			return ReasonServerError
		case status == http.StatusConflict:
			return ReasonConflict
		case status == http.StatusPreconditionFailed:
			return ReasonPrecondition
		case status == http.StatusNotFound:
			return ReasonNotFound
		case status >= 400:
			return ReasonClientError
		}
	}
	switch {
	case errors.Is(err, errs.ErrPreconditionFailed):
		return ReasonPrecondition
	case errors.Is(err, errs.ErrAlreadyExists):
		return ReasonConflict
	case errors.Is(err, errs.ErrNotFound):
		return ReasonNotFound
	case errors.Is(err, errs.ErrInvalidInput):
		return ReasonOther
	case notConnected(err):
		return ReasonUnreachable
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, net.ErrClosed), closedIdle(err),
		errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.ECONNABORTED), errors.Is(err, syscall.EPIPE):
		return ReasonReset
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, syscall.ETIMEDOUT):
		return ReasonTimeout
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return ReasonTimeout
	}
	return ReasonOther
}

// instruments are the metric instruments of one meter provider.
type instruments struct {
	attempts      metric.Int64Counter
	wait          metric.Float64Histogram
	gateWait      metric.Float64Histogram
	gateThrottled metric.Int64Counter
	gateCuts      metric.Int64Counter
}

// byProvider caches the instruments of each provider (metric.MeterProvider ->
// *instruments): applications have one or a few. The global provider's instruments
// delegate to whatever provider the application sets later.
var byProvider sync.Map

// instrumentsOf returns the instruments of mp, or of the global provider when mp is nil.
func instrumentsOf(mp metric.MeterProvider) *instruments {
	if mp == nil {
		mp = otel.GetMeterProvider()
	}
	if !reflect.TypeOf(mp).Comparable() {
		return newInstruments(mp) // cannot be a map key; the SDKs deduplicate instruments
	}
	if x, ok := byProvider.Load(mp); ok {
		return x.(*instruments)
	}
	x, _ := byProvider.LoadOrStore(mp, newInstruments(mp))
	return x.(*instruments)
}

// waitBuckets are the histogram bounds of waits, in seconds: from the Gate's spacing of
// requests (milliseconds) to BatchPolicy's longest waits (90 s).
var waitBuckets = []float64{0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120}

func newInstruments(mp metric.MeterProvider) *instruments {
	m := telemetry.MeterOf(mp)
	var x instruments
	// Errors from instrument creation only report invalid names or units, which are
	// constants here; the instruments returned are usable (no-op) either way.
	x.attempts, _ = m.Int64Counter(MetricAttempts, metric.WithUnit("{attempt}"),
		metric.WithDescription("Attempts of storage operations by retry.Do, by operation, reason of failure and what followed."))
	x.wait, _ = m.Float64Histogram(MetricWait, metric.WithUnit("s"), metric.WithExplicitBucketBoundaries(waitBuckets...),
		metric.WithDescription("Waits before retries, by operation and reason of the failure retried."))
	x.gateWait, _ = m.Float64Histogram(MetricGateWait, metric.WithUnit("s"), metric.WithExplicitBucketBoundaries(waitBuckets...),
		metric.WithDescription("How long the throttling Gate held a request before sending it."))
	x.gateThrottled, _ = m.Int64Counter(MetricGateThrottled, metric.WithUnit("{response}"),
		metric.WithDescription("Throttled answers (503, 429) the Gate saw."))
	x.gateCuts, _ = m.Int64Counter(MetricGateCuts, metric.WithUnit("{cut}"),
		metric.WithDescription("Times the Gate lowered the client's send rate."))
	return &x
}

// attempt records one attempt of op and what Do does next.
func (x *instruments) attempt(ctx context.Context, op Op, err error, outcome string) {
	x.attempts.Add(ctx, 1, metric.WithAttributes(telemetry.KeyOperation.String(op.Name),
		keyReason.String(Reason(err)), telemetry.KeyOutcome.String(outcome)))
}

// waited records the wait before the retry of op after err.
func (x *instruments) waited(ctx context.Context, op Op, err error, d time.Duration) {
	x.wait.Record(ctx, d.Seconds(), metric.WithAttributes(telemetry.KeyOperation.String(op.Name), keyReason.String(Reason(err))))
}

// gate records what the Gate did for one request: how long it held it (recorded only
// when it did), whether the answer was throttled and whether that cut the rate. host is
// the request's host, "" when unknown.
func (x *instruments) gate(ctx context.Context, host string, held time.Duration, throttled, cut bool) {
	if !(held > 0 || throttled || cut) {
		return
	}
	if x == nil { // a Gate not made by NewGate
		x = instrumentsOf(nil)
	}
	var attrs metric.MeasurementOption = metric.WithAttributes()
	if host != "" {
		attrs = metric.WithAttributes(keyServerAddress.String(host))
	}
	if held > 0 {
		x.gateWait.Record(ctx, held.Seconds(), attrs)
	}
	if throttled {
		x.gateThrottled.Add(ctx, 1, attrs)
	}
	if cut {
		x.gateCuts.Add(ctx, 1, attrs)
	}
}
