package server_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lathe-tools/lathe/runtime/builtin"
	"github.com/lathe-tools/lathe/server"
	"github.com/lathe-tools/lathe/tool"
)

// probe is a set of tools whose runs the tests observe: count counts its
// runs, block waits until its call is cancelled, flood sends progress
// messages of 1 KiB until its call ends.
type probe struct {
	runs      atomic.Int64
	blocking  chan struct{}
	cancelled chan struct{}
	flooded   atomic.Int64
	flooding  chan struct{}
	floodEnd  chan struct{}
}

func newProbe() *probe {
	return &probe{blocking: make(chan struct{}, 8), cancelled: make(chan struct{}, 8), flooding: make(chan struct{}, 1), floodEnd: make(chan struct{}, 1)}
}

func (p *probe) tools() []tool.Tool {
	return append(testTools(),
		builtin.Must(builtin.Func(tool.Definition{Name: "count", Summary: "Count this run."},
			func(context.Context, struct{}) (string, error) {
				return fmt.Sprint(p.runs.Add(1)), nil
			})),
		builtin.Must(builtin.Func(tool.Definition{Name: "block", Summary: "Wait until cancelled."},
			func(ctx context.Context, _ struct{}) (string, error) {
				p.blocking <- struct{}{}
				select {
				case <-ctx.Done():
					p.cancelled <- struct{}{}
					return "", ctx.Err()
				case <-time.After(15 * time.Second):
					return "not cancelled", nil
				}
			})),
		builtin.Must(builtin.Func(tool.Definition{Name: "flood", Summary: "Report progress until stopped."},
			func(ctx context.Context, _ struct{}) (string, error) {
				defer func() { p.floodEnd <- struct{}{} }()
				msg := strings.Repeat("x", 1024)
				for i := 0; ctx.Err() == nil && i < 200_000; i++ {
					if i == 0 {
						p.flooding <- struct{}{}
					}
					tool.ReportProgress(ctx, tool.Progress{Progress: float64(i), Message: msg})
					p.flooded.Add(1)
				}
				return "flooded", ctx.Err()
			})),
	)
}

// serveProbe serves p's tools over HTTP with opts.
func serveProbe(t *testing.T, p *probe, opts server.HTTPOptions) *httptest.Server {
	t.Helper()
	srv := server.New(newEngine(t, p.tools()...), server.Options{})
	ts := httptest.NewServer(srv.Handler(opts))
	t.Cleanup(func() {
		ts.CloseClientConnections()
		ts.Close()
		srv.Close()
	})
	return ts
}

// wireClient speaks streamable HTTP by hand, so that the tests see the
// server's answers as they are on the wire.
type wireClient struct {
	t     *testing.T
	url   string
	token string
	sid   string
}

// open initializes a session of MCP 2025-11-25 with the given client
// capabilities (JSON).
func open(t *testing.T, ts *httptest.Server, token, caps string) *wireClient {
	t.Helper()
	c := &wireClient{t: t, url: ts.URL + "/mcp", token: token}
	resp, body := c.post(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25",`+
		`"capabilities":`+caps+`,"clientInfo":{"name":"raw","version":"1"}}}`, nil)
	if resp.StatusCode != 200 {
		t.Fatalf("initialize: status %d: %s", resp.StatusCode, body)
	}
	c.sid = resp.Header.Get("Mcp-Session-Id")
	if c.sid == "" {
		t.Fatal("initialize: no Mcp-Session-Id")
	}
	if resp, body := c.post(`{"jsonrpc":"2.0","method":"notifications/initialized"}`, nil); resp.StatusCode != 202 {
		t.Fatalf("initialized: status %d: %s", resp.StatusCode, body)
	}
	return c
}

