package telemetry_test

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/lathe-tools/lathe"
	"github.com/lathe-tools/lathe/policy"
	"github.com/lathe-tools/lathe/runtime/builtin"
	"github.com/lathe-tools/lathe/runtime/mcp"
	"github.com/lathe-tools/lathe/server"
	"github.com/lathe-tools/lathe/telemetry"
	"github.com/lathe-tools/lathe/tool"
)

// Secrets put in a call's arguments and in its result: neither may reach
// the collector unless telemetry is told to record them.
const (
	secretArg    = "s3cret-argument-7f1c"
	secretResult = "s3cret-result-9a2e"
)

// collector is an in-process OTLP/HTTP receiver: it decodes the protobuf
// export requests the SDK's exporter sends, as a collector would.
type collector struct {
	srv   *httptest.Server
	mu    sync.Mutex
	raw   [][]byte
	spans []*tracepb.Span
	more  chan struct{}
}

func newCollector(t *testing.T) *collector {
	c := &collector{more: make(chan struct{}, 1)}
	c.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), 400)
			return
		}
		if r.URL.Path != "/v1/traces" {
			// Metrics and logs are accepted and kept for the leak check.
			c.mu.Lock()
			c.raw = append(c.raw, body)
			c.mu.Unlock()
			w.WriteHeader(200)
			return
		}
		var req coltrace.ExportTraceServiceRequest
		if err := proto.Unmarshal(body, &req); err != nil {
			t.Errorf("collector: undecodable export request: %v", err)
			http.Error(w, err.Error(), 400)
			return
		}
		c.mu.Lock()
		c.raw = append(c.raw, body)
		for _, rs := range req.ResourceSpans {
			for _, ss := range rs.ScopeSpans {
				c.spans = append(c.spans, ss.Spans...)
			}
		}
		c.mu.Unlock()
		select {
		case c.more <- struct{}{}:
		default:
		}
		out, _ := proto.Marshal(&coltrace.ExportTraceServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.Write(out)
	}))
	t.Cleanup(c.srv.Close)
	return c
}

// span finds the span named name, waiting up to 10s for it.
func (c *collector) span(t *testing.T, name string) *tracepb.Span {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		c.mu.Lock()
		for _, s := range c.spans {
			if s.Name == name {
				c.mu.Unlock()
				return s
			}
		}
		names := []string{}
		for _, s := range c.spans {
			names = append(names, s.Name)
		}
		c.mu.Unlock()
		select {
		case <-c.more:
		case <-deadline:
			t.Fatalf("the collector got no span %q in 10s; it has %v", name, names)
		}
	}
}

func (c *collector) allBytes() []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	return bytes.Join(c.raw, nil)
}

func attr(s *tracepb.Span, key string) (string, bool) {
	for _, kv := range s.Attributes {
		if kv.Key == key {
			if sv, ok := kv.Value.Value.(*commonpb.AnyValue_StringValue); ok {
				return sv.StringValue, true
			}
			b, _ := json.Marshal(kv.Value)
			return string(b), true
		}
	}
	return "", false
}

func wantAttr(t *testing.T, s *tracepb.Span, key, want string) {
	t.Helper()
	got, ok := attr(s, key)
	if !ok || got != want {
		t.Errorf("span %q: %s = %q (set: %v), want %q", s.Name, key, got, ok, want)
	}
}

func wantParent(t *testing.T, child, parent *tracepb.Span) {
	t.Helper()
	if !bytes.Equal(child.ParentSpanId, parent.SpanId) || !bytes.Equal(child.TraceId, parent.TraceId) {
		t.Errorf("span %q is not the child of %q: parent %x in trace %x, want %x in trace %x", child.Name, parent.Name,
			child.ParentSpanId, child.TraceId, parent.SpanId, parent.TraceId)
	}
}

// upstream is an in-process MCP server, over streamable HTTP, with a tool
// that echoes its argument and keeps the trace context its caller sent.
type upstream struct {
	url    string
	mu     sync.Mutex
	parent string
}

