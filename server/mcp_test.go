package server_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"

	"github.com/lathe-tools/lathe"
	"github.com/lathe-tools/lathe/internal/mcptest"
	"github.com/lathe-tools/lathe/runtime/builtin"
	"github.com/lathe-tools/lathe/runtime/mcp"
	"github.com/lathe-tools/lathe/server"
	"github.com/lathe-tools/lathe/tool"
)

func TestMain(m *testing.M) {
	if os.Getenv(versionsUpstreamEnv) != "" {
		serveVersionUpstream()
	}
	// The test binary doubles as the upstream servers of surface_test.go.
	if name := os.Getenv(upstreamEnv); name != "" {
		mcptest.ServeSurface(name)
		return
	}
	goleak.VerifyTestMain(m)
}

type weatherIn struct {
	City string `json:"city" jsonschema:"description=the city"`
}

type weatherOut struct {
	City  string  `json:"city"`
	TempC float64 `json:"tempC"`
}

// testTools are builtin tools that exercise the server face: structured
// output with annotations, progress, a question, a failure.
func testTools() []tool.Tool {
	return []tool.Tool{
		builtin.Must(builtin.Func(tool.Definition{Name: "weather", Summary: "Weather of a city.",
			Annotations: tool.Annotations{Title: "Weather", ReadOnlyHint: true, OpenWorldHint: tool.Bool(false)}},
			func(_ context.Context, in weatherIn) (weatherOut, error) {
				return weatherOut{City: in.City, TempC: 21.5}, nil
			})),
		builtin.Must(builtin.Func(tool.Definition{Name: "steps", Summary: "Report progress."},
			func(ctx context.Context, _ struct{}) (string, error) {
				for i := 1; i <= 3; i++ {
					tool.ReportProgress(ctx, tool.Progress{Progress: float64(i), Total: 3, Message: "step"})
				}
				return "done", nil
			})),
		builtin.Must(builtin.Func(tool.Definition{Name: "confirm", Summary: "Ask first."},
			func(ctx context.Context, _ struct{}) (string, error) {
				a, err := builtin.Ask(ctx, tool.Question{ID: "sure", Text: "Go on?", Kind: tool.QuestionBoolean})
				if err != nil {
					return "", err
				}
				if !builtin.AnswerBool(a) {
					return "", errors.New("stopped")
				}
				return "went on", nil
			})),
		builtin.Must(builtin.Func(tool.Definition{Name: "fail", Summary: "Fail."},
			func(context.Context, struct{}) (string, error) { return "", errors.New("it broke") })),
	}
}

func newEngine(t *testing.T, tools ...tool.Tool) *lathe.Engine {
	t.Helper()
	e := lathe.New(lathe.Options{Timeout: 20 * time.Second})
	if err := e.Register(tools...); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

// connect connects a go-sdk client to srv in memory.
func connect(t *testing.T, srv *server.Server, opts *sdk.ClientOptions) *sdk.ClientSession {
	t.Helper()
	ct, st := sdk.NewInMemoryTransports()
	ss, err := srv.MCP().Connect(context.Background(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "test"}, opts).Connect(context.Background(), ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cs.Close()
		ss.Wait()
	})
	return cs
}

func text(r *sdk.CallToolResult) string {
	var b strings.Builder
	for _, c := range r.Content {
		if tc, ok := c.(*sdk.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

func callTool(t *testing.T, cs *sdk.ClientSession, name string, args any) *sdk.CallToolResult {
	t.Helper()
	r, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return r
}

func TestServe(t *testing.T) {
	e := newEngine(t, testTools()...)
	srv := server.New(e, server.Options{})
	var (
		mu       sync.Mutex
		progress []float64
		changed  = make(chan struct{}, 4)
	)
	cs := connect(t, srv, &sdk.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, r *sdk.ProgressNotificationClientRequest) {
			mu.Lock()
			progress = append(progress, r.Params.Progress)
			mu.Unlock()
		},
		ElicitationHandler: func(_ context.Context, r *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
			return &sdk.ElicitResult{Action: "accept", Content: map[string]any{"answer": true}}, nil
		},
		ToolListChangedHandler: func(context.Context, *sdk.ToolListChangedRequest) { changed <- struct{}{} },
	})

	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var weather *sdk.Tool
	for _, tl := range res.Tools {
		if tl.Name == "weather" {
			weather = tl
		}
	}
	if weather == nil || weather.OutputSchema == nil || weather.Annotations == nil || !weather.Annotations.ReadOnlyHint ||
		weather.Title != "Weather" {
		t.Fatalf("weather tool: %+v", weather)
	}

	r := callTool(t, cs, "weather", map[string]any{"city": "Oslo"})
	if r.IsError || !strings.Contains(text(r), "21.5") {
		t.Errorf("weather: %+v", r)
	}
	if sc, _ := json.Marshal(r.StructuredContent); !strings.Contains(string(sc), `"tempC":21.5`) {
		t.Errorf("structured: %s", sc)
	}

	r, err = cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "steps", Arguments: map[string]any{},
		Meta: sdk.Meta{"progressToken": "p1"}})
	if err != nil || text(r) != "done" {
		t.Fatalf("steps: %v %+v", err, r)
	}
	waitFor(t, func() bool { mu.Lock(); defer mu.Unlock(); return len(progress) == 3 }, "3 progress notifications")

	if r := callTool(t, cs, "confirm", map[string]any{}); r.IsError || text(r) != "went on" {
		t.Errorf("confirm: %+v", text(r))
	}
	r = callTool(t, cs, "fail", map[string]any{})
	if !r.IsError || !strings.Contains(text(r), "it broke") || r.Meta["lathe/errorKind"] != "tool_error" {
		t.Errorf("fail: %+v", r)
	}
	r = callTool(t, cs, "weather", map[string]any{"city": 3})
	if !r.IsError || !strings.Contains(text(r), "/city") {
		t.Errorf("invalid: %s", text(r))
	}

	// A change of the registry reaches the client.
	e.Unregister("fail")
	srv.Sync()
	select {
	case <-changed:
	case <-time.After(5 * time.Second):
		t.Fatal("no tools/list_changed")
	}
	res, _ = cs.ListTools(context.Background(), nil)
	if slices.ContainsFunc(res.Tools, func(tl *sdk.Tool) bool { return tl.Name == "fail" }) {
		t.Error("fail still listed")
	}
}

