package mcp_test

import (
	"context"
	"net"
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
// connections of the call's session and forgets the session, as a server
// that died and came back would for that client; what it says before that
// cannot reach lathe, which the suite is told (Remote). Each tool of the
// suite is a client of its own, and only the crashed one's connections go:
// closing every client's would cut an idle connection that another tool's
// next call is about to reuse, which a POST cannot safely be retried on.
func TestConformanceHTTP(t *testing.T) {
	stop := make(chan struct{})
	var mu sync.Mutex
	dead := map[string]bool{}
	conns := map[string]map[net.Conn]bool{} // by session
	srv := mcptest.Conformance(mcptest.ConformanceOptions{
		Stop: stop,
		Crash: func(req *sdk.CallToolRequest, _ string) {
			mu.Lock()
			defer mu.Unlock()
			id := req.Session.ID()
			dead[id] = true
			for c := range conns[id] {
				c.Close()
			}
		},
	})
	h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil)
	ts := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.Header.Get("Mcp-Session-Id")
		mu.Lock()
		gone := dead[id]
		if c, ok := r.Context().Value(connKey{}).(net.Conn); ok && id != "" && !gone {
			if conns[id] == nil {
				conns[id] = map[net.Conn]bool{}
			}
			conns[id][c] = true
		}
		mu.Unlock()
		if gone {
			http.Error(w, "no such session", http.StatusNotFound)
			return
		}
		h.ServeHTTP(w, r)
	}))
	ts.Config.ConnContext = func(ctx context.Context, c net.Conn) context.Context {
		return context.WithValue(ctx, connKey{}, c)
	}
	ts.Start()
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

// connKey keys the connection a request came on in its context.
type connKey struct{}
