package bench

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	"github.com/lathe-tools/lathe"
	"github.com/lathe-tools/lathe/runtime/builtin"
	"github.com/lathe-tools/lathe/telemetry"
	"github.com/lathe-tools/lathe/tool"
)

// BenchmarkTelemetry is the cost of package telemetry's stages on a builtin
// call (BenchmarkBuiltin's search, one caller), each case as a ratio to
// the same call on an engine without telemetry, in the same run:
//
//   - exporter=unset: what lathe does when no OTEL_* variable asks for an
//     exporter and nothing serves /metrics: telemetry.Setup is not
//     Enabled and the engine gets none of its stages.
//   - providers=noop: the stages with OpenTelemetry's no-op providers (a
//     library that installs the stages and no SDK).
//   - prometheus-only: metrics for a Prometheus reader, no spans (lathe
//     serve --http with /metrics and no OTEL_* exporter).
//   - sdk/no-exporter: the SDK's tracer and meter providers with nothing to
//     export to: spans are made, sampled and dropped; metrics aggregated.
//   - sdk/otlp+prometheus: spans batched and exported over OTLP/HTTP to an
//     in-process receiver, and metrics aggregated for a Prometheus reader.
func BenchmarkTelemetry(b *testing.B) {
	for _, c := range []struct {
		name string
		tel  func(b *testing.B) *telemetry.Telemetry
	}{
		{"exporter=unset", func(b *testing.B) *telemetry.Telemetry {
			s, err := telemetry.FromEnvironment(context.Background(), telemetry.Config{Getenv: func(string) string { return "" }})
			if err != nil {
				b.Fatal(err)
			}
			t, err := s.New(telemetry.Options{})
			if err != nil {
				b.Fatal(err)
			}
			if t != nil {
				b.Fatal("telemetry made with no exporter and no Prometheus handler")
			}
			return nil
		}},
		{"providers=noop", func(b *testing.B) *telemetry.Telemetry {
			return mustTelemetry(b, telemetry.Options{TracerProvider: tracenoop.NewTracerProvider(),
				MeterProvider: metricnoop.NewMeterProvider()})
		}},
		{"prometheus-only", func(b *testing.B) *telemetry.Telemetry {
			r, _, err := telemetry.Prometheus()
			if err != nil {
				b.Fatal(err)
			}
			mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(r))
			b.Cleanup(func() { mp.Shutdown(context.Background()) })
			return mustTelemetry(b, telemetry.Options{TracerProvider: tracenoop.NewTracerProvider(), MeterProvider: mp})
		}},
		{"sdk/no-exporter", func(b *testing.B) *telemetry.Telemetry {
			tp := sdktrace.NewTracerProvider()
			mp := sdkmetric.NewMeterProvider()
			b.Cleanup(func() { tp.Shutdown(context.Background()); mp.Shutdown(context.Background()) })
			return mustTelemetry(b, telemetry.Options{TracerProvider: tp, MeterProvider: mp})
		}},
		{"sdk/otlp+prometheus", func(b *testing.B) *telemetry.Telemetry {
			col := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				io.Copy(io.Discard, r.Body)
				w.WriteHeader(200)
			}))
			b.Cleanup(col.Close)
			exp, err := otlptracehttp.New(context.Background(), otlptracehttp.WithEndpointURL(col.URL+"/v1/traces"))
			if err != nil {
				b.Fatal(err)
			}
			tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp, sdktrace.WithBatchTimeout(100*time.Millisecond)))
			r, _, err := telemetry.Prometheus()
			if err != nil {
				b.Fatal(err)
			}
			mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(r))
			b.Cleanup(func() { tp.Shutdown(context.Background()); mp.Shutdown(context.Background()) })
			return mustTelemetry(b, telemetry.Options{TracerProvider: tp, MeterProvider: mp})
		}},
	} {
		b.Run(c.name, func(b *testing.B) {
			base := newSearchEngine(b)
			var outer, inner []lathe.Middleware
			if t := c.tel(b); t != nil {
				outer, inner = t.Stages(nil, nil)
			}
			traced := lathe.New(lathe.Options{Outer: outer, Middleware: inner})
			b.Cleanup(func() { traced.Close() })
			if err := traced.Register(builtin.Must(builtin.Func(tool.Definition{Name: "search", Summary: "Search."}, search))); err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			call := func(e *lathe.Engine) func() {
				return func() {
					out := e.Call(ctx, &tool.Call{Name: "search", Arguments: fullArgs})
					if out.Result == nil || out.Result.IsError {
						b.Errorf("call failed: %+v", out)
					}
				}
			}
			compareTelemetry(b, call(base), call(traced))
		})
	}
}

func mustTelemetry(b *testing.B, o telemetry.Options) *telemetry.Telemetry {
	t, err := telemetry.New(o)
	if err != nil {
		b.Fatal(err)
	}
	return t
}

// compareTelemetry times base and traced in many short alternating rounds,
// and reports the median of the rounds' ratios beside the mean times: on a
// machine others share, a burst of their work lands in a few rounds, and
// the median leaves those out where a sum would not.
func compareTelemetry(b *testing.B, base, traced func()) {
	const rounds = 100
	base()
	traced()
	b.ReportAllocs()
	b.ResetTimer()
	var baseT, telT time.Duration
	ratios := make([]float64, 0, rounds)
	per := b.N/rounds + 1
	for i := range rounds {
		// Which goes first alternates, so that neither always follows a
		// pause of the other's making (a collection, the exporter's batch).
		var bt, tt time.Duration
		if i%2 == 0 {
			bt = timeOps(1, per, base)
			tt = timeOps(1, per, traced)
		} else {
			tt = timeOps(1, per, traced)
			bt = timeOps(1, per, base)
		}
		baseT += bt
		telT += tt
		ratios = append(ratios, float64(tt)/float64(bt))
	}
	b.StopTimer()
	slices.Sort(ratios)
	n := float64(per * rounds)
	b.ReportMetric(float64(baseT.Nanoseconds())/n, "base-ns/op")
	b.ReportMetric(float64(telT.Nanoseconds())/n, "telemetry-ns/op")
	b.ReportMetric(ratios[len(ratios)/2], "telemetry/base")
}
