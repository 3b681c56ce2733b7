package server_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/lathe-tools/lathe"
	"github.com/lathe-tools/lathe/runtime/mcp"
	"github.com/lathe-tools/lathe/server"
)

// TestTraceContextPassesThrough: with nothing tracing in lathe, a client's
// trace context reaches the upstream server its call goes to, in the
// tools/call's params._meta, so that the two meet in one trace; one that
// is not well formed (a tracestate with a line break) reaches it not at
// all.
func TestTraceContextPassesThrough(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var mu sync.Mutex
	var seen []sdk.Meta
	up := sdk.NewServer(&sdk.Implementation{Name: "up"}, nil)
	up.AddTool(&sdk.Tool{Name: "t", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(_ context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			mu.Lock()
			seen = append(seen, req.Params.GetMeta())
			mu.Unlock()
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "ok"}}}, nil
		})
	ts := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return up }, nil))
	defer ts.Close()

	e := lathe.New(lathe.Options{})
	defer e.Close()
	pool, err := mcp.Open(ctx, e, []mcp.Config{{Name: "up", URL: ts.URL, StartupTimeout: 10 * time.Second}}, mcp.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
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

	const parent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	for _, meta := range []sdk.Meta{
		{"traceparent": parent, "tracestate": "k=v"},
		{"traceparent": parent, "tracestate": "k=v\r\nX-Injected: 1"},
		{"traceparent": "00-" + "4bf92f3577b34da6a3ce929d0e0e4736" + "-00f067aa0ba902b7"},
	} {
		res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "up__t", Arguments: map[string]any{}, Meta: meta})
		if err != nil || res.IsError {
			t.Fatalf("call with _meta %v: %v %+v", meta, err, res)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 3 {
		t.Fatalf("the upstream saw %d calls, want 3", len(seen))
	}
	if seen[0]["traceparent"] != parent || seen[0]["tracestate"] != "k=v" {
		t.Errorf("the upstream got _meta %v, want the client's trace context", seen[0])
	}
	for i, m := range seen[1:] {
		if _, ok := m["traceparent"]; ok {
			t.Errorf("call %d: a malformed trace context reached the upstream: %v", i+2, m)
		}
		if _, ok := m["tracestate"]; ok {
			t.Errorf("call %d: a malformed trace state reached the upstream: %v", i+2, m)
		}
	}
}
