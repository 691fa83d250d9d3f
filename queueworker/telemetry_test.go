package queueworker

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"fmt"

	"github.com/tablepatterns/tablepatterns/internal/telemetry"
	"github.com/tablepatterns/tablepatterns/internal/telemetry/telemetrytest"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
)

type traced struct{ N int }

// The producer's span, the enqueue span, the worker's process span and the handler's own
// span form one trace: enqueue is a child of the caller's span, process a child of enqueue
// (through the envelope), the handler's span a child of process. A failing delivery marks
// its process span as an error. The worker's metrics carry its queue.
func TestSpansAndMetricsFollowAMessage(t *testing.T) {
	t.Parallel()
	telemetrytest.Install()
	b := setup(t)
	queue := telemetry.KeyQueue.String(b.name)

	fails := 1
	reg := NewRegistry()
	if err := Handle(reg, "traced", func(ctx context.Context, m *Message[traced]) error {
		_, span := otel.Tracer("test").Start(ctx, "test.handler")
		span.End()
		if m.Payload.N == 2 && fails > 0 {
			fails--
			return errors.New("first delivery fails")
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	ctx, root := otel.Tracer("test").Start(t.Context(), "test.producer")
	for n := 1; n <= 2; n++ {
		if _, err := Enqueue(ctx, b.client, "traced", "", traced{N: n}, nil); err != nil {
			t.Fatal(err)
		}
	}
	root.End()

	w := b.worker(b.config(reg)) // RetryDelay 0: a failed message is released at once
	if err := w.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	eventually(t, "both messages processed", func() bool { return w.Stats().Processed == 2 })
	rm := telemetrytest.Metrics(t) // while the worker runs: its counters are observed
	if err := w.Stop(t.Context()); err != nil {
		t.Fatal(err)
	}

	producer := telemetrytest.Find("test.producer")
	var rootStub = producer[len(producer)-1]
	for _, p := range producer {
		if p.SpanContext.SpanID() == root.SpanContext().SpanID() {
			rootStub = p
		}
	}
	enqueues := telemetrytest.Find("queueworker.enqueue", queue, telemetry.KeyKind.String("traced"))
	if len(enqueues) != 2 {
		t.Fatalf("%d enqueue spans, want 2", len(enqueues))
	}
	for _, e := range enqueues {
		if !telemetrytest.IsChild(e, rootStub) || e.SpanKind != trace.SpanKindProducer {
			t.Errorf("enqueue span: parent %v kind %v, want child of the producer, kind producer", e.Parent, e.SpanKind)
		}
	}
	process := telemetrytest.Find("queueworker.process", queue)
	if len(process) != 3 {
		t.Fatalf("%d process spans, want 3 (one failed delivery, two successes)", len(process))
	}
	failedSpans := 0
	for _, p := range process {
		parent, ok := telemetrytest.ByID(p.Parent)
		if !ok || parent.Name != "queueworker.enqueue" || p.SpanKind != trace.SpanKindConsumer {
			t.Errorf("process span's parent is %q (found %v), kind %v; want the enqueue span, consumer", parent.Name, ok, p.SpanKind)
		}
		if p.Status.Code == codes.Error {
			failedSpans++
		}
		var handler bool
		for _, h := range telemetrytest.Find("test.handler") {
			if telemetrytest.IsChild(h, p) {
				handler = true
			}
		}
		if !handler {
			t.Error("the handler's span is not a child of its process span")
		}
	}
	if failedSpans != 1 {
		t.Errorf("%d process spans with error status, want 1", failedSpans)
	}

	if v, ok := telemetrytest.Int64Sum(rm, MetricProcessed, queue); !ok || v != 2 {
		t.Errorf("%s = %d (found %v), want 2", MetricProcessed, v, ok)
	}
	if v, ok := telemetrytest.Int64Sum(rm, MetricFailed, queue); !ok || v != 1 {
		t.Errorf("%s = %d (found %v), want 1", MetricFailed, v, ok)
	}
	if _, ok := telemetrytest.Int64Sum(rm, MetricInFlight, queue); !ok {
		t.Errorf("%s not observed", MetricInFlight)
	}
	if n := telemetrytest.HistogramCount(rm, MetricHandlerDuration, queue, telemetry.KeyOutcome.String("ok")); n != 2 {
		t.Errorf("%s ok count %d, want 2", MetricHandlerDuration, n)
	}
	if n := telemetrytest.HistogramCount(rm, MetricHandlerDuration, queue, telemetry.KeyOutcome.String("failed")); n != 1 {
		t.Errorf("%s failed count %d, want 1", MetricHandlerDuration, n)
	}
}

// A trace context in a message is untrusted: a malformed or oversized one is ignored (the
// delivery starts a new trace) and the handler still runs.
func TestForgedTraceContextIsIgnored(t *testing.T) {
	t.Parallel()
	telemetrytest.Install()
	b := setup(t)
	queue := telemetry.KeyQueue.String(b.name)
	for _, text := range []string{
		`{"kind":"traced","id":"bad","payload":{},"trace":{"traceparent":"00-zz-yy-01"}}`,
		`{"kind":"traced","id":"big","payload":{},"trace":{"traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01","tracestate":"` + string(make([]byte, 2000)) + `"}}`,
		`{"kind":"traced","id":"list","payload":{},"trace":["x"]}`,
	} {
		if _, err := b.direct.EnqueueMessage(t.Context(), text, nil); err != nil {
			t.Fatal(err)
		}
	}
	ran := make(chan string, 3)
	reg := NewRegistry()
	if err := Handle(reg, "traced", func(ctx context.Context, m *Message[traced]) error {
		ran <- m.ID
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	w := b.worker(b.config(reg))
	b.drain(w)
	close(ran)
	var ids []string
	for id := range ran {
		ids = append(ids, id)
	}
	// The third envelope has a trace field of the wrong shape: the envelope is malformed
	// and goes to the poison queue, like any other undecodable message.
	if len(ids) != 2 || w.Stats().Poisoned != 1 {
		t.Fatalf("handled %v, poisoned %d; want bad and big handled, the list poisoned", ids, w.Stats().Poisoned)
	}
	for _, p := range telemetrytest.Find("queueworker.process", queue) {
		if p.Parent.IsValid() {
			t.Errorf("process span of a forged trace context has parent %v", p.Parent)
		}
	}
}

// Tracing never shrinks the payload Enqueue accepts: a message that fits only without its
// trace context is sent without it.
func TestTraceContextDroppedWhenTheMessageWouldNotFit(t *testing.T) {
	t.Parallel()
	telemetrytest.Install()
	b := setup(t)
	ctx, root := otel.Tracer("test").Start(t.Context(), "test.big")
	defer root.End()
	probe, err := encodeEnvelope(&envelope{Kind: "k", ID: "big", Payload: json.RawMessage(`{"N":0,"S":""}`), EnqueuedAt: time.Now().UTC()}, encRaw)
	if err != nil {
		t.Fatal(err)
	}
	fit := MaxMessageSize/4*3 - len(probe) - 40
	if _, err := Enqueue(ctx, b.client, "k", "big", struct {
		N int
		S string
	}{S: strings.Repeat("y", fit)}, nil); err != nil {
		t.Fatalf("a payload that fits without the trace context: %v", err)
	}
	if _, err := Enqueue(ctx, b.client, "k", "small", traced{N: 1}, nil); err != nil {
		t.Fatal(err)
	}
	texts := b.peekAll(b.direct)
	if len(texts) != 2 {
		t.Fatalf("%d messages", len(texts))
	}
	for _, text := range texts {
		env, _, err := decodeEnvelope(text)
		if err != nil {
			t.Fatal(err)
		}
		if (env.ID == "big") != (env.Trace == nil) {
			t.Errorf("message %s carries trace %v; want none only on the big one", env.ID, env.Trace)
		}
	}
}

// The envelope's kind is untrusted (whoever can add a message to the queue writes it),
// and every delivery is recorded in the handler-duration histogram under a
// tablepatterns.message.kind attribute. Were that attribute the envelope's text, each
// forged kind would be a new series kept for the life of the process (on the archiver's
// Prometheus page and in OTLP), control characters and terminal escapes included. Only
// registered kinds are attribute values; every other kind is recorded as UnregisteredKind.
func TestForgedKindsNeverBecomeMetricSeries(t *testing.T) {
	t.Parallel()
	telemetrytest.Install()
	b := setup(t)
	reg := NewRegistry()
	if err := Handle(reg, "known", func(ctx context.Context, m *Message[item]) error { return nil }); err != nil {
		t.Fatal(err)
	}
	forged := []string{"evil\x1b]0;pwned\x07\x1b[2J\r"}
	for i := range 20 {
		forged = append(forged, fmt.Sprintf("junk-%02d-%s", i, strings.Repeat("x", 200)))
	}
	for _, k := range forged {
		b.enqueue(k, "f", 1)
	}
	cfg := b.config(reg)
	cfg.MaxDequeueCount = 1
	w := b.worker(cfg)
	if err := w.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	queue := telemetry.KeyQueue.String(b.name)
	var kinds []string
	eventually(t, "the forged deliveries recorded", func() bool {
		kinds = kinds[:0]
		rm := telemetrytest.Metrics(t)
		for _, sm := range rm.ScopeMetrics {
			for _, m := range sm.Metrics {
				h, ok := m.Data.(metricdata.Histogram[float64])
				if m.Name != MetricHandlerDuration || !ok {
					continue
				}
				for _, dp := range h.DataPoints {
					if !telemetrytest.HasAll(dp.Attributes.ToSlice(), queue) {
						continue
					}
					if v, ok := dp.Attributes.Value(telemetry.KeyKind); ok {
						kinds = append(kinds, v.AsString())
					}
				}
			}
		}
		return len(kinds) >= len(forged) || w.Stats().Failed >= int64(len(forged))
	})
	var bad []string
	for _, k := range kinds {
		if k != "known" && k != UnregisteredKind { // the one fixed value the expectation allows
			bad = append(bad, fmt.Sprintf("%q", k[:min(len(k), 24)]))
		}
	}
	if len(bad) > 0 {
		t.Fatalf("%d metric series carry kinds from the queue that no handler has: %s ...", len(bad), strings.Join(bad[:min(len(bad), 3)], ", "))
	}
}
