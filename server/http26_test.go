package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/lathe-tools/lathe"
	"github.com/lathe-tools/lathe/policy"
	"github.com/lathe-tools/lathe/server"
	"github.com/lathe-tools/lathe/tool"
)

// client26 speaks MCP 2026-07-28 over streamable HTTP by hand: no session,
// the version, identity and capabilities in each request's _meta.
type client26 struct {
	t     *testing.T
	url   string
	token string
	caps  map[string]any
	level string
	name  string // the name it declares, "raw26" when empty
}

func (c *client26) meta() map[string]any {
	name := c.name
	if name == "" {
		name = "raw26"
	}
	m := map[string]any{"io.modelcontextprotocol/protocolVersion": "2026-07-28",
		"io.modelcontextprotocol/clientInfo":         map[string]any{"name": name, "version": "1"},
		"io.modelcontextprotocol/clientCapabilities": c.caps}
	if c.level != "" {
		m["io.modelcontextprotocol/logLevel"] = c.level
	}
	return m
}

// call sends a tools/call and returns the messages of its answer.
func (c *client26) call(id int, name string, args map[string]any, extra map[string]any) (*http.Response, []json.RawMessage) {
	c.t.Helper()
	params := map[string]any{"name": name, "arguments": args, "_meta": c.meta()}
	for k, v := range extra {
		params[k] = v
	}
	return c.send(id, "tools/call", name, params)
}

func (c *client26) send(id int, method, name string, params map[string]any) (*http.Response, []json.RawMessage) {
	c.t.Helper()
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "POST", c.url, strings.NewReader(string(body)))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", method)
	if name != "" {
		req.Header.Set("Mcp-Name", name)
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatalf("%s: %v", method, err)
	}
	defer resp.Body.Close()
	var b strings.Builder
	if _, err := fmt.Fprint(&b, readAll(c.t, resp)); err != nil {
		c.t.Fatal(err)
	}
	var out []json.RawMessage
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		for line := range strings.SplitSeq(b.String(), "\n") {
			if data, ok := strings.CutPrefix(line, "data: "); ok {
				out = append(out, json.RawMessage(data))
			}
		}
	} else if strings.TrimSpace(b.String()) != "" {
		out = append(out, json.RawMessage(b.String()))
	}
	return resp, out
}

func readAll(t *testing.T, resp *http.Response) string {
	t.Helper()
	var b strings.Builder
	buf := make([]byte, 4096)
	for {
		n, err := resp.Body.Read(buf)
		b.Write(buf[:n])
		if err != nil {
			return b.String()
		}
	}
}

// result26 is the part of a tools/call answer the tests read.
type result26 struct {
	Result struct {
		ResultType    string                     `json:"resultType"`
		Content       []struct{ Text string }    `json:"content"`
		IsError       bool                       `json:"isError"`
		InputRequests map[string]json.RawMessage `json:"inputRequests"`
		RequestState  string                     `json:"requestState"`
	} `json:"result"`
	Error *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
}

func decode26(t *testing.T, raw json.RawMessage) result26 {
	t.Helper()
	var r result26
	if err := json.Unmarshal(raw, &r); err != nil {
		t.Fatalf("%s: %v", raw, err)
	}
	return r
}

// TestHTTP2026Calls: a go-sdk client of MCP 2026-07-28 is served that
// version over streamable HTTP (server/discover offers it), and its calls
// run, questions by rounds included (TestVersionPairs covers an upstream's
// questions).
func TestHTTP2026Calls(t *testing.T) {
	srv := server.New(newEngine(t, testTools()...), server.Options{})
	ts := httptest.NewServer(srv.Handler(server.HTTPOptions{}))
	t.Cleanup(func() { ts.Close(); srv.Close() })
	asked := 0
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "new"}, &sdk.ClientOptions{
		ElicitationHandler: func(context.Context, *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
			asked++
			return &sdk.ElicitResult{Action: "accept", Content: map[string]any{"answer": true}}, nil
		}}).Connect(ctx, &sdk.StreamableClientTransport{Endpoint: ts.URL + server.Path, MaxRetries: -1},
		&sdk.ClientSessionOptions{ProtocolVersion: "2026-07-28"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if v := cs.InitializeResult().ProtocolVersion; v != "2026-07-28" {
		t.Fatalf("a client of 2026-07-28 over HTTP was answered with %s", v)
	}
	r, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "weather", Arguments: map[string]any{"city": "Oslo"}})
	if err != nil || r.IsError {
		t.Fatalf("weather: %+v %v", r, err)
	}
	r, err = cs.CallTool(ctx, &sdk.CallToolParams{Name: "confirm", Arguments: map[string]any{}})
	if err != nil || r.IsError || text(r) != "went on" || asked != 1 {
		t.Fatalf("confirm: %+v %v (asked %d times)", r, err, asked)
	}
}

