package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.uber.org/zap"

	"github.com/tablepatterns/tablepatterns/internal/errs"
	"github.com/tablepatterns/tablepatterns/internal/version"
	"github.com/tablepatterns/tablepatterns/queueworker/cmd/archiver/app"
)

// The exporters live in the binary, not in package app: programs that embed app (the
// demo) and the library packages depend on the OpenTelemetry API only.
func init() { app.SetTelemetry(startTelemetry) }

// serviceName is the default service.name of the archiver's telemetry
// (OTEL_SERVICE_NAME replaces it).
const serviceName = "archiver"

// startTelemetry installs the OpenTelemetry SDK's tracer and meter providers as the
// global ones, exporting as cfg asks: OTLP over HTTP (traces and metrics, configured by
// the OTEL_EXPORTER_OTLP_* variables) and/or a Prometheus endpoint. The resource names
// the service, its version and the SDK, plus OTEL_SERVICE_NAME and
// OTEL_RESOURCE_ATTRIBUTES: nothing of the storage account's configuration.
func startTelemetry(ctx context.Context, cfg app.TelemetryConfig) (func(context.Context) error, error) {
	if cfg.Exporter == app.ExporterOTLP {
		if err := checkProtocol(os.Getenv); err != nil {
			return nil, err
		}
	}
	logger := cfg.Logger
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) {
		logger.Warn("telemetry: export failed", errs.LogField(err))
	}))
	res, err := resource.New(ctx,
		resource.WithAttributes(attribute.String("service.name", serviceName), attribute.String("service.version", version.Version)),
		resource.WithTelemetrySDK(),
		resource.WithFromEnv(), // after the defaults, so that OTEL_SERVICE_NAME wins
	)
	switch {
	case res == nil:
		return nil, err
	case err != nil: // a partial resource: its detectors disagreed, or one failed
		logger.Warn("telemetry: resource incomplete", errs.LogField(err))
	}
	var stops []func(context.Context) error
	stop := func(ctx context.Context) error {
		var all []error
		for i := len(stops) - 1; i >= 0; i-- {
			all = append(all, stops[i](ctx))
		}
		return errors.Join(all...)
	}
	var readers []sdkmetric.Option
	if cfg.Exporter == app.ExporterOTLP {
		spans, err := otlptracehttp.New(ctx)
		if err != nil {
			return nil, err
		}
		tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(spans), sdktrace.WithResource(res))
		stops = append(stops, tp.Shutdown)
		otel.SetTracerProvider(tp)
		otel.SetTextMapPropagator(propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}))
		metrics, err := otlpmetrichttp.New(ctx)
		if err != nil {
			_ = stop(ctx)
			return nil, err
		}
		readers = append(readers, sdkmetric.WithReader(sdkmetric.NewPeriodicReader(metrics)))
	}
	if cfg.MetricsAddr != "" {
		reg := prometheus.NewRegistry()
		reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
		exp, err := otelprom.New(otelprom.WithRegisterer(reg))
		if err != nil {
			_ = stop(ctx)
			return nil, err
		}
		readers = append(readers, sdkmetric.WithReader(exp))
		ln, err := net.Listen("tcp", cfg.MetricsAddr)
		if err != nil {
			_ = stop(ctx)
			return nil, err
		}
		mux := http.NewServeMux()
		mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
		srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
		go func() { _ = srv.Serve(ln) }() // ends with Shutdown
		stops = append(stops, srv.Shutdown)
		logger.Info("metrics endpoint", zap.String("url", "http://"+ln.Addr().String()+"/metrics"))
	}
	// The meter provider is shut down before the endpoint (stops run in reverse): its
	// shutdown makes the periodic reader's last export.
	mp := sdkmetric.NewMeterProvider(append(readers, sdkmetric.WithResource(res))...)
	stops = append(stops, mp.Shutdown)
	otel.SetMeterProvider(mp)
	return stop, nil
}

// checkProtocol refuses an OTLP protocol other than the one the archiver speaks
// (http/protobuf): the exporters would ignore OTEL_EXPORTER_OTLP_PROTOCOL=grpc and send
// HTTP to a gRPC port.
func checkProtocol(getenv func(string) string) error {
	for _, name := range []string{"OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL"} {
		if v := getenv(name); v != "" && v != "http/protobuf" {
			return fmt.Errorf("%s=%q: the archiver exports OTLP over HTTP with protobuf only (http/protobuf)", name, v)
		}
	}
	return nil
}