// request is a POST of body with the session's headers, and hdr over them
// ("" removes one).
func (c *wireClient) request(ctx context.Context, body string, hdr map[string]string) *http.Request {
	req, _ := http.NewRequestWithContext(ctx, "POST", c.url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	if c.sid != "" {
		req.Header.Set("Mcp-Session-Id", c.sid)
	}
	for k, v := range hdr {
		if v == "" {
			req.Header.Del(k)
		} else {
			req.Header.Set(k, v)
		}
	}
	return req
}

// post sends body and reads the whole answer, within 20 s.
func (c *wireClient) post(body string, hdr map[string]string) (*http.Response, string) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	resp, err := http.DefaultClient.Do(c.request(ctx, body, hdr))
	if err != nil {
		c.t.Fatalf("POST %.60s: %v", body, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		c.t.Fatalf("POST %.60s: reading the answer: %v", body, err)
	}
	return resp, string(b)
}

func callBody(id int, name, args string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":%q,"arguments":%s}}`, id, name, args)
}

// rpcAnswer is a JSON-RPC response as the tests read it.
type rpcAnswer struct {
	ID     any `json:"id"`
	Result *struct {
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
		Structured map[string]any `json:"structuredContent"`
		IsError    bool           `json:"isError"`
	} `json:"result"`
	Error *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
}

// messages are the JSON-RPC messages of an answer: its JSON body, or the
// data of each event of its stream.
func messages(t *testing.T, resp *http.Response, body string) []rpcAnswer {
	t.Helper()
	var out []rpcAnswer
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		for line := range strings.SplitSeq(body, "\n") {
			if data, ok := strings.CutPrefix(line, "data: "); ok {
				var m rpcAnswer
				if err := json.Unmarshal([]byte(data), &m); err != nil {
					t.Fatalf("event %q: %v", data, err)
				}
				out = append(out, m)
			}
		}
		return out
	}
	var m rpcAnswer
	if err := json.Unmarshal([]byte(body), &m); err != nil {
		t.Fatalf("answer %q (%s): %v", body, resp.Header.Get("Content-Type"), err)
	}
	return append(out, m)
}

// TestHTTPCallAnswers: a plain call is answered with a JSON body, one that
// reports progress with an event stream of its progress and then its
// result; the results are those the SDK's path gives.
func TestHTTPCallAnswers(t *testing.T) {
	ts := serveProbe(t, newProbe(), server.HTTPOptions{})
	c := open(t, ts, "", `{}`)
	resp, body := c.post(callBody(7, "weather", `{"city":"Oslo"}`), nil)
	if ct := resp.Header.Get("Content-Type"); resp.StatusCode != 200 || ct != "application/json" {
		t.Fatalf("weather: status %d, %s: %s", resp.StatusCode, ct, body)
	}
	m := messages(t, resp, body)
	if len(m) != 1 || m[0].ID != float64(7) || m[0].Result == nil || m[0].Result.Structured["tempC"] != 21.5 {
		t.Fatalf("weather: %s", body)
	}

	resp, body = c.post(`{"jsonrpc":"2.0","id":"s","method":"tools/call","params":{"name":"steps","arguments":{},`+
		`"_meta":{"progressToken":"tok"}}}`, nil)
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("steps: %s: %s", ct, body)
	}
	m = messages(t, resp, body)
	if len(m) != 4 {
		t.Fatalf("steps: %d messages, want 3 progress and the result: %s", len(m), body)
	}
	for i, p := range m[:3] {
		var params struct {
			Token    string  `json:"progressToken"`
			Progress float64 `json:"progress"`
		}
		if p.Method != "notifications/progress" || json.Unmarshal(p.Params, &params) != nil ||
			params.Token != "tok" || params.Progress != float64(i+1) {
			t.Errorf("steps: message %d: %s %s", i, p.Method, p.Params)
		}
	}
	if last := m[3]; last.ID != "s" || last.Result == nil || last.Result.Content[0].Text != "done" {
		t.Errorf("steps: the result: %s", body)
	}

	resp, body = c.post(callBody(8, "fail", `{}`), nil)
	if m := messages(t, resp, body); m[0].Result == nil || !m[0].Result.IsError {
		t.Errorf("fail: %s", body)
	}
}