// TestQuestionWithoutElicitation: a client that cannot be asked gets an
// error result that says what the tool asked.
func TestQuestionWithoutElicitation(t *testing.T) {
	srv := server.New(newEngine(t, testTools()...), server.Options{})
	cs := connect(t, srv, nil)
	r := callTool(t, cs, "confirm", map[string]any{})
	if !r.IsError || !strings.Contains(text(r), "Go on?") {
		t.Errorf("confirm: %+v", text(r))
	}
}

func TestHTTPSecurity(t *testing.T) {
	srv := server.New(newEngine(t, testTools()...), server.Options{})
	ts := httptest.NewServer(srv.Handler(server.HTTPOptions{Token: "s3cret"}))
	defer ts.Close()
	defer srv.Close()
	post := func(header map[string]string) int {
		req, _ := http.NewRequest("POST", ts.URL+"/mcp",
			strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		for k, v := range header {
			if k == "Host" {
				req.Host = v
				continue
			}
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	auth := "Bearer s3cret"
	for _, c := range []struct {
		name   string
		header map[string]string
		want   int
	}{
		{"token", map[string]string{"Authorization": auth}, 200},
		{"no token", nil, 401},
		{"wrong token", map[string]string{"Authorization": "Bearer nope"}, 401},
		{"foreign origin", map[string]string{"Authorization": auth, "Origin": "https://evil.example.invalid"}, 403},
		{"loopback origin", map[string]string{"Authorization": auth, "Origin": "http://localhost:3000"}, 200},
		{"rebinding", map[string]string{"Authorization": auth, "Host": "evil.example.invalid"}, 403},
	} {
		if got := post(c.header); got != c.want {
			t.Errorf("%s: status %d, want %d", c.name, got, c.want)
		}
	}
	if resp, err := http.Get(ts.URL + "/other"); err == nil {
		resp.Body.Close()
		if resp.StatusCode != 404 {
			t.Errorf("/other: %d", resp.StatusCode)
		}
	}
}

// TestRoundTrip serves an engine over HTTP and consumes it with lathe's own
// MCP runtime: the tools and results are the same on both sides.
func TestRoundTrip(t *testing.T) {
	inner := newEngine(t, testTools()...)
	srv := server.New(inner, server.Options{})
	ts := httptest.NewServer(srv.Handler(server.HTTPOptions{Token: "t"}))
	defer ts.Close()
	defer srv.Close()

	outer := newEngine(t)
	prefix := ""
	pool, err := mcp.Open(context.Background(), outer, []mcp.Config{{Name: "inner", URL: ts.URL + "/mcp",
		Prefix: &prefix, Headers: map[string]string{"Authorization": "Bearer t"}}}, mcp.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()

	in, out := inner.Tools(), outer.Tools()
	if len(in) != len(out) {
		t.Fatalf("%d tools inside, %d outside", len(in), len(out))
	}
	for i := range in {
		a, b := in[i], out[i]
		// MCP has one description; a definition with a summary alone is
		// served with the summary as its description.
		if a.Description == "" {
			a.Description = a.Summary
		}
		if a.Name != b.Name || a.Summary != b.Summary || a.Description != b.Description || a.Annotations.Title != b.Annotations.Title ||
			a.Annotations.ReadOnlyHint != b.Annotations.ReadOnlyHint || !jsonEqual(a.InputSchema, b.InputSchema) ||
			!jsonEqual(a.OutputSchema, b.OutputSchema) {
			t.Errorf("tool %s differs:\ninside  %+v\noutside %+v", a.Name, a, b)
		}
	}
	for _, c := range []struct{ name, args string }{
		{"weather", `{"city":"Oslo"}`},
		{"fail", `{}`},
		{"weather", `{"city":7}`},
	} {
		a := inner.Call(context.Background(), &tool.Call{Name: c.name, Arguments: json.RawMessage(c.args)}).Result
		b := outer.Call(context.Background(), &tool.Call{Name: c.name, Arguments: json.RawMessage(c.args)}).Result
		if a.Text() != b.Text() || a.IsError != b.IsError || !jsonEqual(a.Structured, b.Structured) {
			t.Errorf("%s %s:\ninside  %+v\noutside %+v", c.name, c.args, a, b)
		}
		if a.ErrorKind != b.ErrorKind && b.ErrorKind != tool.KindInvalidArguments {
			t.Errorf("%s: kind %s inside, %s outside", c.name, a.ErrorKind, b.ErrorKind)
		}
	}
}

func jsonEqual(a, b json.RawMessage) bool {
	if len(a) == 0 || len(b) == 0 {
		return len(a) == len(b)
	}
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	xa, _ := json.Marshal(x)
	ya, _ := json.Marshal(y)
	return string(xa) == string(ya)
}

// TestGateway puts server-everything behind lathe: elicitation and sampling
// requests of the upstream server reach the downstream client, and progress
// comes back to it.
func TestGateway(t *testing.T) {
	e := newEngine(t)
	pool, err := mcp.Open(context.Background(), e, []mcp.Config{{Name: "ev", Command: mcptest.Everything(t)}}, mcp.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	srv := server.New(e, server.Options{})
	var (
		mu       sync.Mutex
		progress int
	)
	cs := connect(t, srv, &sdk.ClientOptions{
		ElicitationHandler: func(_ context.Context, r *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
			return &sdk.ElicitResult{Action: "accept", Content: map[string]any{"name": "Grace Hopper"}}, nil
		},
		CreateMessageHandler: func(_ context.Context, r *sdk.CreateMessageRequest) (*sdk.CreateMessageResult, error) {
			return &sdk.CreateMessageResult{Role: "assistant", Model: "downstream-model",
				Content: &sdk.TextContent{Text: "from downstream"}}, nil
		},
		ProgressNotificationHandler: func(context.Context, *sdk.ProgressNotificationClientRequest) {
			mu.Lock()
			progress++
			mu.Unlock()
		},
	})
	waitFor(t, func() bool { _, ok := e.Lookup("ev__trigger-sampling-request"); return ok }, "conditional tools")
	srv.Sync()

	if r := callTool(t, cs, "ev__trigger-elicitation-request", map[string]any{}); !strings.Contains(text(r), "Grace Hopper") {
		t.Errorf("elicitation: %s", text(r))
	}
	if r := callTool(t, cs, "ev__trigger-sampling-request", map[string]any{"prompt": "hi"}); !strings.Contains(text(r), "downstream-model") {
		t.Errorf("sampling: %s", text(r))
	}
	r, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "ev__trigger-long-running-operation",
		Arguments: map[string]any{"duration": 0.3, "steps": 3}, Meta: sdk.Meta{"progressToken": 7}})
	if err != nil || r.IsError {
		t.Fatalf("long-running: %v %+v", err, r)
	}
	waitFor(t, func() bool { mu.Lock(); defer mu.Unlock(); return progress >= 2 }, "forwarded progress")
	r = callTool(t, cs, "ev__get-tiny-image", map[string]any{})
	if !slices.ContainsFunc(r.Content, func(c sdk.Content) bool { _, ok := c.(*sdk.ImageContent); return ok }) {
		t.Errorf("image: %+v", r.Content)
	}
}

func waitFor(t *testing.T, cond func() bool, what string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestServeOutputSchemaMismatch: a tool whose structured output breaks the
// output schema it declares must not reach an MCP client as a success with
// that structured content (clients reject it, or trust a value of the wrong
// shape); it arrives as an error result whose content the model can read.
func TestServeOutputSchemaMismatch(t *testing.T) {
	rt := tool.RuntimeFunc(func(context.Context, *tool.Definition, *tool.Call) (*tool.Outcome, error) {
		return &tool.Outcome{Result: &tool.Result{Content: []tool.Content{{Type: tool.ContentText, Text: "it is 7"}},
			Structured: json.RawMessage(`{"n":"seven"}`)}}, nil
	})
	e := newEngine(t, tool.Tool{Definition: tool.Definition{Name: "count", Summary: "Count.",
		OutputSchema: json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]}`)}, Runtime: rt})
	cs := connect(t, server.New(e, server.Options{}), nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "count", Arguments: map[string]any{}})
	if err != nil {
		t.Fatalf("count: %v", err)
	}
	if r.StructuredContent != nil {
		t.Fatalf("structured content %v that breaks the output schema reached the client", r.StructuredContent)
	}
	if !r.IsError || !strings.Contains(text(r), "it is 7") || !strings.Contains(text(r), "/n") {
		t.Fatalf("want an error result keeping the content and naming /n, got %+v (%s)", r, text(r))
	}
}
