package server_test

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/lathe-tools/lathe"
	"github.com/lathe-tools/lathe/runtime/mcp"
	"github.com/lathe-tools/lathe/server"
)

// enumSchema is an elicitation schema with every enum form of MCP
// 2025-11-25: plain, titled (oneOf), legacy (enumNames), and multiple
// choice with and without titles.
var enumSchema = json.RawMessage(`{"type":"object","properties":{
	"plain":{"type":"string","enum":["a","b"]},
	"titled":{"type":"string","oneOf":[{"const":"v1","title":"One"},{"const":"v2","title":"Two"}]},
	"legacy":{"type":"string","enum":["x","y"],"enumNames":["Ex","Why"]},
	"multi":{"type":"array","minItems":1,"items":{"type":"string","enum":["p","q"]}},
	"titledMulti":{"type":"array","items":{"anyOf":[{"const":"v1","title":"One"},{"const":"v2","title":"Two"}]}}
}}`)

// typedItemsSchema is a titled multiple choice whose items also say
// "type": "string", as some servers send it (go-sdk's conformance fixture
// among them), which go-sdk's client refuses as it stands.
var typedItemsSchema = json.RawMessage(`{"type":"object","properties":{
	"colors":{"type":"array","items":{"type":"string","anyOf":[{"const":"r","title":"Red"},{"const":"g","title":"Green"}]}}
}}`)

// versionsUpstreamEnv makes the test binary, run again, the upstream
// server of [serveVersionUpstream] over stdio.
const versionsUpstreamEnv = "LATHE_SERVER_TEST_VERSIONS_UPSTREAM"

// serveVersionUpstream is a go-sdk server whose tools ask their client in
// each of the ways a server may: a request sent from the tool's handler in
// the middle of the call (elicitation and sampling, as servers written
// before 2026-07-28 do), and input requests returned as the call's result
// (multi round trip, from 2026-07-28). Its version tool tells the
// protocol version its session negotiated. It serves over stdio, where the
// SDK speaks 2026-07-28 to a client that asks for it.
func serveVersionUpstream() {
	srv := sdk.NewServer(&sdk.Implementation{Name: "upstream", Version: "1"}, nil)
	textResult := func(s string) *sdk.CallToolResult {
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: s}}}
	}
	srv.AddTool(&sdk.Tool{Name: "ask", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			res, err := req.Session.Elicit(ctx, &sdk.ElicitParams{Message: "pick", RequestedSchema: enumSchema})
			if err != nil {
				return nil, fmt.Errorf("elicitation failed: %w", err)
			}
			b, _ := json.Marshal(res.Content)
			return textResult(res.Action + " " + string(b)), nil
		})
	srv.AddTool(&sdk.Tool{Name: "ask_typed", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			res, err := req.Session.Elicit(ctx, &sdk.ElicitParams{Message: "pick", RequestedSchema: typedItemsSchema})
			if err != nil {
				return nil, fmt.Errorf("elicitation failed: %w", err)
			}
			return textResult(res.Action), nil
		})
	srv.AddTool(&sdk.Tool{Name: "sample", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			res, err := req.Session.CreateMessage(ctx, &sdk.CreateMessageParams{MaxTokens: 10,
				Messages: []*sdk.SamplingMessage{{Role: "user", Content: &sdk.TextContent{Text: "hi"}}}})
			if err != nil {
				return nil, fmt.Errorf("sampling failed: %w", err)
			}
			return textResult("model " + res.Model), nil
		})
	srv.AddTool(&sdk.Tool{Name: "ask_later", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			res, ok := req.Params.InputResponses["q"].(*sdk.ElicitResult)
			if !ok {
				return &sdk.CallToolResult{InputRequests: sdk.InputRequestMap{"q": &sdk.ElicitParams{
					Message: "name?", RequestedSchema: json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"}}}`),
				}}}, nil
			}
			b, _ := json.Marshal(res.Content)
			return textResult(res.Action + " " + string(b)), nil
		})
	srv.AddTool(&sdk.Tool{Name: "version", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			v := "none"
			if ip := req.Session.InitializeParams(); ip != nil {
				v = ip.ProtocolVersion
			}
			return textResult(v), nil
		})
	if err := srv.Run(context.Background(), &sdk.StdioTransport{}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(0)
}

