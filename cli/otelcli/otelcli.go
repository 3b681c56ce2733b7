// Package otelcli gives lathe's command line OpenTelemetry, with package
// telemetry: imported for its effect, it makes every command trace and
// measure its calls as the OTEL_* environment variables say, and lathe
// serve --http serve /metrics.
//
//	import _ "github.com/lathe-tools/lathe/cli/otelcli"
//
// lathe's own command imports it. A program that embeds the command line
// (package cli) without it compiles no OpenTelemetry.
package otelcli

import (
	"context"
	"fmt"
	"net/http"

	"github.com/lathe-tools/lathe"
	"github.com/lathe-tools/lathe/config"
	internal "github.com/lathe-tools/lathe/internal/cli"
	"github.com/lathe-tools/lathe/telemetry"
	"github.com/lathe-tools/lathe/tool"
)

func init() { internal.SetTelemetry(newTelemetry) }

// setup is a command's telemetry.
type setup struct{ s *telemetry.Setup }

func newTelemetry(ctx context.Context, metrics bool, version string) (internal.Telemetry, error) {
	s, err := telemetry.FromEnvironment(ctx, telemetry.Config{Prometheus: metrics, ServiceVersion: version})
	if err != nil {
		return nil, err
	}
	if !s.Enabled() {
		return nil, nil
	}
	return setup{s}, nil
}

// Stages makes the telemetry of the configuration's [telemetry] table and
// puts its stages around the engine's.
func (t setup) Stages(cfg *config.Config, profile func(*tool.Definition) string, outer, inner []lathe.Middleware) ([]lathe.Middleware, []lathe.Middleware, error) {
	tel, err := t.s.New(telemetry.Options{Arguments: cfg.Telemetry.Arguments, Results: cfg.Telemetry.Results,
		MaxBytes: cfg.Telemetry.MaxBytes, Sandbox: profile})
	if err != nil {
		return nil, nil, fmt.Errorf("telemetry: %w", err)
	}
	o, i := tel.Stages(outer, inner)
	return o, i, nil
}

func (t setup) Metrics() http.Handler { return t.s.Metrics }

func (t setup) Shutdown(ctx context.Context) error { return t.s.Shutdown(ctx) }
