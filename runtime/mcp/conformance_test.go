package mcp_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/lathe-tools/lathe/internal/mcptest"
	"github.com/lathe-tools/lathe/runtime/mcp"
	"github.com/lathe-tools/lathe/runtimetest"
	"github.com/lathe-tools/lathe/tool"
)

// TestConformanceStdio runs the runtime conformance suite against an
// upstream server written with the go-sdk, spoken to over stdio: the test
// binary re-run as the server, so that no Node is needed.
func TestConformanceStdio(t *testing.T) {
	argv, env := self(t, "conformance")
	runtimetest.Run(t, func(t *testing.T, name string) tool.Tool {
		return upstreamTool(t, name, mcp.Config{Command: argv, Env: env})
	})
}

// upstreamTool opens a pool on the one server of cfg and returns its tool
// name, unprefixed, as the pool made it: the suite registers it in an
// engine of its own, which closes the pool.
func upstreamTool(t *testing.T, name string, cfg mcp.Config) tool.Tool {
	t.Helper()
	none := ""
	cfg.Name, cfg.Prefix, cfg.Allow = "conformance", &none, []string{name}
	reg := &registry{}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	p, err := mcp.Open(ctx, reg, []mcp.Config{cfg}, mcp.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	tl, ok := reg.get(name)
	if !ok {
		t.Fatalf("the server offers no tool %q", name)
	}
	return tl
}

// registry is the smallest [mcp.Registry]: it keeps what the pool
// registers, for the test to hand to the suite's engine.
type registry struct {
	mu    sync.Mutex
	tools []tool.Tool
}

func (r *registry) Lookup(name string) (tool.Definition, bool) {
	tl, ok := r.get(name)
	return tl.Definition, ok
}

func (r *registry) get(name string) (tool.Tool, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	i := slices.IndexFunc(r.tools, func(tl tool.Tool) bool { return tl.Definition.Name == name })
	if i < 0 {
		return tool.Tool{}, false
	}
	return r.tools[i], true
}

func (r *registry) Replace(remove []string, add ...tool.Tool) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.tools = slices.DeleteFunc(r.tools, func(tl tool.Tool) bool { return slices.Contains(remove, tl.Definition.Name) })
	r.tools = append(r.tools, add...)
	return nil
}

// TestConformanceHTTP runs the suite against the same server in the test's
// own process, spoken to over streamable HTTP. Its crash tool drops the
// call's connection and forgets the session, as a server that died and
// came back would; what it says before that cannot reach lathe, which the
// suite is told (Remote).
func TestConformanceHTTP(t *testing.T) {
	stop := make(chan struct{})
	var ts *httptest.Server
	var mu sync.Mutex
	dead := map[string]bool{}
	srv := mcptest.Conformance(mcptest.ConformanceOptions{
		Stop: stop,
		Crash: func(req *sdk.CallToolRequest, _ string) {
			mu.Lock()
			dead[req.Session.ID()] = true
			mu.Unlock()
			ts.CloseClientConnections()
		},
	})
	h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil)
	ts = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		gone := dead[r.Header.Get("Mcp-Session-Id")]
		mu.Unlock()
		if gone {
			http.Error(w, "no such session", http.StatusNotFound)
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(func() {
		close(stop)
		// The sessions of crashed calls were never closed by a client.
		for ss := range srv.Sessions() {
			ss.Close()
		}
		ts.Close()
	})
	runtimetest.RunOptions(t, func(t *testing.T, name string) tool.Tool {
		return upstreamTool(t, name, mcp.Config{URL: ts.URL + "/mcp"})
	}, runtimetest.Options{Remote: true})
}