// TestVersionPairs: whatever version a client of lathe speaks, an upstream
// server's elicitation and sampling reach it and its answers go back, for
// a server that sends its requests during the call and for one that
// returns input requests. An upstream written with a go-sdk of 2026-07-28
// that sends its requests during the call cannot do so once lathe has
// negotiated 2026-07-28 with it ("cannot be sent while serving a
// request"): lathe asks upstreams for 2025-11-25.
func TestVersionPairs(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	e := newEngine(t)
	none := ""
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pool, err := mcp.Open(ctx, e, []mcp.Config{{Name: "up", Command: []string{exe, "-test.run=^$"},
		Env: map[string]string{versionsUpstreamEnv: "1"}, Prefix: &none}}, mcp.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	srv := server.New(e, server.Options{})
	defer srv.Close()
	if r := callTool(t, connect(t, srv, nil), "version", map[string]any{}); text(r) != mcp.UpstreamProtocolVersion {
		t.Errorf("lathe negotiated %q with the upstream server, want %q", text(r), mcp.UpstreamProtocolVersion)
	}
	ts := httptest.NewServer(srv.Handler(server.HTTPOptions{}))
	defer ts.Close()
	for _, c := range []struct{ version, via string }{
		{"", "memory"}, {"2026-07-28", "memory"}, {"2025-11-25", "memory"}, {"2025-06-18", "memory"},
		{"", "http"}, {"2026-07-28", "http"}, {"2025-11-25", "http"},
	} {
		version := c.version
		name := cmp.Or(version, "newest") + "/" + c.via
		url := ""
		if c.via == "http" {
			url = ts.URL + server.Path
		}
		t.Run(name, func(t *testing.T) {
			var asked json.RawMessage
			cs := connectVersion(t, srv, url, version, &sdk.ClientOptions{
				ElicitationHandler: func(_ context.Context, r *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
					asked, _ = json.Marshal(r.Params.RequestedSchema)
					if strings.Contains(string(asked), "colors") {
						return &sdk.ElicitResult{Action: "decline"}, nil
					}
					if strings.Contains(string(asked), "titledMulti") {
						return &sdk.ElicitResult{Action: "accept", Content: map[string]any{"plain": "b", "titled": "v2",
							"legacy": "y", "multi": []any{"q"}, "titledMulti": []any{"v1"}}}, nil
					}
					return &sdk.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada"}}, nil
				},
				CreateMessageHandler: func(context.Context, *sdk.CreateMessageRequest) (*sdk.CreateMessageResult, error) {
					return &sdk.CreateMessageResult{Role: "assistant", Model: "client-model",
						Content: &sdk.TextContent{Text: "hello"}}, nil
				},
			})
			got := cs.InitializeResult().ProtocolVersion
			t.Logf("client %q was answered with %s", version, got)
			if !slices.Contains(server.ProtocolVersions(), got) || version != "" && version < got {
				t.Errorf("a client of %q was answered with %q, which lathe does not speak or the client did not ask for", version, got)
			}
			r := callTool(t, cs, "ask", map[string]any{})
			if got := text(r); r.IsError || !strings.Contains(got, `"titledMulti":["v1"]`) || !strings.Contains(got, `"legacy":"y"`) {
				t.Errorf("elicitation during the call: %s", got)
			}
			if !strings.Contains(string(asked), "enumNames") || !strings.Contains(string(asked), `"oneOf"`) {
				t.Errorf("the client was not asked the upstream's schema as it was: %s", asked)
			}
			// The person declines, so that the upstream's own go-sdk does
			// not check the answer against the schema it refuses itself.
			if r := callTool(t, cs, "ask_typed", map[string]any{}); r.IsError || text(r) != "decline" {
				t.Errorf("a titled multiple choice with typed items: %s", text(r))
			}
			if !strings.Contains(string(asked), `"colors"`) || !strings.Contains(string(asked), `"title":"Green"`) {
				t.Errorf("the client was not asked the titled multiple choice: %s", asked)
			}
			if r := callTool(t, cs, "sample", map[string]any{}); r.IsError || text(r) != "model client-model" {
				t.Errorf("sampling during the call: %s", text(r))
			}
			if r := callTool(t, cs, "ask_later", map[string]any{}); r.IsError || text(r) != `accept {"name":"Ada"}` {
				t.Errorf("input requests: %s", text(r))
			}
		})
	}
}

// connectVersion connects a go-sdk client that asks for the protocol
// version (the SDK's newest when empty) to srv: over streamable HTTP at
// url, or in memory when url is empty.
func connectVersion(t *testing.T, srv *server.Server, url, version string, opts *sdk.ClientOptions) *sdk.ClientSession {
	t.Helper()
	var (
		ct sdk.Transport
		ss *sdk.ServerSession
	)
	if url != "" {
		ct = &sdk.StreamableClientTransport{Endpoint: url}
	} else {
		var st sdk.Transport
		ct, st = sdk.NewInMemoryTransports()
		var err error
		if ss, err = srv.MCP().Connect(context.Background(), st, nil); err != nil {
			t.Fatal(err)
		}
	}
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "test"}, opts).Connect(context.Background(), ct,
		&sdk.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatalf("a client of version %q cannot connect: %v", version, err)
	}
	t.Cleanup(func() {
		cs.Close()
		if ss != nil {
			ss.Wait()
		}
	})
	return cs
}