func newUpstream(t *testing.T) *upstream {
	u := &upstream{}
	srv := sdk.NewServer(&sdk.Implementation{Name: "up"}, nil)
	srv.AddTool(&sdk.Tool{Name: "echo", InputSchema: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}}}`)},
		func(_ context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			u.mu.Lock()
			u.parent, _ = req.Params.GetMeta()["traceparent"].(string)
			u.mu.Unlock()
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: secretResult}}}, nil
		})
	ts := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil))
	t.Cleanup(ts.Close)
	u.url = ts.URL
	return u
}

// exportTo points the OTLP exporter at c, through the standard variables.
func exportTo(t *testing.T, c *collector) {
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", c.srv.URL)
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf")
	t.Setenv("OTEL_METRICS_EXPORTER", "none")
	t.Setenv("OTEL_BSP_SCHEDULE_DELAY", "50")
}

// traced is an engine with telemetry from the environment, an ask rule
// for the upstream's tool answered by an approver, and the upstream's
// tools.
func traced(t *testing.T, opts telemetry.Options, up *upstream) (*lathe.Engine, *telemetry.Setup) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	setup, err := telemetry.FromEnvironment(ctx, telemetry.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if !setup.Traces {
		t.Fatal("FromEnvironment exports no spans though an OTLP endpoint is set")
	}
	tel, err := setup.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	p := &policy.Policy{Rules: []policy.Rule{{Tool: "up__echo", Approval: policy.Ask}}}
	approver := policy.ApproverFunc(func(context.Context, *policy.Request) (policy.Answer, error) {
		time.Sleep(5 * time.Millisecond)
		return policy.Answer{Verdict: policy.AllowOnce}, nil
	})
	outer, inner := tel.Stages(nil, []lathe.Middleware{policy.Middleware(p, policy.Options{Approver: approver})})
	e := lathe.New(lathe.Options{Outer: outer, Middleware: inner})
	t.Cleanup(func() { e.Close() })
	if up != nil {
		pool, err := mcp.Open(ctx, e, []mcp.Config{{Name: "up", URL: up.url, StartupTimeout: 10 * time.Second}}, mcp.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { pool.Close() })
	}
	if err := e.Register(builtin.Must(builtin.Func(tool.Definition{Name: "fail", Annotations: tool.Annotations{ReadOnlyHint: true}},
		func(context.Context, struct{}) (string, error) {
			return "", &tool.Error{Kind: tool.KindToolError, Message: "no"}
		}))); err != nil {
		t.Fatal(err)
	}
	return e, setup
}

// clientCall calls name through lathe's MCP server, from a go-sdk client
// whose own span is parent, with args.
func clientCall(t *testing.T, e *lathe.Engine, name, parent string, args map[string]any) *sdk.CallToolResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	srv := server.New(e, server.Options{})
	defer srv.Close()
	ct, st := sdk.NewInMemoryTransports()
	ss, err := srv.MCP().Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "client"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		cs.Close()
		ss.Wait()
	}()
	params := &sdk.CallToolParams{Name: name, Arguments: args}
	if parent != "" {
		params.Meta = sdk.Meta{"traceparent": parent}
	}
	res, err := cs.CallTool(ctx, params)
	if err != nil {
		t.Fatalf("tools/call %s: %v", name, err)
	}
	return res
}

const clientTrace = "4bf92f3577b34da6a3ce929d0e0e4736"
const clientSpan = "00f067aa0ba902b7"

// TestSpansAcrossMCPHop follows one call from an MCP client through lathe
// to an upstream MCP server, as an OTLP collector receives it: the call's
// span is the client's child, the policy's, approval's and run's spans
// are the call's, the request to the upstream is the run's, and the
// upstream gets that request's span as its parent. Neither the arguments
// nor the result leave.
func TestSpansAcrossMCPHop(t *testing.T) {
	c := newCollector(t)
	exportTo(t, c)
	up := newUpstream(t)
	e, setup := traced(t, telemetry.Options{}, up)

	res := clientCall(t, e, "up__echo", "00-"+clientTrace+"-"+clientSpan+"-01", map[string]any{"text": secretArg})
	if res.IsError || len(res.Content) == 0 || res.Content[0].(*sdk.TextContent).Text != secretResult {
		t.Fatalf("the call did not reach the upstream: %+v", res)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := setup.Shutdown(ctx); err != nil {
		t.Fatalf("flushing the exporter: %v", err)
	}

	call := c.span(t, "execute_tool up__echo")
	if hex.EncodeToString(call.TraceId) != clientTrace || hex.EncodeToString(call.ParentSpanId) != clientSpan {
		t.Errorf("call span: trace %x parent %x, want the client's %s/%s", call.TraceId, call.ParentSpanId, clientTrace, clientSpan)
	}
	if call.Kind != tracepb.Span_SPAN_KIND_SERVER {
		t.Errorf("call span kind %v, want server", call.Kind)
	}
	wantAttr(t, call, "gen_ai.operation.name", "execute_tool")
	wantAttr(t, call, "gen_ai.tool.name", "up__echo")
	wantAttr(t, call, "mcp.method.name", "tools/call")
	wantAttr(t, call, "lathe.outcome", "ok")
	wantAttr(t, call, "lathe.decision", "ask")
	if id, _ := attr(call, "gen_ai.tool.call.id"); !strings.HasPrefix(id, "mcp-") {
		t.Errorf("gen_ai.tool.call.id = %q, want the server's call id", id)
	}
	if s, _ := attr(call, "mcp.session.id"); s == "" {
		t.Error("no mcp.session.id on the call span")
	}
	if _, ok := attr(call, "error.type"); ok {
		t.Error("error.type set on a call that succeeded")
	}

	pol := c.span(t, "lathe.policy")
	wantParent(t, pol, call)
	wantAttr(t, pol, "lathe.decision", "ask")
	appr := c.span(t, "lathe.approval")
	wantParent(t, appr, pol)
	wantAttr(t, appr, "lathe.approval.answer", "once")
	wantAttr(t, appr, "lathe.approval.by", "approver")
	if d := time.Duration(appr.EndTimeUnixNano - appr.StartTimeUnixNano); d < 5*time.Millisecond {
		t.Errorf("approval span lasts %s, less than the approver took", d)
	}
	run := c.span(t, "lathe.run up__echo")
	wantParent(t, run, call)
	wantAttr(t, run, "lathe.runtime", "mcp")
	req := c.span(t, "tools/call up")
	wantParent(t, req, run)
	if req.Kind != tracepb.Span_SPAN_KIND_CLIENT {
		t.Errorf("upstream request span kind %v, want client", req.Kind)
	}

	up.mu.Lock()
	got := up.parent
	up.mu.Unlock()
	want := "00-" + hex.EncodeToString(req.TraceId) + "-" + hex.EncodeToString(req.SpanId) + "-01"
	if got != want {
		t.Errorf("the upstream got traceparent %q, want the request span's %q", got, want)
	}

	all := c.allBytes()
	for _, secret := range []string{secretArg, secretResult} {
		if bytes.Contains(all, []byte(secret)) {
			t.Errorf("%q reached the collector, though recording arguments and results is off", secret)
		}
	}
}

// TestRecordedWhenAsked: with Arguments and Results on, the same call's
// arguments and result are in its span: the check above is not blind.
func TestRecordedWhenAsked(t *testing.T) {
	c := newCollector(t)
	exportTo(t, c)
	up := newUpstream(t)
	e, setup := traced(t, telemetry.Options{Arguments: true, Results: true}, up)
	clientCall(t, e, "up__echo", "", map[string]any{"text": secretArg})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := setup.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	call := c.span(t, "execute_tool up__echo")
	if len(call.ParentSpanId) != 0 {
		t.Errorf("a call without a client's trace context has parent %x", call.ParentSpanId)
	}
	if a, _ := attr(call, "gen_ai.tool.call.arguments"); !strings.Contains(a, secretArg) {
		t.Errorf("gen_ai.tool.call.arguments = %q, want the arguments", a)
	}
	if r, _ := attr(call, "gen_ai.tool.call.result"); !strings.Contains(r, secretResult) {
		t.Errorf("gen_ai.tool.call.result = %q, want the result", r)
	}
}

// TestErrorType: a failed call's span names lathe's error kind, for a
// tool's own failure and an unknown tool; the run's span names the sandbox
// profile the run was confined by.
func TestErrorType(t *testing.T) {
	c := newCollector(t)
	exportTo(t, c)
	sandbox := func(def *tool.Definition) string {
		if def.Name == "fail" {
			return "standard"
		}
		return ""
	}
	e, setup := traced(t, telemetry.Options{Sandbox: sandbox}, nil)
	ctx := context.Background()
	e.Call(ctx, &tool.Call{Name: "fail"})
	e.Call(ctx, &tool.Call{Name: "no_such_tool"})
	sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := setup.Shutdown(sctx); err != nil {
		t.Fatal(err)
	}
	f := c.span(t, "execute_tool fail")
	wantAttr(t, f, "error.type", "tool_error")
	wantAttr(t, f, "lathe.decision", "allow")
	if f.Status.GetCode() != tracepb.Status_STATUS_CODE_ERROR {
		t.Errorf("failed call's status %v, want error", f.Status)
	}
	run := c.span(t, "lathe.run fail")
	wantParent(t, run, f)
	wantAttr(t, run, "lathe.sandbox.profile", "standard")
	wantAttr(t, run, "error.type", "tool_error")
	u := c.span(t, "execute_tool no_such_tool")
	wantAttr(t, u, "error.type", "unknown_tool")
	wantAttr(t, u, "lathe.decision", "none")
}

// TestNothingExportedWhenUnset: without OTEL_* variables there is no
// exporter and no telemetry; an endpoint with OTEL_SDK_DISABLED=true, or
// OTEL_TRACES_EXPORTER=none, exports no spans.
func TestNothingExportedWhenUnset(t *testing.T) {
	for _, env := range []map[string]string{
		{},
		{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1", "OTEL_SDK_DISABLED": "true"},
		{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1", "OTEL_TRACES_EXPORTER": "none", "OTEL_METRICS_EXPORTER": "none"},
	} {
		s, err := telemetry.FromEnvironment(context.Background(), telemetry.Config{Getenv: func(k string) string { return env[k] }})
		if err != nil {
			t.Fatalf("%v: %v", env, err)
		}
		if s.Enabled() || s.Traces || s.MetricsExported {
			t.Errorf("%v: telemetry set up (traces %v, metrics %v)", env, s.Traces, s.MetricsExported)
		}
	}
}

// TestUnsampledClientStillTraced: a client that marks its trace context
// "not sampled" does not hide its calls from lathe's traces; the call
// stays in the client's trace.
func TestUnsampledClientStillTraced(t *testing.T) {
	c := newCollector(t)
	exportTo(t, c)
	e, setup := traced(t, telemetry.Options{}, nil)
	res := clientCall(t, e, "fail", "00-"+clientTrace+"-"+clientSpan+"-00", nil)
	if !res.IsError {
		t.Fatalf("the call of fail did not fail: %+v", res)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := setup.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	call := c.span(t, "execute_tool fail")
	if hex.EncodeToString(call.TraceId) != clientTrace {
		t.Errorf("call span in trace %x, want the client's %s", call.TraceId, clientTrace)
	}
}

// TestPrometheusExporterRefused: the SDK's own Prometheus exporter, which
// would listen on a port of its own for every local user to read, is
// refused with a word on what to use instead.
func TestPrometheusExporterRefused(t *testing.T) {
	env := map[string]string{"OTEL_METRICS_EXPORTER": "otlp, prometheus"}
	_, err := telemetry.FromEnvironment(context.Background(), telemetry.Config{Getenv: func(k string) string { return env[k] }})
	if err == nil || !strings.Contains(err.Error(), "OTEL_METRICS_EXPORTER=prometheus") || !strings.Contains(err.Error(), "/metrics") {
		t.Fatalf("OTEL_METRICS_EXPORTER=prometheus: err %v, want a refusal naming the variable and /metrics", err)
	}
}
