package server_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/lathe-tools/lathe/runtime/builtin"
	"github.com/lathe-tools/lathe/runtime/mcp"
	"github.com/lathe-tools/lathe/server"
	"github.com/lathe-tools/lathe/tool"
)

// A change of the engine's registry reaches a connected client as
// notifications/tools/list_changed through server.New alone: nobody calls
// Sync. Replace is what an upstream MCP server's own list_changed calls, so
// this is the path that carries an upstream change to the clients of lathe
// serve.
func TestRegistryChangesReachClients(t *testing.T) {
	e := newEngine(t, testTools()...)
	srv := server.New(e, server.Options{})
	t.Cleanup(func() { srv.Close() })
	changed := make(chan struct{}, 16)
	cs := connect(t, srv, &sdk.ClientOptions{
		ToolListChangedHandler: func(context.Context, *sdk.ToolListChangedRequest) { changed <- struct{}{} },
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	// waitListed waits for a notification, then for the listed tools to
	// satisfy ok (the SDK may merge several changes into one notification).
	waitListed := func(what string, ok func([]*sdk.Tool) bool) {
		t.Helper()
		for {
			select {
			case <-changed:
			case <-ctx.Done():
				t.Fatalf("no tools/list_changed after %s within 10s", what)
			}
			res, err := cs.ListTools(ctx, nil)
			if err != nil {
				t.Fatalf("listing tools after %s: %v", what, err)
			}
			if ok(res.Tools) {
				return
			}
		}
	}
	named := func(name string) func(*sdk.Tool) bool { return func(tl *sdk.Tool) bool { return tl.Name == name } }

	echo := func(desc string) tool.Tool {
		return builtin.Must(builtin.Func(tool.Definition{Name: "upstream__echo", Description: desc, Source: "mcp.upstream"},
			func(_ context.Context, in struct{ S string }) (string, error) { return in.S, nil }))
	}
	if err := e.Replace(nil, echo("first")); err != nil {
		t.Fatal(err)
	}
	waitListed("adding a tool", func(ts []*sdk.Tool) bool { return slices.ContainsFunc(ts, named("upstream__echo")) })

	// The upstream server changed the tool: the client sees the new definition.
	if err := e.Replace([]string{"upstream__echo"}, echo("second")); err != nil {
		t.Fatal(err)
	}
	waitListed("replacing a tool", func(ts []*sdk.Tool) bool {
		i := slices.IndexFunc(ts, named("upstream__echo"))
		return i >= 0 && ts[i].Description == "second"
	})

	e.Unregister("upstream__echo", "fail")
	waitListed("removing tools", func(ts []*sdk.Tool) bool {
		return !slices.ContainsFunc(ts, named("upstream__echo")) && !slices.ContainsFunc(ts, named("fail"))
	})
}

// Once the server is closed it no longer follows the engine: its
// subscription ends with it (the package's goleak check would find its
// goroutine otherwise), and a later change of the registry reaches nobody.
func TestClosedServerStopsFollowingTheEngine(t *testing.T) {
	e := newEngine(t, testTools()...)
	srv := server.New(e, server.Options{})
	cs := connect(t, srv, nil)
	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
	e.Unregister("fail")
	// The session ended with the server; nothing may be left serving it.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := cs.ListTools(ctx, nil); err == nil {
		t.Error("the client could still list tools after the server closed")
	}
}

// lathe as a gateway: an upstream MCP server adds a tool after lathe
// connected to it; the pool replaces the upstream's tools in the engine, and
// the engine's event carries the change to lathe's own clients. Nothing is
// wired between the pool and the server (no OnChange).
func TestUpstreamChangeReachesClients(t *testing.T) {
	up := sdk.NewServer(&sdk.Implementation{Name: "upstream"}, nil)
	add := func(name string) {
		up.AddTool(&sdk.Tool{Name: name, InputSchema: json.RawMessage(`{"type":"object"}`)},
			func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
				return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "I am " + name}}}, nil
			})
	}
	add("first")
	ts := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return up }, nil))
	defer ts.Close()

	e := newEngine(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	pool, err := mcp.Open(ctx, e, []mcp.Config{{Name: "up", URL: ts.URL}}, mcp.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close() // before the upstream's HTTP server closes: its session ends first

	srv := server.New(e, server.Options{})
	t.Cleanup(func() { srv.Close() })
	changed := make(chan struct{}, 16)
	cs := connect(t, srv, &sdk.ClientOptions{
		ToolListChangedHandler: func(context.Context, *sdk.ToolListChangedRequest) { changed <- struct{}{} },
	})

	add("second")
	for {
		select {
		case <-changed:
		case <-ctx.Done():
			t.Fatal("the upstream's new tool did not reach lathe's client as tools/list_changed within 20s")
		}
		res, err := cs.ListTools(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if slices.ContainsFunc(res.Tools, func(tl *sdk.Tool) bool { return tl.Name == "up__second" }) {
			break
		}
	}
	if r := callTool(t, cs, "up__second", map[string]any{}); r.IsError || text(r) != "I am second" {
		t.Errorf("up__second through lathe: %s", text(r))
	}
}