// TestUpstreamRequestOnCallStream: over streamable HTTP, an upstream
// server's elicitation reaches the client on the stream of the client's
// tools/call, where a client waits for it, and not on the standalone
// stream, which a client need not open: this client opens none, as the
// conformance suite's client may not have yet when the request comes.
func TestUpstreamRequestOnCallStream(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	e := newEngine(t)
	none := ""
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pool, err := mcp.Open(ctx, e, []mcp.Config{{Name: "up", Command: []string{exe, "-test.run=^$"},
		Env: map[string]string{versionsUpstreamEnv: "1"}, Prefix: &none}}, mcp.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	srv := server.New(e, server.Options{})
	defer srv.Close()
	ts := httptest.NewServer(srv.Handler(server.HTTPOptions{}))
	defer ts.Close()
	c := &streamClient{t: t, ctx: ctx, url: ts.URL + server.Path}

	c.post(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25",` +
		`"capabilities":{"elicitation":{"form":{}}},"clientInfo":{"name":"raw","version":"1"}}}`).Body.Close()
	c.post(`{"jsonrpc":"2.0","method":"notifications/initialized"}`).Body.Close()
	resp := c.post(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"ask_typed","arguments":{}}}`)
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	asked := false
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		var msg struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Result json.RawMessage `json:"result"`
		}
		if err := json.Unmarshal([]byte(data), &msg); err != nil {
			t.Fatalf("the call's stream holds %q: %v", data, err)
		}
		switch {
		case msg.Method == "elicitation/create":
			asked = true
			c.post(`{"jsonrpc":"2.0","id":` + string(msg.ID) + `,"result":{"action":"decline"}}`).Body.Close()
		case string(msg.ID) == "2":
			if !asked || !strings.Contains(string(msg.Result), `"text":"decline"`) {
				t.Fatalf("the call ended (asked on its stream: %v) with %s", asked, msg.Result)
			}
			return
		}
	}
	t.Fatalf("the call's stream ended without its result (asked: %v): %v", asked, sc.Err())
}

// streamClient speaks streamable HTTP by hand, with no standalone stream.
type streamClient struct {
	t       *testing.T
	ctx     context.Context
	url     string
	session string
}

func (c *streamClient) post(body string) *http.Response {
	c.t.Helper()
	req, err := http.NewRequestWithContext(c.ctx, http.MethodPost, c.url, strings.NewReader(body))
	if err != nil {
		c.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2025-11-25")
	if c.session != "" {
		req.Header.Set("Mcp-Session-Id", c.session)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatalf("posting %s: %v", body, err)
	}
	if resp.StatusCode >= 300 {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		c.t.Fatalf("posting %s: %s: %s", body, resp.Status, b)
	}
	if id := resp.Header.Get("Mcp-Session-Id"); id != "" {
		c.session = id
	}
	return resp
}

// openUpstream opens, in e, a pool on the server of serveVersionUpstream
// (the test binary run again), with no prefix.
func openUpstream(t *testing.T, e *lathe.Engine) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	none := ""
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pool, err := mcp.Open(ctx, e, []mcp.Config{{Name: "up", Command: []string{exe, "-test.run=^$"},
		Env: map[string]string{versionsUpstreamEnv: "1"}, Prefix: &none}}, mcp.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pool.Close() })
}