// TestHTTPCallRefused: a call without the token, from a foreign page, in a
// session another client ended, or in a session id guessed, never runs.
func TestHTTPCallRefused(t *testing.T) {
	p := newProbe()
	ts := serveProbe(t, p, server.HTTPOptions{Token: "s3cret"})
	a := open(t, ts, "s3cret", `{}`)
	if resp, body := a.post(callBody(2, "count", `{}`), nil); resp.StatusCode != 200 || !strings.Contains(body, `"1"`) {
		t.Fatalf("the first call: status %d: %s", resp.StatusCode, body)
	}
	cases := []struct {
		name string
		hdr  map[string]string
		want int
	}{
		{"no token", map[string]string{"Authorization": ""}, http.StatusUnauthorized},
		{"a wrong token", map[string]string{"Authorization": "Bearer s3cre"}, http.StatusUnauthorized},
		{"a foreign page", map[string]string{"Origin": "https://evil.example"}, http.StatusForbidden},
		{"a guessed session", map[string]string{"Mcp-Session-Id": "ABCDEFGHIJKLMNOPQRSTUVWXYZ"}, http.StatusNotFound},
	}
	for _, c := range cases {
		resp, body := a.post(callBody(3, "count", `{}`), c.hdr)
		if resp.StatusCode != c.want {
			t.Errorf("%s: status %d, want %d: %s", c.name, resp.StatusCode, c.want, body)
		}
	}
	if n := p.runs.Load(); n != 1 {
		t.Fatalf("refused calls ran: %d runs, want 1", n)
	}

	// A session its client ended cannot be called again, by it or by
	// anyone who learned its id.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	del := a.request(ctx, "", nil)
	del.Method = http.MethodDelete
	resp, err := http.DefaultClient.Do(del)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		t.Fatalf("DELETE: status %d", resp.StatusCode)
	}
	waitFor(t, func() bool {
		resp, _ := a.post(callBody(4, "count", `{}`), nil)
		return resp.StatusCode == http.StatusNotFound
	}, "the ended session to be refused")
	if n := p.runs.Load(); n != 1 {
		t.Errorf("a call in an ended session ran: %d runs, want 1", n)
	}
}

// TestHTTPCallMalformed: messages that are not well-formed calls get a clear
// error, nothing runs, and the session goes on.
func TestHTTPCallMalformed(t *testing.T) {
	p := newProbe()
	ts := serveProbe(t, p, server.HTTPOptions{})
	c := open(t, ts, "", `{}`)
	for _, body := range []string{
		`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"count","arguments":{}}`,
		`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":"count"}`,
		`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"count","arguments":[1]}}`,
		`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":7}}`,
		`{"jsonrpc":"2.0","id":{"x":1},"method":"tools/call","params":{"name":"count"}}`,
		`{"jsonrpc":"1.0","id":5,"method":"tools/call","params":{"name":"count"}}`,
		`[{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"count"}}]`,
		`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"no_such_tool"}}`,
	} {
		resp, answer := c.post(body, nil)
		ok := resp.StatusCode >= 400
		if !ok && resp.StatusCode == 200 {
			// A JSON-RPC error, or a tool's error result, is a clear answer too.
			m := messages(t, resp, answer)
			ok = len(m) == 1 && (m[0].Error != nil || m[0].Result != nil && m[0].Result.IsError)
		}
		if !ok || strings.TrimSpace(answer) == "" {
			t.Errorf("%s: status %d, no clear error: %q", body, resp.StatusCode, answer)
		}
	}
	if n := p.runs.Load(); n != 0 {
		t.Errorf("a malformed call ran: %d runs", n)
	}
	if resp, body := c.post(callBody(6, "count", `{}`), nil); resp.StatusCode != 200 || !strings.Contains(body, `"1"`) {
		t.Errorf("the session after malformed messages: status %d: %s", resp.StatusCode, body)
	}
}

