package server_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/lathe-tools/lathe/runtime/builtin"
	"github.com/lathe-tools/lathe/server"
	"github.com/lathe-tools/lathe/tool"
)

// countingServer serves srv over HTTP and counts the connections its
// clients open. Each response ends lag after lathe's handler returns, as
// on a busy machine, where a client has read its answer long before.
func countingServer(t *testing.T, srv *server.Server, lag time.Duration) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var conns atomic.Int64
	h := srv.Handler(server.HTTPOptions{})
	ts := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(w, r)
		time.Sleep(lag)
	}))
	ts.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	ts.Start()
	t.Cleanup(func() {
		ts.CloseClientConnections()
		ts.Close()
		srv.Close()
	})
	return ts, &conns
}

// A client that calls in sequence keeps its connection: the answer to each
// call and the end of its response stream arrive together, so that a
// client which stops reading at the answer (the go-sdk's does) finds the
// body ended and can reuse the connection. Before, each call whose end
// came after the client had its answer (most, on a busy machine; all, with
// the lag here) cost a new connection.
func TestCallsKeepTheirConnection(t *testing.T) {
	srv := server.New(newEngine(t, testTools()...), server.Options{})
	ts, conns := countingServer(t, srv, 20*time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "test"}, nil).Connect(ctx,
		&sdk.StreamableClientTransport{Endpoint: ts.URL + "/mcp", DisableStandaloneSSE: true, MaxRetries: -1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	before := conns.Load()
	const calls = 20
	for i := range calls {
		r, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "weather", Arguments: map[string]any{"city": "Oslo"}})
		if err != nil || r.IsError {
			t.Fatalf("call %d: %v %+v", i, err, r)
		}
	}
	if n := conns.Load() - before; n > 2 {
		t.Fatalf("%d calls in sequence opened %d connections, want the one kept", calls, n)
	}
}

// A notification written before the answer is not held with it: a tool
// that waits until its client has its progress report finishes. Were the
// report held until the handler returned, the tool would wait in vain.
func TestProgressBeforeTheAnswerFlows(t *testing.T) {
	got := make(chan struct{})
	var once sync.Once
	waits := builtin.Must(builtin.Func(tool.Definition{Name: "half", Summary: "Report half, wait for the client."},
		func(ctx context.Context, _ struct{}) (string, error) {
			tool.ReportProgress(ctx, tool.Progress{Progress: 1, Total: 2, Message: "half"})
			select {
			case <-got:
				return "done", nil
			case <-ctx.Done():
				return "", ctx.Err()
			case <-time.After(10 * time.Second):
				return "", errors.New("the progress report did not reach the client within 10s")
			}
		}))
	srv := server.New(newEngine(t, waits), server.Options{})
	ts, _ := countingServer(t, srv, 0)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := sdk.NewClient(&sdk.Implementation{Name: "test"}, &sdk.ClientOptions{
		ProgressNotificationHandler: func(context.Context, *sdk.ProgressNotificationClientRequest) {
			once.Do(func() { close(got) })
		},
	})
	cs, err := c.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: ts.URL + "/mcp", DisableStandaloneSSE: true, MaxRetries: -1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	params := &sdk.CallToolParams{Name: "half", Arguments: map[string]any{}}
	params.SetProgressToken("p1")
	r, err := cs.CallTool(ctx, params)
	if err != nil {
		t.Fatal(err)
	}
	if r.IsError || text(r) != "done" {
		t.Fatalf("half: %s", text(r))
	}
}