// TestHTTP2026Rounds: a call of a client of 2026-07-28 over HTTP that asks
// is answered with its question and a request state; the state, presented
// again, resumes that call with the answer, once; a state nobody was given
// resumes nothing, and a call's progress and log messages go on the
// response of the round in which they happen, at the level each request
// names.
func TestHTTP2026Rounds(t *testing.T) {
	p := newProbe()
	srv := server.New(newEngine(t, p.tools()...), server.Options{})
	ts := httptest.NewServer(srv.Handler(server.HTTPOptions{}))
	t.Cleanup(func() { ts.Close(); srv.Close() })
	c := &client26{t: t, url: ts.URL + server.Path, caps: map[string]any{"elicitation": map[string]any{}}}

	_, msgs := c.call(1, "confirm", map[string]any{}, nil)
	if len(msgs) != 1 {
		t.Fatalf("confirm: %d messages", len(msgs))
	}
	first := decode26(t, msgs[0])
	if first.Result.ResultType != "input_required" || len(first.Result.InputRequests) != 1 || first.Result.RequestState == "" {
		t.Fatalf("confirm: %s", msgs[0])
	}
	var key string
	for k := range first.Result.InputRequests {
		key = k
	}
	answer := map[string]any{key: map[string]any{"action": "accept", "content": map[string]any{"answer": true}}}

	// A state that names no waiting call.
	_, msgs = c.call(2, "confirm", map[string]any{}, map[string]any{"requestState": strings.Repeat("0", 32),
		"inputResponses": answer})
	if r := decode26(t, msgs[0]); r.Error == nil || !strings.Contains(r.Error.Message, "requestState") {
		t.Errorf("an unknown request state: %s", msgs[0])
	}

	resume := map[string]any{"requestState": first.Result.RequestState, "inputResponses": answer}
	_, msgs = c.call(3, "confirm", map[string]any{}, resume)
	if r := decode26(t, msgs[len(msgs)-1]); r.Result.ResultType != "complete" || r.Result.IsError ||
		len(r.Result.Content) != 1 || r.Result.Content[0].Text != "went on" {
		t.Fatalf("the resumed call: %s", msgs[len(msgs)-1])
	}
	// The state was good for one round.
	_, msgs = c.call(4, "confirm", map[string]any{}, resume)
	if r := decode26(t, msgs[0]); r.Error == nil {
		t.Errorf("a request state used twice: %s", msgs[0])
	}

	// Progress, and the level of log messages named by the request.
	_, msgs = c.call(5, "steps", map[string]any{}, map[string]any{"_meta": func() map[string]any {
		m := c.meta()
		m["progressToken"] = "p"
		return m
	}()})
	progress := 0
	for _, m := range msgs {
		if decode26(t, m).Method == "notifications/progress" {
			progress++
		}
	}
	if progress != 3 || decode26(t, msgs[len(msgs)-1]).Result.Content[0].Text != "done" {
		t.Errorf("steps: %d progress messages: %s", progress, msgs)
	}
}

// TestHTTP2026Logs: log messages of a call of 2026-07-28 reach its client at
// and above the level its request names, and none when it names none.
func TestHTTP2026Logs(t *testing.T) {
	logger := tool.Tool{Definition: tool.Definition{Name: "chatty", Summary: "Log at two levels."},
		Runtime: tool.RuntimeFunc(func(ctx context.Context, _ *tool.Definition, _ *tool.Call) (*tool.Outcome, error) {
			h := tool.HooksFrom(ctx)
			if h.Log != nil {
				h.Log(tool.LogMessage{Level: "debug", Logger: "x", Data: json.RawMessage(`"quiet"`)})
				h.Log(tool.LogMessage{Level: "warning", Logger: "x", Data: json.RawMessage(`"loud"`)})
			}
			return &tool.Outcome{Result: tool.TextResult("ok")}, nil
		})}
	e := lathe.New(lathe.Options{Middleware: []lathe.Middleware{policy.Middleware(
		&policy.Policy{Rules: []policy.Rule{{Tool: "*", Approval: policy.Allow}}}, policy.Options{})}})
	t.Cleanup(func() { e.Close() })
	if err := e.Register(logger); err != nil {
		t.Fatal(err)
	}
	srv := server.New(e, server.Options{})
	ts := httptest.NewServer(srv.Handler(server.HTTPOptions{}))
	t.Cleanup(func() { ts.Close(); srv.Close() })
	for _, c := range []struct {
		level string
		want  []string
	}{{"", nil}, {"info", []string{"loud"}}, {"debug", []string{"quiet", "loud"}}} {
		cl := &client26{t: t, url: ts.URL + server.Path, caps: map[string]any{}, level: c.level}
		_, msgs := cl.call(1, "chatty", map[string]any{}, nil)
		var got []string
		for _, m := range msgs[:len(msgs)-1] {
			var n struct {
				Method string `json:"method"`
				Params struct {
					Data string `json:"data"`
				} `json:"params"`
			}
			if json.Unmarshal(m, &n) == nil && n.Method == "notifications/message" {
				got = append(got, n.Params.Data)
			}
		}
		if fmt.Sprint(got) != fmt.Sprint(c.want) {
			t.Errorf("level %q: messages %v, want %v", c.level, got, c.want)
		}
	}
}

