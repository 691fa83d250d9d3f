// Package telemetrytest installs OpenTelemetry SDK providers with in-memory exporters as
// the global providers, for tests that assert spans and metrics.
package telemetrytest

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

var (
	once     sync.Once
	spans    *tracetest.InMemoryExporter
	reader   *sdkmetric.ManualReader
	readerMu sync.Mutex // ManualReader.Collect is safe, but tests read one snapshot at a time
)

// Install sets the global tracer and meter providers to SDK providers with an in-memory
// span exporter (spans are exported synchronously when they end) and a manual metric
// reader, once per process. Parallel tests share them: filter by attributes unique to the
// test (a table or queue name).
func Install() {
	once.Do(func() {
		spans = tracetest.NewInMemoryExporter()
		otel.SetTracerProvider(sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans)))
		reader = sdkmetric.NewManualReader()
		otel.SetMeterProvider(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)))
	})
}

// Spans returns the ended spans so far, optionally only those with attribute kv.
func Spans(kv ...attribute.KeyValue) tracetest.SpanStubs {
	Install()
	var out tracetest.SpanStubs
	for _, s := range spans.GetSpans() {
		if HasAll(s.Attributes, kv...) {
			out = append(out, s)
		}
	}
	return out
}

// HasAll reports whether attrs hold every one of want.
func HasAll(attrs []attribute.KeyValue, want ...attribute.KeyValue) bool {
	for _, w := range want {
		if !slices.ContainsFunc(attrs, func(a attribute.KeyValue) bool { return a == w }) {
			return false
		}
	}
	return true
}

// Find returns the ended spans named name that carry every attribute of kv.
func Find(name string, kv ...attribute.KeyValue) tracetest.SpanStubs {
	var out tracetest.SpanStubs
	for _, s := range Spans(kv...) {
		if s.Name == name {
			out = append(out, s)
		}
	}
	return out
}

// WaitSpans polls until at least n spans named name carry kv, or fails t after 20 s.
func WaitSpans(t testing.TB, n int, name string, kv ...attribute.KeyValue) tracetest.SpanStubs {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		got := Find(name, kv...)
		if len(got) >= n {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("telemetrytest: %d %s spans with %v, want %d", len(got), name, kv, n)
		}
		time.Sleep(10 * time.Millisecond) // polling with a deadline, not synchronisation by sleep
	}
}

// ByID returns the span of sc among all ended spans.
func ByID(sc trace.SpanContext) (tracetest.SpanStub, bool) {
	for _, s := range Spans() {
		if s.SpanContext.SpanID() == sc.SpanID() && s.SpanContext.TraceID() == sc.TraceID() {
			return s, true
		}
	}
	return tracetest.SpanStub{}, false
}

// IsChild reports whether child's parent is parent's span.
func IsChild(child, parent tracetest.SpanStub) bool {
	return child.Parent.IsValid() && child.Parent.SpanID() == parent.SpanContext.SpanID() &&
		child.Parent.TraceID() == parent.SpanContext.TraceID()
}

// Metrics collects the current metrics.
func Metrics(t testing.TB) metricdata.ResourceMetrics {
	t.Helper()
	Install()
	readerMu.Lock()
	defer readerMu.Unlock()
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatalf("telemetrytest: collect: %v", err)
	}
	return rm
}

// Int64Sum returns the value of the int64 sum (counter or up-down counter) named name at
// the data point that carries every attribute of kv, and whether there is one.
func Int64Sum(rm metricdata.ResourceMetrics, name string, kv ...attribute.KeyValue) (int64, bool) {
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name != name {
				continue
			}
			if sum, ok := m.Data.(metricdata.Sum[int64]); ok {
				for _, dp := range sum.DataPoints {
					if HasAll(dp.Attributes.ToSlice(), kv...) {
						return dp.Value, true
					}
				}
			}
		}
	}
	return 0, false
}

// HistogramCount returns the count of the float64 histogram named name at the data point
// that carries every attribute of kv.
func HistogramCount(rm metricdata.ResourceMetrics, name string, kv ...attribute.KeyValue) uint64 {
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name != name {
				continue
			}
			if h, ok := m.Data.(metricdata.Histogram[float64]); ok {
				for _, dp := range h.DataPoints {
					if HasAll(dp.Attributes.ToSlice(), kv...) {
						return dp.Count
					}
				}
			}
		}
	}
	return 0
}

// Mentions returns where span s carries text: in its name, status description,
// attributes, or the name or attributes of one of its events (an exception event's
// message). "" means nowhere.
func Mentions(s tracetest.SpanStub, text string) string {
	has := func(attrs []attribute.KeyValue) string {
		for _, a := range attrs {
			if strings.Contains(string(a.Key), text) || strings.Contains(a.Value.Emit(), text) {
				return string(a.Key)
			}
		}
		return ""
	}
	switch {
	case strings.Contains(s.Name, text):
		return "name"
	case strings.Contains(s.Status.Description, text):
		return "status " + s.Status.Description
	}
	if k := has(s.Attributes); k != "" {
		return "attribute " + k
	}
	for _, e := range s.Events {
		if strings.Contains(e.Name, text) {
			return "event " + e.Name
		}
		if k := has(e.Attributes); k != "" {
			return "event " + e.Name + " attribute " + k
		}
	}
	return ""
}
