package queueworker

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/tablepatterns/tablepatterns/internal/telemetry"
	"github.com/tablepatterns/tablepatterns/internal/telemetry/telemetrytest"
)

// The envelope's kind is untrusted (whoever can add a message to the queue writes it),
// yet it becomes the tablepatterns.message.kind attribute of the handler-duration
// histogram for every delivery, including kinds with no handler. Each forged kind is a
// new series kept for the life of the process (on the archiver's Prometheus page and in
// OTLP), and its text, control characters and terminal escapes included, is exported
// as is. Expected: only registered kinds (or one fixed value for the rest) as metric
// attributes. (The check first accepted "known" only, refusing the fixed value its own
// expectation allows: it now accepts UnregisteredKind too.)
func TestAttackForgedKindsBecomeMetricSeries(t *testing.T) {
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
	eventually(t, 20*time.Second, "the forged deliveries recorded", func() bool {
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