// TestHTTPCallBodyLimits: a call's body past the cap, or sent too slowly,
// is cut off before anything runs.
func TestHTTPCallBodyLimits(t *testing.T) {
	p := newProbe()
	ts := serveProbe(t, p, server.HTTPOptions{MaxBodyBytes: 64 << 10, BodyTimeout: 300 * time.Millisecond})
	c := open(t, ts, "", `{}`)
	big := callBody(2, "count", `{"pad":"`+strings.Repeat("x", 100<<10)+`"}`)
	if resp, body := c.post(big, nil); resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Errorf("100 KiB: status %d: %s", resp.StatusCode, body)
	}

	conn, err := net.Dial("tcp", ts.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	body := callBody(3, "count", `{}`)
	fmt.Fprintf(conn, "POST /mcp HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\n"+
		"Accept: application/json, text/event-stream\r\nMcp-Session-Id: %s\r\nContent-Length: %d\r\n\r\n%s",
		ts.Listener.Addr(), c.sid, len(body), body[:10])
	conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("no answer to a call's body sent too slowly within 10 s: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestTimeout {
		t.Errorf("a slow body: status %d, want 408", resp.StatusCode)
	}
	if n := p.runs.Load(); n != 0 {
		t.Errorf("a cut-off call ran: %d runs", n)
	}
}

// TestHTTPCallCancelled: notifications/cancelled ends the call it names, in
// its own session only; a second call with the id of one in flight is
// refused.
func TestHTTPCallCancelled(t *testing.T) {
	p := newProbe()
	ts := serveProbe(t, p, server.HTTPOptions{})
	a, b := open(t, ts, "", `{}`), open(t, ts, "", `{}`)
	done := make(chan string, 1)
	go func() {
		_, body := a.post(callBody(9, "block", `{}`), nil)
		done <- body
	}()
	cancelBody := `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":9}}`
	select {
	case <-p.blocking:
	case <-time.After(10 * time.Second):
		t.Fatal("the call did not begin within 10 s")
	}
	// A second call with the id of the one in flight is refused.
	if resp, body := a.post(callBody(9, "count", `{}`), nil); resp.StatusCode != http.StatusBadRequest ||
		!strings.Contains(body, "in flight") {
		t.Errorf("a second call with the id of one in flight: status %d: %s", resp.StatusCode, body)
	}
	// Another session's cancellation of the same id does not reach it.
	b.post(cancelBody, nil)
	select {
	case <-p.cancelled:
		t.Fatal("another session's notifications/cancelled cancelled the call")
	case <-time.After(300 * time.Millisecond):
	}
	if resp, body := a.post(cancelBody, nil); resp.StatusCode != http.StatusAccepted {
		t.Fatalf("cancel: status %d: %s", resp.StatusCode, body)
	}
	select {
	case <-p.cancelled:
	case <-time.After(10 * time.Second):
		t.Fatal("notifications/cancelled did not cancel the call within 10 s")
	}
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the cancelled call's POST did not end within 10 s")
	}
	if n := p.runs.Load(); n != 0 {
		t.Errorf("the refused duplicate ran: %d runs", n)
	}
}

