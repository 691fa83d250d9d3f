// Package telemetry is tablepatterns' OpenTelemetry instrumentation: spans for multi-step
// operations, trace context carried through queue messages, and metric instruments. It
// depends on the OpenTelemetry API only and uses the global providers
// (otel.GetTracerProvider, otel.GetMeterProvider, the same way OpenTelemetry's own
// instrumentation libraries default), looked up on every use, so an application that sets
// them at any time gets the telemetry, and one that sets none pays for no-op calls.
//
// Span names are "<package>.<operation>" (secondaryindex.write, queueworker.process). Span
// attributes name tables, queues, containers, message kinds and counts, never keys or
// values: keys often are personal data (an e-mail index), and the Azure SDK's own spans
// (through azotel) already carry what a request addresses. A span's error status and
// exception event hold the error's class (End), never its text, which names keys; the
// message id of the queue spans is the queue service's, never an envelope id.
package telemetry

import (
	"context"
	"errors"
	"fmt"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/tablepatterns/tablepatterns/internal/errs"
	"github.com/tablepatterns/tablepatterns/internal/version"
)

// Scope is the instrumentation scope of every tracer and meter of tablepatterns.
const Scope = "github.com/tablepatterns/tablepatterns"

// Attribute keys used across packages.
const (
	KeyTable       = attribute.Key("tablepatterns.table")
	KeyQueue       = attribute.Key("messaging.destination.name")
	KeyKind        = attribute.Key("tablepatterns.message.kind")
	KeyMessageID   = attribute.Key("messaging.message.id") // the service's id; an envelope id may be built from keys
	KeyDeliveries  = attribute.Key("messaging.azure_queue.dequeue_count")
	KeyContainer   = attribute.Key("tablepatterns.container")
	KeyTargetTable = attribute.Key("tablepatterns.target_table")
	KeyOutcome     = attribute.Key("tablepatterns.outcome")
	KeyCount       = attribute.Key("tablepatterns.count")
	KeyOperation   = attribute.Key("tablepatterns.operation")
)

// Tracer returns the tablepatterns tracer of the global provider.
func Tracer() trace.Tracer {
	return otel.GetTracerProvider().Tracer(Scope, trace.WithInstrumentationVersion(version.Version))
}

// Meter returns the tablepatterns meter of the global provider.
func Meter() metric.Meter { return MeterOf(nil) }

// MeterOf returns the tablepatterns meter of mp, or of the global provider when mp is nil
// (for options that take a provider and default to the global one).
func MeterOf(mp metric.MeterProvider) metric.Meter {
	if mp == nil {
		mp = otel.GetMeterProvider()
	}
	return mp.Meter(Scope, metric.WithInstrumentationVersion(version.Version))
}

// Start starts an internal span named name as a child of the span in ctx.
func Start(ctx context.Context, name string, attrs ...attribute.KeyValue) (context.Context, trace.Span) {
	return Tracer().Start(ctx, name, trace.WithAttributes(attrs...))
}

// End ends span, recording err (if not nil) as the span's error status and an exception
// event. Both hold err's class (errs.Class: the status and code, the sentinel) and Go
// type, never its text: an error's text names the keys it is about, and a span carries
// no key or value.
func End(span trace.Span, err error) {
	if err != nil {
		class := errs.Class(err)
		span.AddEvent("exception", trace.WithAttributes(
			attribute.String("exception.type", fmt.Sprintf("%T", err)),
			attribute.String("exception.message", class)))
		span.SetStatus(codes.Error, class)
	}
	span.End()
}

// carrier is the W3C trace context propagator used for queue messages. It is fixed rather
// than the global propagator so that a producer and a consumer agree whatever each
// process configured.
var carrier = propagation.TraceContext{}

// Inject returns the W3C trace context (traceparent, tracestate) of the span in ctx for a
// message, or nil when ctx has no valid span.
func Inject(ctx context.Context) map[string]string {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return nil
	}
	m := propagation.MapCarrier{}
	carrier.Inject(ctx, m)
	if len(m) == 0 {
		return nil
	}
	return m
}

// MaxTraceContext is the most bytes of trace context Extract accepts from a message: a
// traceparent is 55 characters, and W3C caps tracestate at 512.
const MaxTraceContext = 1024

// Extract returns ctx with the remote span context carried by a message, if the message
// carries a valid one. The fields are untrusted input: only traceparent and tracestate are
// read, they are parsed strictly by the W3C propagator, and oversized ones are ignored. A
// forged trace context can only misattribute a span, never change what the handler does.
func Extract(ctx context.Context, fields map[string]string) context.Context {
	if len(fields) == 0 {
		return ctx
	}
	tp, ts := fields["traceparent"], fields["tracestate"]
	if tp == "" || len(tp)+len(ts) > MaxTraceContext {
		return ctx
	}
	return carrier.Extract(ctx, propagation.MapCarrier{"traceparent": tp, "tracestate": ts})
}

// ErrorType returns a short, non-sensitive classification of err for a metric attribute.
func ErrorType(err error) string {
	switch {
	case err == nil:
		return ""
	case errors.Is(err, context.Canceled):
		return "canceled"
	case errors.Is(err, context.DeadlineExceeded):
		return "timeout"
	}
	return "error"
}
