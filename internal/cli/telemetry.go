package cli

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/lathe-tools/lathe"
	"github.com/lathe-tools/lathe/config"
	"github.com/lathe-tools/lathe/server"
	"github.com/lathe-tools/lathe/tool"
)

// Telemetry is what the CLI asks of telemetry: stages for the engine, a
// /metrics handler for lathe serve --http, and a flush at the end. The
// CLI does not import OpenTelemetry itself, so that programs that embed it
// (package cli) do not compile it unless they ask: package cli/otelcli
// provides it with package telemetry, and lathe's own command imports that.
type Telemetry interface {
	// Stages puts telemetry's stages around the engine's own, with what
	// the configuration's [telemetry] table allows spans to carry;
	// profile names the sandbox profile a tool runs under ("" for none).
	Stages(cfg *config.Config, profile func(*tool.Definition) string, outer, inner []lathe.Middleware) ([]lathe.Middleware, []lathe.Middleware, error)
	// Metrics serves the metrics in Prometheus's text format; nil when
	// they were not asked for.
	Metrics() http.Handler
	// Shutdown exports what is left and stops the exporters.
	Shutdown(ctx context.Context) error
}

// TelemetryFactory makes a command's telemetry: metrics says the command
// serves /metrics. A nil Telemetry means nothing is traced or measured.
type TelemetryFactory func(ctx context.Context, metrics bool, version string) (Telemetry, error)

var (
	telemetryMu      sync.Mutex
	telemetryFactory TelemetryFactory
)

// SetTelemetry makes f the maker of every later command's telemetry (as
// package cli/otelcli does when imported); nil makes none.
func SetTelemetry(f TelemetryFactory) {
	telemetryMu.Lock()
	telemetryFactory = f
	telemetryMu.Unlock()
}

// telemetryFlushTimeout bounds the wait, as a command ends, for the spans
// still to be exported: a collector that is down delays the exit by no more.
const telemetryFlushTimeout = 5 * time.Second

// telemetryStages returns the loader's hook that puts telemetry's stages
// into the engine, when the OTEL_* variables ask for an exporter or the
// command serves /metrics (g.metrics); nil when nothing is traced or
// measured, so that calls pay nothing for telemetry then.
func (g *globals) telemetryStages(ctx context.Context) (func(*config.Config, []lathe.Middleware, []lathe.Middleware) ([]lathe.Middleware, []lathe.Middleware, error), error) {
	telemetryMu.Lock()
	f := telemetryFactory
	telemetryMu.Unlock()
	if f == nil {
		return nil, nil
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.telMade {
		t, err := f(ctx, g.metrics, version())
		if err != nil {
			return nil, fmt.Errorf("telemetry: %w", err)
		}
		g.tel, g.telMade = t, true
	}
	if g.tel == nil {
		return nil, nil
	}
	t := g.tel
	return func(cfg *config.Config, outer, inner []lathe.Middleware) ([]lathe.Middleware, []lathe.Middleware, error) {
		profile := func(def *tool.Definition) string {
			p, _, _ := profileOf(cfg, *def)
			return p
		}
		return t.Stages(cfg, profile, outer, inner)
	}, nil
}

// metricsMount returns the /metrics handler of lathe serve --http, behind
// the serve token: the metrics name the tools and how their calls end,
// which is not everyone's to read. Over a Unix socket without a token, only
// its owner reaches it anyway. Nil unless g.metrics asked for it.
func (g *globals) metricsMount(token string) http.Handler {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.tel == nil {
		return nil
	}
	m := g.tel.Metrics()
	if m == nil || token == "" {
		return m
	}
	return server.RequireToken(token, m)
}

// closeTelemetry exports what is left and stops the exporters.
func (g *globals) closeTelemetry() {
	g.mu.Lock()
	t := g.tel
	g.tel = nil
	g.mu.Unlock()
	if t == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), telemetryFlushTimeout)
	defer cancel()
	if err := t.Shutdown(ctx); err != nil {
		fmt.Fprintln(g.streams.Err, "lathe: telemetry:", err)
	}
}