// TestHTTP2026Refused: a call of 2026-07-28 without the token or from a
// foreign page does not run, nor does one whose headers disagree with its
// body.
func TestHTTP2026Refused(t *testing.T) {
	p := newProbe()
	srv := server.New(newEngine(t, p.tools()...), server.Options{})
	ts := httptest.NewServer(srv.Handler(server.HTTPOptions{Token: "s3cret"}))
	t.Cleanup(func() { ts.Close(); srv.Close() })
	c := &client26{t: t, url: ts.URL + server.Path, caps: map[string]any{}, token: "s3cret"}
	if resp, msgs := c.call(1, "count", map[string]any{}, nil); resp.StatusCode != 200 ||
		!strings.Contains(string(msgs[0]), `"1"`) {
		t.Fatalf("the first call: %d %s", resp.StatusCode, msgs)
	}
	c.token = ""
	if resp, _ := c.call(2, "count", map[string]any{}, nil); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("without the token: status %d", resp.StatusCode)
	}
	c.token = "s3cret"
	// Mcp-Name says one tool, the body another.
	if resp, _ := c.send(3, "tools/call", "weather", map[string]any{"name": "count", "arguments": map[string]any{},
		"_meta": c.meta()}); resp.StatusCode == 200 {
		t.Errorf("an Mcp-Name that is not the body's tool: status %d", resp.StatusCode)
	}
	if n := p.runs.Load(); n != 1 {
		t.Errorf("refused calls ran: %d runs, want 1", n)
	}
}

// TestHTTP2026Task: a client of 2026-07-28 over HTTP that declares the tasks
// extension gets a long call as a task, and follows it with tasks/get in
// later requests, as over stdio.
func TestHTTP2026Task(t *testing.T) {
	g := newGate()
	srv := server.New(newEngine(t, append(testTools(), g.tool())...), v2026Tasks)
	ts := httptest.NewServer(srv.Handler(server.HTTPOptions{}))
	t.Cleanup(func() { ts.Close(); srv.Close() })
	c := &client26{t: t, url: ts.URL + server.Path,
		caps: map[string]any{"extensions": map[string]any{"io.modelcontextprotocol/tasks": map[string]any{}}}}
	_, msgs := c.call(1, "gate", map[string]any{"word": "w"}, nil)
	tk := decodeTask(t, "the call", json.RawMessage(result(t, msgs[len(msgs)-1])))
	if tk.ResultType != "task" || tk.TaskID == "" {
		t.Fatalf("the long call: %s", msgs[len(msgs)-1])
	}
	close(g.release)
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, msgs = c.send(2, "tasks/get", "", map[string]any{"taskId": tk.TaskID, "_meta": c.meta()})
		got := decodeTask(t, "tasks/get", json.RawMessage(result(t, msgs[len(msgs)-1])))
		if got.Status == "completed" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the task is still %s after 10 s: %s", got.Status, msgs[len(msgs)-1])
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// result is the result member of a JSON-RPC answer, or fails the test.
func result(t *testing.T, raw json.RawMessage) []byte {
	t.Helper()
	var m struct {
		Result json.RawMessage `json:"result"`
		Error  json.RawMessage `json:"error"`
	}
	if err := json.Unmarshal(raw, &m); err != nil || m.Result == nil {
		t.Fatalf("not a result: %s (%v)", raw, err)
	}
	return m.Result
}
