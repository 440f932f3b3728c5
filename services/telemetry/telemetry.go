// Package telemetry sets up OpenTelemetry for ferry: a tracer provider (OTLP over HTTP when the standard
// OTEL_EXPORTER_OTLP_* variables name an endpoint; otherwise spans are not recorded unless OTEL_TRACES_SAMPLER
// asks for it), a meter
// provider read by the Prometheus exporter behind GET /metrics (and pushed by OTLP when configured), the W3C
// propagator, and ferry's instruments.
package telemetry

import (
	"context"
	"errors"
	"net/http"
	"os"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.26.0"
	"go.opentelemetry.io/otel/trace"
)

// Telemetry holds the providers, the Prometheus handler and ferry's instruments.
type Telemetry struct {
	TracerProvider *sdktrace.TracerProvider
	MeterProvider  *sdkmetric.MeterProvider
	Tracer         trace.Tracer
	Meter          metric.Meter
	Instruments    *Instruments
	registry       *prometheus.Registry
	// Recording: spans are recorded (an exporter is configured, or OTEL_TRACES_SAMPLER asks for them).
	Recording bool
}

// Option adjusts Setup.
type Option func(*options)

type options struct {
	readers []sdkmetric.Reader
}

// WithMetricReader adds a reader of every metric beside the Prometheus exporter (tests read the instruments'
// descriptions and units through a ManualReader).
func WithMetricReader(r sdkmetric.Reader) Option {
	return func(o *options) { o.readers = append(o.readers, r) }
}

// Setup builds the providers and installs them as the OTel globals.
func Setup(ctx context.Context, serviceName, version string, opts ...Option) (*Telemetry, error) {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	res, err := resource.Merge(resource.Default(), resource.NewSchemaless(
		semconv.ServiceName(serviceName), semconv.ServiceVersion(version)))
	if err != nil {
		res = resource.Default()
	}

	traceOpts := []sdktrace.TracerProviderOption{sdktrace.WithResource(res)}
	recording := true
	if otlpConfigured("TRACES") {
		exp, err := otlptracehttp.New(ctx)
		if err != nil {
			return nil, err
		}
		traceOpts = append(traceOpts, sdktrace.WithBatcher(exp))
	} else if os.Getenv("OTEL_TRACES_SAMPLER") == "" {
		// Nowhere to send spans: do not record them (recording every request's spans to drop them cost ~7 % of
		// the data plane's CPU). Spans still carry trace and span ids, so trace context still propagates from
		// producers to consumers through the messages.
		traceOpts = append(traceOpts, sdktrace.WithSampler(sdktrace.NeverSample()))
		recording = false
	}
	tp := sdktrace.NewTracerProvider(traceOpts...)

	registry := prometheus.NewRegistry()
	registry.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	// Every instrument comes from one meter, so the scope labels (otel_scope_*) would say nothing.
	promExporter, err := otelprom.New(otelprom.WithRegisterer(registry), otelprom.WithoutScopeInfo())
	if err != nil {
		return nil, err
	}
	meterOpts := []sdkmetric.Option{sdkmetric.WithResource(res), sdkmetric.WithReader(promExporter)}
	for _, r := range o.readers {
		meterOpts = append(meterOpts, sdkmetric.WithReader(r))
	}
	if otlpConfigured("METRICS") {
		exp, err := otlpmetrichttp.New(ctx)
		if err != nil {
			return nil, err
		}
		meterOpts = append(meterOpts, sdkmetric.WithReader(sdkmetric.NewPeriodicReader(exp)))
	}
	mp := sdkmetric.NewMeterProvider(meterOpts...)

	otel.SetTracerProvider(tp)
	otel.SetMeterProvider(mp)
	otel.SetTextMapPropagator(propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}))

	t := &Telemetry{
		TracerProvider: tp,
		MeterProvider:  mp,
		Tracer:         tp.Tracer("github.com/ferry-mq/ferry"),
		Meter:          mp.Meter("github.com/ferry-mq/ferry"),
		registry:       registry,
		Recording:      recording,
	}
	if t.Instruments, err = newInstruments(t.Meter); err != nil {
		return nil, err
	}
	return t, nil
}

// MetricsHandler serves the Prometheus exposition format: every instrument, the Go runtime's and the process's
// metrics.
func (t *Telemetry) MetricsHandler() http.Handler {
	return promhttp.HandlerFor(t.registry, promhttp.HandlerOpts{})
}

// Shutdown flushes and stops the providers.
func (t *Telemetry) Shutdown(ctx context.Context) error {
	return errors.Join(t.TracerProvider.Shutdown(ctx), t.MeterProvider.Shutdown(ctx))
}

func otlpConfigured(signal string) bool {
	return os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || os.Getenv("OTEL_EXPORTER_OTLP_"+signal+"_ENDPOINT") != ""
}

// Attr shortens attribute construction at call sites.
func Attr(key, value string) attribute.KeyValue { return attribute.String(key, value) }
