package telemetry

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/contrib/exporters/autoexport"
	"go.opentelemetry.io/otel/attribute"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	"go.opentelemetry.io/otel/metric"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"
)

// Config configures [FromEnvironment].
type Config struct {
	// Prometheus asks for a handler that serves the metrics in Prometheus's
	// text format ([Setup].Metrics), as lathe serve --http does at /metrics.
	Prometheus bool
	// ServiceName names the service in what is exported when
	// OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES do not; empty means
	// "lathe". ServiceVersion is its version, if known.
	ServiceName, ServiceVersion string
	// Getenv reads the environment; nil means os.Getenv. The exporters
	// themselves read the process's environment (their endpoints, headers,
	// protocols): Getenv decides only whether there are exporters at all.
	Getenv func(string) string
}

// Setup is the telemetry [FromEnvironment] made, and what to shut down
// when the program ends.
type Setup struct {
	// TracerProvider and MeterProvider are those [Setup.New] uses: the
	// SDK's, feeding the exporters, or no-ops where nothing is exported;
	// nil when nothing is traced or measured at all.
	TracerProvider trace.TracerProvider
	MeterProvider  metric.MeterProvider
	// Metrics serves the metrics in Prometheus's text format; nil unless
	// [Config].Prometheus. It authenticates nobody: mount it behind
	// whatever guards the listener (server.RequireToken).
	Metrics http.Handler
	// Traces and MetricsExported say whether spans and metrics are exported
	// (by the OTLP or console exporter the environment names).
	Traces, MetricsExported bool

	shutdown []func(context.Context) error
}

// Enabled reports whether anything is traced or measured: an exporter, or
// a Prometheus handler. When not, an engine needs none of telemetry's
// stages, and pays nothing for them.
func (s *Setup) Enabled() bool { return s.TracerProvider != nil }

// New returns telemetry with opts that traces and measures with s's
// providers (those of opts are ignored); nil when nothing is traced or
// measured ([Setup.Enabled]).
func (s *Setup) New(opts Options) (*Telemetry, error) {
	if !s.Enabled() {
		return nil, nil
	}
	opts.TracerProvider, opts.MeterProvider = s.TracerProvider, s.MeterProvider
	return New(opts)
}

// Shutdown flushes what is still to be exported and stops the exporters;
// ctx bounds the wait.
func (s *Setup) Shutdown(ctx context.Context) error {
	var err error
	for _, f := range s.shutdown {
		err = errors.Join(err, f(ctx))
	}
	s.shutdown = nil
	return err
}

