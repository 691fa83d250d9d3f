package app

import (
	"context"
	"flag"
	"net"
	"reflect"
	"strconv"
	"sync"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/tracing/azotel"
	"go.opentelemetry.io/otel"
	"go.uber.org/zap"

	"github.com/tablepatterns/tablepatterns/internal/errs"
)

// telemetryUsage documents the telemetry and progress flags of `archiver run`.
const telemetryUsage = `
Telemetry and progress (run):
  -otel EXPORTER              otlp or none (default none): export traces and metrics with
                              OTLP over HTTP (http/protobuf), configured by the standard
                              OTEL_EXPORTER_OTLP_* variables (endpoint, headers, timeout,
                              ...; default http://localhost:4318); OTEL_SERVICE_NAME and
                              OTEL_RESOURCE_ATTRIBUTES name the process (default archiver)
  -metrics-addr HOST:PORT     serve the metrics for Prometheus at http://HOST:PORT/metrics
                              (no authentication: bind to a private address, e.g.
                              127.0.0.1:9464; the host is required: 0.0.0.0 or [::]
                              for every interface)
  -progress auto|off|DURATION how often long archive-table and restore-table jobs report
                              the progress of each phase (export, verify, delete,
                              restore): a line on a terminal, a log entry otherwise
                              (default auto: every 2s on a terminal, 30s otherwise)
Exporters are flushed when the archiver stops, after SIGINT/SIGTERM too.
`

// Exporters of -otel.
const (
	ExporterNone = "none"
	ExporterOTLP = "otlp"
)

// TelemetryConfig is what the telemetry flags of `archiver run` ask for.
type TelemetryConfig struct {
	// Exporter is ExporterOTLP or ExporterNone (-otel).
	Exporter string
	// MetricsAddr is the host:port of the Prometheus endpoint (-metrics-addr), "" for none.
	MetricsAddr string
	// Logger is the archiver's logger, for the exporters' own errors.
	Logger *zap.Logger
}

// enabled reports whether c asks for any exporter.
func (c TelemetryConfig) enabled() bool { return c.Exporter == ExporterOTLP || c.MetricsAddr != "" }

// TelemetryStarter installs OpenTelemetry SDK providers that export what cfg asks for as
// the global tracer and meter providers, and returns the function that flushes and stops
// them (within its context's deadline). It must not put credentials into resource
// attributes or logs.
type TelemetryStarter func(ctx context.Context, cfg TelemetryConfig) (shutdown func(context.Context) error, err error)

var (
	telemetryMu      sync.Mutex
	telemetryStarter TelemetryStarter
)

// SetTelemetry registers the exporters of the archiver binary (its main package does,
// at init). The app package itself links no OpenTelemetry SDK or exporter, so that
// programs that embed it, such as the demo, do not carry them: without a starter,
// `run -otel otlp` and `-metrics-addr` are refused as a bad command line.
func SetTelemetry(s TelemetryStarter) {
	telemetryMu.Lock()
	defer telemetryMu.Unlock()
	telemetryStarter = s
}

// telemetryFlushTimeout bounds the final flush of the exporters when the archiver stops.
const telemetryFlushTimeout = 10 * time.Second

// observeFlags are the flags of run that choose exporters and progress reports.
type observeFlags struct {
	exporter, metricsAddr string
	progress              progressFlag
}

func (f *observeFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.exporter, "otel", ExporterNone, "")
	fs.StringVar(&f.metricsAddr, "metrics-addr", "", "")
	fs.Var(&f.progress, "progress", "")
}

// validate checks the flags before anything is started.
func (f *observeFlags) validate() error {
	switch f.exporter {
	case ExporterNone, ExporterOTLP:
	default:
		return usagef("-otel %q: want otlp or none", f.exporter)
	}
	if f.metricsAddr != "" {
		host, port, err := net.SplitHostPort(f.metricsAddr)
		if n, perr := strconv.Atoi(port); err != nil || perr != nil || n < 0 || n > 65535 {
			return usagef("-metrics-addr %q: want HOST:PORT (127.0.0.1:9464)", f.metricsAddr)
		}
		// The page has no authentication: an address without a host (":9464") would
		// listen on every interface. Every interface must be asked for by name.
		if host == "" {
			return usagef("-metrics-addr %q names no host, which would listen on every interface (the page has no authentication): want 127.0.0.1:%s, or 0.0.0.0:%s to mean every interface", f.metricsAddr, port, port)
		}
	}
	cfg := TelemetryConfig{Exporter: f.exporter, MetricsAddr: f.metricsAddr}
	telemetryMu.Lock()
	defer telemetryMu.Unlock()
	if cfg.enabled() && telemetryStarter == nil {
		return usagef("-otel and -metrics-addr need the archiver binary (queueworker/cmd/archiver): this program was built without telemetry exporters")
	}
	return nil
}

// start starts the exporters the flags ask for and returns the function that flushes
// and stops them; it waits for the flush at most telemetryFlushTimeout, even when ctx
// has ended (a signal).
func (f *observeFlags) start(ctx context.Context, logger *zap.Logger) (stop func(), err error) {
	cfg := TelemetryConfig{Exporter: f.exporter, MetricsAddr: f.metricsAddr, Logger: logger}
	if !cfg.enabled() {
		return func() {}, nil
	}
	telemetryMu.Lock()
	starter := telemetryStarter
	telemetryMu.Unlock()
	shutdown, err := starter(ctx, cfg)
	if err != nil {
		return nil, err
	}
	return func() {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), telemetryFlushTimeout)
		defer cancel()
		if err := shutdown(sctx); err != nil {
			logger.Warn("telemetry: flush on exit failed", errs.LogField(err))
		}
	}, nil
}

// traced returns o with the Azure SDK's tracing through OpenTelemetry's global tracer
// provider (azotel), unless o already has a tracing provider: every request of the
// archiver is then a span under the job's span. Without exporters the global provider
// is a no-op.
func traced(o policy.ClientOptions) policy.ClientOptions {
	if reflect.ValueOf(o.TracingProvider).IsZero() {
		o.TracingProvider = azotel.NewTracingProvider(otel.GetTracerProvider(), nil)
	}
	return o
}
