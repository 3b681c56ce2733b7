package mcp_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/lathe-tools/lathe"
	"github.com/lathe-tools/lathe/runtime/mcp"
	"github.com/lathe-tools/lathe/server"
	"github.com/lathe-tools/lathe/tool"
)

// levelUpstream26 is a go-sdk server of MCP 2026-07-28 over streamable
// HTTP whose tool "chatter" logs one message at each of five levels. The
// SDK sends a request's log messages at and above the level its _meta
// names, and none when it names none. levels records the level each call
// named.
func levelUpstream26(t *testing.T) (url string, levels func() []string) {
	t.Helper()
	var seen texts
	srv := sdk.NewServer(&sdk.Implementation{Name: "levels26", Version: "1"}, &sdk.ServerOptions{
		Capabilities: &sdk.ServerCapabilities{Logging: &sdk.LoggingCapabilities{}}})
	sdk.AddTool(srv, &sdk.Tool{Name: "chatter"}, func(ctx context.Context, req *sdk.CallToolRequest, _ struct{}) (*sdk.CallToolResult, any, error) {
		l, _ := req.Params.GetMeta()[sdk.MetaKeyLogLevel].(string)
		seen.add(l)
		for _, level := range []sdk.LoggingLevel{"debug", "info", "notice", "warning", "error"} {
			req.Session.Log(ctx, &sdk.LoggingMessageParams{Level: level, Data: "at " + string(level)})
		}
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "chattered"}}}, nil, nil
	})
	ts := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv },
		&sdk.StreamableHTTPOptions{Stateless: true}))
	t.Cleanup(ts.Close)
	return ts.URL, seen.all
}

// TestCallLevelReachesUpstream2026: with no log level configured and none
// set by any client of 2025-11-25, a client of 2026-07-28 names a level in
// its tools/call's _meta; lathe's request to an upstream of 2026-07-28
// names the same level, so the client gets exactly the upstream's messages
// at and above it, and none when it names none. Both ways lathe serves such
// a call are covered: a client that can be asked nothing, and one that
// offers elicitation (its call runs by rounds).
func TestCallLevelReachesUpstream2026(t *testing.T) {
	url, levels := levelUpstream26(t)
	e, pool := open(t, mcp.Options{}, mcp.Config{Name: "up", URL: url})
	ts := serveFace(t, e, pool)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	for _, asks := range []bool{false, true} {
		for _, c := range []struct {
			level string
			want  []string
		}{
			{"", nil},
			{"warning", []string{"at warning", "at error"}},
			{"info", []string{"at info", "at notice", "at warning", "at error"}},
			{"debug", []string{"at debug", "at info", "at notice", "at warning", "at error"}},
		} {
			name := fmt.Sprintf("level %q, elicitation %v", c.level, asks)
			var mu sync.Mutex
			var got []string
			opts := &sdk.ClientOptions{LoggingMessageHandler: func(_ context.Context, r *sdk.LoggingMessageRequest) {
				mu.Lock()
				got = append(got, fmt.Sprint(r.Params.Data))
				mu.Unlock()
			}}
			if asks {
				opts.ElicitationHandler = func(context.Context, *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
					return &sdk.ElicitResult{Action: "decline"}, nil
				}
			}
			cs, err := sdk.NewClient(&sdk.Implementation{Name: "levels"}, opts).Connect(ctx,
				&sdk.StreamableClientTransport{Endpoint: ts.URL + server.Path, MaxRetries: -1},
				&sdk.ClientSessionOptions{ProtocolVersion: "2026-07-28"})
			if err != nil {
				t.Fatal(err)
			}
			meta := sdk.Meta{}
			if c.level != "" {
				meta[sdk.MetaKeyLogLevel] = c.level
			}
			before := len(levels())
			r, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "up__chatter", Arguments: map[string]any{}, Meta: meta})
			cs.Close()
			if err != nil || r.IsError || callText(r) != "chattered" {
				t.Fatalf("%s: the call failed: %v %v", name, err, r)
			}
			// The messages go on the call's response, before its result;
			// the client's handler may run after CallTool returns.
			for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
				mu.Lock()
				n := len(got)
				mu.Unlock()
				if n >= len(c.want) && (len(c.want) > 0 || time.Until(deadline) < 1500*time.Millisecond) {
					break
				}
			}
			mu.Lock()
			if !slices.Equal(got, c.want) {
				t.Errorf("%s: the client got %q, want %q", name, got, c.want)
			}
			mu.Unlock()
			if l := levels(); len(l) != before+1 || l[before] != c.level {
				t.Errorf("%s: the upstream was asked for the levels %q since the call began, want %q", name, l[before:], c.level)
			}
		}
	}
}

// TestCallLevelRaisesUpstream2025: an upstream before 2026-07-28 has one
// log level for its session, which a request cannot name, and a go-sdk
// server sends nothing until told. With no level configured and none set
// by a client, a call whose hooks name a level (as lathe's face does for a
// client of 2026-07-28) gets the server's messages at that level: the
// server's level is raised for the call.
func TestCallLevelRaisesUpstream2025(t *testing.T) {
	e, _ := open(t, mcp.Options{}, surfaceServer(t, "a"))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	count := func(level string) int {
		var c logCounter
		h := c.hooks()
		h.LogLevel = level
		mustOK(t, call(t, tool.WithHooks(ctx, h), e, "a__chatter", `{"n":5}`))
		return len(c.got())
	}
	if n := count(""); n != 0 {
		t.Fatalf("with no level named, %d info messages came", n)
	}
	if n := count("info"); n != 5 {
		t.Fatalf("a call at level info got %d of 5 info messages", n)
	}
}

// serveFace serves lathe's MCP face over streamable HTTP, e's tools and
// pool's upstreams, until the test ends.
func serveFace(t *testing.T, e *lathe.Engine, pool *mcp.Pool) *httptest.Server {
	t.Helper()
	srv := server.New(e, server.Options{Upstream: pool})
	ts := httptest.NewServer(srv.Handler(server.HTTPOptions{}))
	t.Cleanup(func() {
		ts.Close()
		srv.Close()
	})
	return ts
}