// TestHTTPCallQuestion: a call's question goes to its own client on the
// call's stream, and only that client's answer is taken: another session
// that sends an answer with the same id is not heard.
func TestHTTPCallQuestion(t *testing.T) {
	ts := serveProbe(t, newProbe(), server.HTTPOptions{})
	a := open(t, ts, "", `{"elicitation":{}}`)
	b := open(t, ts, "", `{"elicitation":{}}`)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	resp, err := http.DefaultClient.Do(a.request(ctx, callBody(1, "confirm", `{}`), nil))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("confirm: %s", ct)
	}
	events := bufio.NewReader(resp.Body)
	next := func() rpcAnswer {
		t.Helper()
		for {
			line, err := events.ReadString('\n')
			if err != nil {
				t.Fatalf("the call's stream ended: %v", err)
			}
			if data, ok := strings.CutPrefix(strings.TrimSpace(line), "data: "); ok {
				var m rpcAnswer
				var id struct {
					ID json.RawMessage `json:"id"`
				}
				_ = json.Unmarshal([]byte(data), &id)
				if err := json.Unmarshal([]byte(data), &m); err != nil {
					t.Fatal(err)
				}
				m.ID = string(id.ID)
				return m
			}
		}
	}
	q := next()
	if q.Method != "elicitation/create" || !strings.Contains(string(q.Params), "Go on?") {
		t.Fatalf("the question: %s %s", q.Method, q.Params)
	}
	answer := func(accept bool) string {
		return fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"action":"accept","content":{"answer":%t}}}`, q.ID, accept)
	}
	// b answers a's question in its own session: not heard.
	b.post(answer(false), nil)
	// a answers it.
	if resp, body := a.post(answer(true), nil); resp.StatusCode != http.StatusAccepted {
		t.Fatalf("the answer: status %d: %s", resp.StatusCode, body)
	}
	if r := next(); r.Result == nil || r.Result.IsError || r.Result.Content[0].Text != "went on" {
		t.Fatalf("the call's result: %+v", r)
	}
}

// TestHTTPCallUnreadStream: a client that makes a call whose tool sends
// without end, and never reads the answer, costs bounded memory: the
// stream is given up once a write is not taken in time, and the call is
// cancelled.
func TestHTTPCallUnreadStream(t *testing.T) {
	defer server.SetStreamWriteTimeout(500 * time.Millisecond)()
	p := newProbe()
	ts := serveProbe(t, p, server.HTTPOptions{})
	c := open(t, ts, "", `{}`)
	conn, err := net.Dial("tcp", ts.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	// The client's receive buffer as small as the kernel allows, so that
	// the server's writes stop being taken soon.
	conn.(*net.TCPConn).SetReadBuffer(4096)
	var before runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"flood","arguments":{},` +
		`"_meta":{"progressToken":1}}}`
	fmt.Fprintf(conn, "POST /mcp HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\n"+
		"Accept: application/json, text/event-stream\r\nMcp-Session-Id: %s\r\nContent-Length: %d\r\n\r\n%s",
		ts.Listener.Addr(), c.sid, len(body), body)
	select {
	case <-p.flooding:
	case <-time.After(10 * time.Second):
		t.Fatal("the flood did not begin within 10 s")
	}
	select {
	case <-p.floodEnd:
	case <-time.After(20 * time.Second):
		t.Fatalf("the call of a client that does not read was not ended within 20 s (%d messages sent)", p.flooded.Load())
	}
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	sent := p.flooded.Load()
	if sent >= 200_000 {
		t.Fatalf("the tool sent all its %d messages of 1 KiB: the server took them without the client reading", sent)
	}
	t.Logf("%d progress messages of 1 KiB were sent before the call ended", sent)
	if grew := int64(after.HeapAlloc) - int64(before.HeapAlloc); grew > 32<<20 {
		t.Errorf("the heap grew by %d MiB for a client that does not read", grew>>20)
	}
	// The server goes on serving.
	if resp, body := c.post(callBody(2, "count", `{}`), nil); resp.StatusCode != 200 {
		t.Errorf("after the unread stream: status %d: %s", resp.StatusCode, body)
	}
}

// TestHTTPSessionIdle: calls keep a session alive; a session with no
// request for its timeout ends.
func TestHTTPSessionIdle(t *testing.T) {
	p := newProbe()
	ts := serveProbe(t, p, server.HTTPOptions{SessionTimeout: time.Second})
	c := open(t, ts, "", `{}`)
	// Calls for twice the timeout: the session lives on.
	for i := range 10 {
		if resp, body := c.post(callBody(10+i, "count", `{}`), nil); resp.StatusCode != 200 {
			t.Fatalf("call %d, with calls every 200 ms and a timeout of 1 s: status %d: %s", i, resp.StatusCode, body)
		}
		time.Sleep(200 * time.Millisecond)
	}
	time.Sleep(3 * time.Second)
	if resp, body := c.post(callBody(30, "count", `{}`), nil); resp.StatusCode != http.StatusNotFound {
		t.Errorf("a call after the session's timeout: status %d: %s", resp.StatusCode, body)
	}
}