// FromEnvironment builds telemetry as the standard OpenTelemetry
// environment variables say. Nothing is exported unless they ask for it:
// spans when OTEL_TRACES_EXPORTER names an exporter other than "none", or,
// with it unset, when OTEL_EXPORTER_OTLP_ENDPOINT or
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is set; metrics likewise with
// OTEL_METRICS_EXPORTER and OTEL_EXPORTER_OTLP_METRICS_ENDPOINT.
// OTEL_SDK_DISABLED=true exports nothing. OTEL_METRICS_EXPORTER=prometheus
// is refused: it would listen without a token ([Config].Prometheus serves
// the metrics instead). The exporters read the rest
// (OTEL_EXPORTER_OTLP_PROTOCOL, _HEADERS, _TIMEOUT …; OTEL_TRACES_SAMPLER;
// OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES).
//
// Unless OTEL_TRACES_SAMPLER says otherwise, every call is sampled: a
// parent's "not sampled" flag that came from an MCP client does not hide
// the client's calls from lathe's traces.
func FromEnvironment(ctx context.Context, c Config) (*Setup, error) {
	getenv := c.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	s := &Setup{}
	disabled := strings.EqualFold(strings.TrimSpace(getenv("OTEL_SDK_DISABLED")), "true")
	traces := !disabled && wanted(getenv, "OTEL_TRACES_EXPORTER", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
	metrics := !disabled && wanted(getenv, "OTEL_METRICS_EXPORTER", "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT")
	if !traces && !metrics && !c.Prometheus {
		return s, nil
	}
	name := c.ServiceName
	if name == "" {
		name = "lathe"
	}
	attrs := []attribute.KeyValue{attribute.String("service.name", name)}
	if c.ServiceVersion != "" {
		attrs = append(attrs, attribute.String("service.version", c.ServiceVersion))
	}
	// The environment's resource comes last, so that it wins.
	res, err := resource.New(ctx, resource.WithAttributes(attrs...), resource.WithTelemetrySDK(), resource.WithFromEnv())
	if err != nil && res == nil {
		return nil, fmt.Errorf("telemetry: resource: %w", err)
	}
	fail := func(err error) (*Setup, error) {
		_ = s.Shutdown(context.WithoutCancel(ctx))
		return nil, err
	}
	if traces {
		exp, err := autoexport.NewSpanExporter(ctx)
		if err != nil {
			return fail(fmt.Errorf("telemetry: traces exporter (OTEL_TRACES_EXPORTER): %w", err))
		}
		topts := []sdktrace.TracerProviderOption{sdktrace.WithBatcher(exp), sdktrace.WithResource(res)}
		if getenv("OTEL_TRACES_SAMPLER") == "" {
			topts = append(topts, sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.AlwaysSample(),
				sdktrace.WithRemoteParentNotSampled(sdktrace.AlwaysSample()))))
		}
		tp := sdktrace.NewTracerProvider(topts...)
		s.shutdown = append(s.shutdown, tp.Shutdown)
		s.TracerProvider = tp
		s.Traces = true
	} else {
		s.TracerProvider = noopTracerProvider()
	}
	var readers []sdkmetric.Option
	if metrics {
		// The SDK's own Prometheus exporter would listen on a port of its
		// own, with no token, for every user of the machine to read.
		for _, v := range strings.Split(getenv("OTEL_METRICS_EXPORTER"), ",") {
			if strings.TrimSpace(v) == "prometheus" {
				return fail(errors.New("telemetry: OTEL_METRICS_EXPORTER=prometheus would serve the metrics without a token on a port of its own; " +
					"lathe serve --http serves them at /metrics behind its token instead"))
			}
		}
		r, err := autoexport.NewMetricReader(ctx)
		if err != nil {
			return fail(fmt.Errorf("telemetry: metrics exporter (OTEL_METRICS_EXPORTER): %w", err))
		}
		readers = append(readers, sdkmetric.WithReader(r))
		s.MetricsExported = true
	}
	if c.Prometheus {
		r, h, err := Prometheus()
		if err != nil {
			return fail(err)
		}
		readers = append(readers, sdkmetric.WithReader(r))
		s.Metrics = h
	}
	if len(readers) > 0 {
		mp := sdkmetric.NewMeterProvider(append(readers, sdkmetric.WithResource(res))...)
		s.shutdown = append(s.shutdown, mp.Shutdown)
		s.MeterProvider = mp
	} else {
		s.MeterProvider = noopMeterProvider()
	}
	return s, nil
}

// wanted says whether the environment asks for a signal's export: its
// exporter variable names one, or, unset, an OTLP endpoint is given.
func wanted(getenv func(string) string, exporter, endpoint string) bool {
	switch v := strings.TrimSpace(getenv(exporter)); v {
	case "none":
		return false
	case "":
		return getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || getenv(endpoint) != ""
	default:
		return true
	}
}

// Prometheus returns a metric reader for an SDK MeterProvider and the
// handler that serves what it reads in Prometheus's text format. Each call
// has a registry of its own, so that two engines in a process, or a test
// and its program, do not share series.
func Prometheus() (sdkmetric.Reader, http.Handler, error) {
	reg := prometheus.NewRegistry()
	r, err := otelprom.New(otelprom.WithRegisterer(reg), otelprom.WithoutScopeInfo())
	if err != nil {
		return nil, nil, fmt.Errorf("telemetry: prometheus: %w", err)
	}
	return r, promhttp.HandlerFor(reg, promhttp.HandlerOpts{}), nil
}

func noopTracerProvider() trace.TracerProvider { return tracenoop.NewTracerProvider() }

func noopMeterProvider() metric.MeterProvider { return metricnoop.NewMeterProvider() }
