package bench

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"slices"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/lathe-tools/lathe"
	"github.com/lathe-tools/lathe/internal/mcptest"
	"github.com/lathe-tools/lathe/runtime/builtin"
	"github.com/lathe-tools/lathe/runtime/mcp"
	"github.com/lathe-tools/lathe/server"
	"github.com/lathe-tools/lathe/tool"
)

// median of ds, which it sorts.
func median(ds []time.Duration) time.Duration {
	slices.Sort(ds)
	return ds[len(ds)/2]
}

// BenchmarkMCPProxy calls server-everything's echo tool through lathe (the
// engine's pipeline and the MCP runtime's pooled session) and directly with
// the go-sdk client, alternating call by call on two sessions of the same
// server, and reports the ratio of the medians: the goal is at most 1.2.
func BenchmarkMCPProxy(b *testing.B) {
	argv := mcptest.Everything(b)
	ctx := context.Background()

	e := lathe.New(lathe.Options{})
	defer e.Close()
	pool, err := mcp.Open(ctx, e, []mcp.Config{{Name: "ev", Command: argv, Allow: []string{"echo"}}}, mcp.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer pool.Close()

	cs, err := sdk.NewClient(&sdk.Implementation{Name: "bench"}, nil).
		Connect(ctx, &sdk.CommandTransport{Command: exec.Command(argv[0], argv[1:]...)}, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer cs.Close()

	args := json.RawMessage(`{"message":"hello"}`)
	viaLathe := func() {
		out := e.Call(ctx, &tool.Call{Name: "ev__echo", Arguments: args})
		if out.Result == nil || out.Result.IsError {
			b.Fatalf("lathe: %+v", out)
		}
	}
	direct := func() {
		r, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "echo", Arguments: args})
		if err != nil || r.IsError {
			b.Fatalf("direct: %v %+v", err, r)
		}
	}
	for range 20 { // warm both paths: JIT of the server, the SDK's caches
		viaLathe()
		direct()
	}
	ld := make([]time.Duration, 0, b.N)
	dd := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for range b.N {
		t0 := time.Now()
		viaLathe()
		t1 := time.Now()
		direct()
		dd = append(dd, time.Since(t1))
		ld = append(ld, t1.Sub(t0))
	}
	b.StopTimer()
	ml, md := median(ld), median(dd)
	b.ReportMetric(float64(ml.Microseconds()), "lathe-µs/call")
	b.ReportMetric(float64(md.Microseconds()), "direct-µs/call")
	b.ReportMetric(float64(ml)/float64(md), "x-direct")
}

type addIn struct {
	A int `json:"a"`
	B int `json:"b"`
}

type addOut struct {
	Sum int `json:"sum"`
}

func add(_ context.Context, in addIn) (addOut, error) { return addOut{Sum: in.A + in.B}, nil }

// BenchmarkServeHTTP calls a builtin tool over streamable HTTP, served by
// lathe's MCP server face and by a bare go-sdk server with the same typed
// tool, alternating call by call, and reports each one's calls per second
// (from the median call) and their ratio.
func BenchmarkServeHTTP(b *testing.B) {
	ctx := context.Background()

	e := lathe.New(lathe.Options{})
	defer e.Close()
	if err := e.Register(builtin.Must(builtin.Func(tool.Definition{Name: "add", Summary: "Add."}, add))); err != nil {
		b.Fatal(err)
	}
	ls := server.New(e, server.Options{})
	defer ls.Close()
	lts := httptest.NewServer(ls.Handler(server.HTTPOptions{}))
	defer lts.Close()

	bare := sdk.NewServer(&sdk.Implementation{Name: "bare"}, nil)
	sdk.AddTool(bare, &sdk.Tool{Name: "add", Description: "Add."},
		func(ctx context.Context, _ *sdk.CallToolRequest, in addIn) (*sdk.CallToolResult, addOut, error) {
			out, err := add(ctx, in)
			return nil, out, err
		})
	bts := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return bare }, nil))
	defer bts.Close()

	connect := func(url string) *sdk.ClientSession {
		cs, err := sdk.NewClient(&sdk.Implementation{Name: "bench"}, nil).
			Connect(ctx, &sdk.StreamableClientTransport{Endpoint: url + "/mcp", DisableStandaloneSSE: true},
				// The version the bare server speaks over HTTP, so that
				// both clients do the same work.
				&sdk.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
		if err != nil {
			b.Fatal(err)
		}
		return cs
	}
	lc, bc := connect(lts.URL), connect(bts.URL)
	defer lc.Close()
	defer bc.Close()
	args := map[string]any{"a": 1, "b": 2}
	callOn := func(cs *sdk.ClientSession) {
		// Params of their own for each call: a go-sdk client of MCP
		// 2026-07-28 writes its version into the params' _meta, which the
		// other client would then send as its own.
		r, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "add", Arguments: args})
		if err != nil || r.IsError {
			b.Fatalf("%v %+v", err, r)
		}
	}
	for range 50 {
		callOn(lc)
		callOn(bc)
	}
	ld := make([]time.Duration, 0, b.N)
	bd := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for range b.N {
		t0 := time.Now()
		callOn(lc)
		t1 := time.Now()
		callOn(bc)
		bd = append(bd, time.Since(t1))
		ld = append(ld, t1.Sub(t0))
	}
	b.StopTimer()
	ml, mb := median(ld), median(bd)
	b.ReportMetric(float64(time.Second)/float64(ml), "lathe-calls/s")
	b.ReportMetric(float64(time.Second)/float64(mb), "bare-calls/s")
	b.ReportMetric(float64(ml)/float64(mb), "x-bare")
}
