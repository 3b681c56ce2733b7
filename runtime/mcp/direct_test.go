package mcp_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/lathe-tools/lathe/runtime/mcp"
	"github.com/lathe-tools/lathe/tool"
)

// serveDirect is a go-sdk server over stdio for the tests of lathe's
// direct call path (direct.go): echo answers its text after a pause of its
// own, block waits for its call to be cancelled and counts the
// cancellations, cancelled tells the count, and exit ends the server in the
// middle of its call.
func serveDirect() {
	srv := sdk.NewServer(&sdk.Implementation{Name: "direct", Version: "1"}, nil)
	var mu sync.Mutex
	cancelled := 0
	obj := json.RawMessage(`{"type":"object"}`)
	srv.AddTool(&sdk.Tool{Name: "echo", InputSchema: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"},"ms":{"type":"integer"}}}`)},
		func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			var in struct {
				Text string `json:"text"`
				MS   int    `json:"ms"`
			}
			json.Unmarshal(req.Params.Arguments, &in)
			time.Sleep(time.Duration(in.MS) * time.Millisecond)
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: in.Text}}}, nil
		})
	srv.AddTool(&sdk.Tool{Name: "block", InputSchema: obj},
		func(ctx context.Context, _ *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			<-ctx.Done()
			mu.Lock()
			cancelled++
			mu.Unlock()
			return nil, ctx.Err()
		})
	srv.AddTool(&sdk.Tool{Name: "cancelled", InputSchema: obj},
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			mu.Lock()
			defer mu.Unlock()
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: fmt.Sprint(cancelled)}}}, nil
		})
	srv.AddTool(&sdk.Tool{Name: "exit", InputSchema: obj},
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			os.Exit(3)
			return nil, nil
		})
	if err := srv.Run(context.Background(), &sdk.StdioTransport{}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// TestDirectCallsGetTheirOwnAnswers: calls at once on one stdio session,
// answered out of order, each get the answer to their own request.
func TestDirectCallsGetTheirOwnAnswers(t *testing.T) {
	argv, env := self(t, "direct")
	e, p := open(t, mcp.Options{}, mcp.Config{Name: "d", Command: argv, Env: env})
	defer p.Close()
	var wg sync.WaitGroup
	errs := make(chan string, 32)
	for i := range 32 {
		wg.Go(func() {
			want := fmt.Sprintf("call %d", i)
			// Later calls answer sooner: the answers come back out of
			// the order of the requests.
			args := fmt.Sprintf(`{"text":%q,"ms":%d}`, want, (32-i)%7*3)
			r := e.Call(context.Background(), &tool.Call{Name: "d__echo", Arguments: json.RawMessage(args)})
			switch {
			case r.Result == nil:
				errs <- fmt.Sprintf("%s: no result", want)
			case r.Result.IsError:
				errs <- fmt.Sprintf("%s: %s", want, r.Result.Text())
			case r.Result.Text() != want:
				errs <- fmt.Sprintf("%s: got the answer %q", want, r.Result.Text())
			}
		})
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}

// TestDirectCancelNotifies: cancelling a call to a server over stdio sends
// notifications/cancelled naming it, so the server's handler sees its
// context end; the session goes on.
func TestDirectCancelNotifies(t *testing.T) {
	argv, env := self(t, "direct")
	e, p := open(t, mcp.Options{}, mcp.Config{Name: "d", Command: argv, Env: env})
	defer p.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	r := call(t, ctx, e, "d__block", `{}`)
	if r.ErrorKind != tool.KindTimeout && r.ErrorKind != tool.KindCancelled {
		t.Fatalf("kind %s: %s", r.ErrorKind, r.Text())
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		got := mustOK(t, call(t, context.Background(), e, "d__cancelled", `{}`)).Text()
		if got == "1" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the server saw %s cancellations, want 1", got)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestDirectServerDies: a server that dies in the middle of a call ends
// the call at once with a runtime failure that quotes its stderr, not at
// the call's deadline; the next call starts the server again.
func TestDirectServerDies(t *testing.T) {
	argv, env := self(t, "direct")
	e, p := open(t, mcp.Options{}, mcp.Config{Name: "d", Command: argv, Env: env})
	defer p.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	start := time.Now()
	r := call(t, ctx, e, "d__exit", `{}`)
	if r.ErrorKind != tool.KindRuntimeFailure {
		t.Fatalf("kind %s: %s", r.ErrorKind, r.Text())
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("the call ended after %v, at its deadline rather than with the server", d)
	}
	deadline := time.Now().Add(15 * time.Second)
	for {
		r := call(t, context.Background(), e, "d__echo", `{"text":"back"}`)
		if !r.IsError && r.Text() == "back" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the server did not come back: %s: %s", r.ErrorKind, r.Text())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// forgingServer speaks MCP over stdio by hand. Before it answers a
// tools/call it sends answers to requests nobody made: one with an id of
// lathe's direct path that no call waits for, one with the next id lathe
// would use, and one with a string id; then the true answer.
func forgingServer() {
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(nil, 1<<20)
	out := bufio.NewWriter(os.Stdout)
	calls := 0
	for in.Scan() {
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				ProtocolVersion string          `json:"protocolVersion"`
				Arguments       json.RawMessage `json:"arguments"`
			} `json:"params"`
		}
		if json.Unmarshal(in.Bytes(), &m) != nil || m.ID == nil {
			continue
		}
		switch m.Method {
		case "initialize":
			fmt.Fprintf(out, `{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":%q,"capabilities":{"tools":{}},"serverInfo":{"name":"forger","version":"1"}}}`+"\n",
				m.ID, m.Params.ProtocolVersion)
		case "tools/list":
			fmt.Fprintf(out, `{"jsonrpc":"2.0","id":%s,"result":{"tools":[{"name":"say","inputSchema":{"type":"object"}}]}}`+"\n", m.ID)
		case "tools/call":
			calls++
			var id int64
			json.Unmarshal(m.ID, &id)
			for _, forged := range []string{fmt.Sprint(id + 1000), fmt.Sprint(id + 1), `"` + string(m.ID) + `"`} {
				fmt.Fprintf(out, `{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":"forged"}]}}`+"\n", forged)
			}
			fmt.Fprintf(out, `{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":%q}]}}`+"\n", m.ID,
				fmt.Sprintf("said %s, call %d", m.Params.Arguments, calls))
		default:
			fmt.Fprintf(out, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":"no"}}`+"\n", m.ID)
		}
		out.Flush()
	}
}

// TestDirectForgedAnswers: answers to requests lathe did not make, or did
// not make yet, are dropped; each call gets its own answer, the next call
// too, and the session lives on (the server is not restarted).
func TestDirectForgedAnswers(t *testing.T) {
	argv, env := self(t, "forger")
	e, p := open(t, mcp.Options{}, mcp.Config{Name: "f", Command: argv, Env: env})
	defer p.Close()
	for i := range 3 {
		args := fmt.Sprintf(`{"n":%d}`, i)
		got := mustOK(t, call(t, context.Background(), e, "f__say", args)).Text()
		// The count is the server process's own: a session ended by the
		// forged answers would restart it from 1.
		if want := fmt.Sprintf("said %s, call %d", args, i+1); got != want {
			t.Fatalf("call %d: %q, want %q", i, got, want)
		}
	}
}
