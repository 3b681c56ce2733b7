package telemetry_test

import (
	"context"
	"testing"

	metricnoop "go.opentelemetry.io/otel/metric/noop"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/lathe-tools/lathe"
	"github.com/lathe-tools/lathe/policy"
	"github.com/lathe-tools/lathe/runtime/builtin"
	"github.com/lathe-tools/lathe/telemetry"
	"github.com/lathe-tools/lathe/tool"
)

// dropInner samples every span but the inner call's.
type dropInner struct{}

func (dropInner) ShouldSample(p sdktrace.SamplingParameters) sdktrace.SamplingResult {
	if p.Name == "execute_tool inner" {
		return sdktrace.SamplingResult{Decision: sdktrace.Drop}
	}
	return sdktrace.SamplingResult{Decision: sdktrace.RecordAndSample}
}

func (dropInner) Description() string { return "dropInner" }

// TestNestedUnsampledCall: a tool's own call of another tool that the
// sampler drops does not take the enclosing call's spans for its own: it
// adds no policy or run span to the enclosing call's trace.
func TestNestedUnsampledCall(t *testing.T) {
	spans := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans), sdktrace.WithSampler(dropInner{}))
	defer tp.Shutdown(context.Background())
	tel, err := telemetry.New(telemetry.Options{TracerProvider: tp, MeterProvider: metricnoop.NewMeterProvider()})
	if err != nil {
		t.Fatal(err)
	}
	allow := &policy.Policy{Rules: []policy.Rule{{Tool: "*", Approval: policy.Allow}}}
	outer, inner := tel.Stages(nil, []lathe.Middleware{policy.Middleware(allow, policy.Options{})})
	e := lathe.New(lathe.Options{Outer: outer, Middleware: inner})
	defer e.Close()
	ran := false
	e.Register(
		builtin.Must(builtin.Func(tool.Definition{Name: "inner"}, func(context.Context, struct{}) (string, error) {
			ran = true
			return "in", nil
		})),
		builtin.Must(builtin.Func(tool.Definition{Name: "outer"}, func(ctx context.Context, _ struct{}) (string, error) {
			out := e.Call(ctx, &tool.Call{Name: "inner"})
			if out.Result == nil || out.Result.IsError {
				t.Errorf("inner call failed: %+v", out)
			}
			return "out", nil
		})))
	e.Call(context.Background(), &tool.Call{Name: "outer"})
	if !ran {
		t.Fatal("the inner tool did not run")
	}
	count := map[string]int{}
	for _, s := range spans.GetSpans() {
		count[s.Name]++
	}
	if count["lathe.policy"] != 1 || count["lathe.run outer"] != 1 || count["lathe.run inner"] != 0 || count["execute_tool outer"] != 1 {
		t.Errorf("spans %v, want the outer call's alone", count)
	}
}

// TestNestedCallIsNotTheClients: a call a tool makes while serving a
// client's tools/call is a child of the tool's run, not a second call of
// the client's.
func TestNestedCallIsNotTheClients(t *testing.T) {
	spans := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans))
	defer tp.Shutdown(context.Background())
	tel, err := telemetry.New(telemetry.Options{TracerProvider: tp, MeterProvider: metricnoop.NewMeterProvider()})
	if err != nil {
		t.Fatal(err)
	}
	outer, inner := tel.Stages(nil, nil)
	e := lathe.New(lathe.Options{Outer: outer, Middleware: inner})
	defer e.Close()
	e.Register(
		builtin.Must(builtin.Func(tool.Definition{Name: "inner"}, func(context.Context, struct{}) (string, error) { return "in", nil })),
		builtin.Must(builtin.Func(tool.Definition{Name: "outer"}, func(ctx context.Context, _ struct{}) (string, error) {
			e.Call(ctx, &tool.Call{Name: "inner"})
			return "out", nil
		})))
	ctx := lathe.WithInbound(context.Background(), lathe.Inbound{Method: "tools/call",
		Trace: lathe.TraceContext{Parent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}})
	e.Call(ctx, &tool.Call{Name: "outer"})
	byName := map[string]tracetest.SpanStub{}
	for _, s := range spans.GetSpans() {
		byName[s.Name] = s
	}
	o, ok1 := byName["execute_tool outer"]
	i, ok2 := byName["execute_tool inner"]
	run, ok3 := byName["lathe.run outer"]
	if !ok1 || !ok2 || !ok3 {
		t.Fatalf("spans %v", byName)
	}
	if o.SpanKind.String() != "server" || i.SpanKind.String() != "internal" {
		t.Errorf("kinds: outer %v, inner %v; want server and internal", o.SpanKind, i.SpanKind)
	}
	if i.Parent.SpanID() != run.SpanContext.SpanID() {
		t.Errorf("the inner call's parent is %v, want the outer run %v", i.Parent.SpanID(), run.SpanContext.SpanID())
	}
	for _, kv := range i.Attributes {
		if kv.Key == "mcp.method.name" {
			t.Errorf("the inner call claims the client's method: %v", kv.Value.Emit())
		}
	}
}
