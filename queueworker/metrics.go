package queueworker

import (
	"context"
	"errors"
	"time"

	"go.opentelemetry.io/otel/metric"

	"github.com/tablepatterns/tablepatterns/internal/telemetry"
)

// The OpenTelemetry metrics of a worker (meter "github.com/tablepatterns/tablepatterns" of
// the global meter provider). Every one carries messaging.destination.name (the queue);
// the handler duration also tablepatterns.message.kind and tablepatterns.outcome (ok,
// failed, cancelled, snoozed). The counters are the worker's Stats, observed from its first
// Run for the rest of the Worker's life (after Run returns they keep their final values, so
// a flush at exit exports them).
const (
	MetricHandlerDuration = "tablepatterns.queueworker.handler.duration"
	MetricProcessed       = "tablepatterns.queueworker.messages.processed"
	MetricFailed          = "tablepatterns.queueworker.messages.failed"
	MetricRetried         = "tablepatterns.queueworker.messages.retried"
	MetricPoisoned        = "tablepatterns.queueworker.messages.poisoned"
	MetricLost            = "tablepatterns.queueworker.locks.lost"
	MetricRenewals        = "tablepatterns.queueworker.lock.renewals"
	MetricInFlight        = "tablepatterns.queueworker.in_flight"
)

// metrics are a worker's instruments. Instruments of the global provider delegate to
// whatever provider the application sets later, so they are created once, at New.
type metrics struct {
	duration                                            metric.Float64Histogram
	processed, failed, retried, poisoned, lost, renewed metric.Int64ObservableCounter
	inFlight                                            metric.Int64ObservableUpDownCounter
}

func newMetrics() *metrics {
	m := telemetry.Meter()
	var x metrics
	// Errors from instrument creation only report invalid names or units, which are
	// constants here; the instruments returned are usable (no-op) either way.
	x.duration, _ = m.Float64Histogram(MetricHandlerDuration, metric.WithUnit("s"),
		metric.WithDescription("How long handlers ran, by message kind and outcome."))
	x.processed, _ = m.Int64ObservableCounter(MetricProcessed, metric.WithUnit("{message}"),
		metric.WithDescription("Messages handled successfully and deleted."))
	x.failed, _ = m.Int64ObservableCounter(MetricFailed, metric.WithUnit("{delivery}"),
		metric.WithDescription("Deliveries whose handler returned an error or panicked."))
	x.retried, _ = m.Int64ObservableCounter(MetricRetried, metric.WithUnit("{message}"),
		metric.WithDescription("Failed messages released for another delivery."))
	x.poisoned, _ = m.Int64ObservableCounter(MetricPoisoned, metric.WithUnit("{message}"),
		metric.WithDescription("Messages moved to the poison queue."))
	x.lost, _ = m.Int64ObservableCounter(MetricLost, metric.WithUnit("{delivery}"),
		metric.WithDescription("Deliveries whose lock was lost while the handler ran."))
	x.renewed, _ = m.Int64ObservableCounter(MetricRenewals, metric.WithUnit("{renewal}"),
		metric.WithDescription("Lock renewals that succeeded."))
	x.inFlight, _ = m.Int64ObservableUpDownCounter(MetricInFlight, metric.WithUnit("{handler}"),
		metric.WithDescription("Handlers running now."))
	return &x
}

// observe registers the callback that reports w's counters, for the life of the meter
// provider.
func (x *metrics) observe(w *Worker) {
	attrs := metric.WithAttributes(telemetry.KeyQueue.String(w.queueName))
	// An error reports an invalid instrument, and the instruments are constants here.
	_, _ = telemetry.Meter().RegisterCallback(func(_ context.Context, o metric.Observer) error {
		s := w.Stats()
		o.ObserveInt64(x.processed, s.Processed, attrs)
		o.ObserveInt64(x.failed, s.Failed, attrs)
		o.ObserveInt64(x.retried, s.Retried, attrs)
		o.ObserveInt64(x.poisoned, s.Poisoned, attrs)
		o.ObserveInt64(x.lost, s.Lost, attrs)
		o.ObserveInt64(x.renewed, s.Renewed, attrs)
		o.ObserveInt64(x.inFlight, s.InFlight, attrs)
		return nil
	}, x.processed, x.failed, x.retried, x.poisoned, x.lost, x.renewed, x.inFlight)
}

// recordHandler records one handler run.
func (x *metrics) recordHandler(ctx context.Context, queue, kind string, d time.Duration, err error) {
	outcome := "ok"
	var snooze *SnoozeError
	var cancel *CancelError
	switch {
	case err == nil:
	case errors.As(err, &snooze):
		outcome = "snoozed"
	case errors.As(err, &cancel):
		outcome = "cancelled"
	default:
		outcome = "failed"
	}
	x.duration.Record(ctx, d.Seconds(), metric.WithAttributes(telemetry.KeyQueue.String(queue),
		telemetry.KeyKind.String(kind), telemetry.KeyOutcome.String(outcome)))
}
