package server

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/lathe-tools/lathe"
	"github.com/lathe-tools/lathe/runtime/builtin"
	"github.com/lathe-tools/lathe/tool"
)

// echoCall is a tools/call as the gateway's clients send it, of an echo
// tool, and echoResult the result the engine gives it.
var (
	echoCall   = []byte(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"message":"hello"}}}`)
	echoResult = &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "Echo: hello"}}}
)

// BenchmarkServeCall serves the tools/call of a builtin echo tool through
// the whole HTTP handler, in an initialized session, without a network:
// go test -run '^$' -bench ServeCall$ ./server.
func BenchmarkServeCall(b *testing.B) {
	e := lathe.New(lathe.Options{})
	defer e.Close()
	type in struct {
		Message string `json:"message"`
	}
	err := e.Register(builtin.Must(builtin.Func(tool.Definition{Name: "echo", Summary: "Echo."},
		func(_ context.Context, in in) (string, error) { return "Echo: " + in.Message, nil })))
	if err != nil {
		b.Fatal(err)
	}
	s := New(e, Options{})
	defer s.Close()
	h := s.Handler(HTTPOptions{})
	post := func(sid, body string) *httptest.ResponseRecorder {
		r := httptest.NewRequest("POST", Path, strings.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("Accept", "application/json, text/event-stream")
		r.Header.Set("Mcp-Protocol-Version", "2025-11-25")
		if sid != "" {
			r.Header.Set("Mcp-Session-Id", sid)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w
	}
	w := post("", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25",`+
		`"capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}`)
	sid := w.Header().Get("Mcp-Session-Id")
	if w.Code != http.StatusOK || sid == "" {
		b.Fatalf("initialize: %d %s", w.Code, w.Body)
	}
	if w := post(sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`); w.Code != http.StatusAccepted {
		b.Fatalf("initialized: %d %s", w.Code, w.Body)
	}
	want := `{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"Echo: hello"}]}}`
	if w := post(sid, string(echoCall)); w.Body.String() != want {
		b.Fatalf("tools/call: %d %s", w.Code, w.Body)
	}
	b.ReportAllocs()
	for b.Loop() {
		post(sid, string(echoCall))
	}
}

// BenchmarkServeCallEncoding measures serveCall's own reading of a
// tools/call and writing of its answer, around the engine, against the
// same work as it was done before (oldCallWork), in the same run: old and
// new one after the other, and paired, which reports new as a ratio of
// old (x-old).
func BenchmarkServeCallEncoding(b *testing.B) {
	for _, c := range []struct {
		name string
		res  *sdk.CallToolResult
	}{
		{"echo", echoResult},
		{"error", &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "denied: <no> \"way\""}},
			IsError: true, Meta: sdk.Meta{"lathe/errorKind": "denied"}}},
		{"structured", &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: `{"sum":3}`}},
			StructuredContent: json.RawMessage(`{"sum":3}`)}},
		{"4KiB", &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: strings.Repeat("line of text\n", 315)}}}},
	} {
		old, cur := oldCallWork(echoCall, c.res), newCallWork(echoCall, c.res)
		if !bytes.Equal(old(), cur()) {
			b.Fatalf("%s: the answers differ:\n%s\n%s", c.name, old(), cur())
		}
		b.Run(c.name+"/old", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				old()
			}
		})
		b.Run(c.name+"/new", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				cur()
			}
		})
		b.Run(c.name+"/paired", func(b *testing.B) {
			var to, tn time.Duration
			for b.Loop() {
				t0 := time.Now()
				old()
				t1 := time.Now()
				cur()
				tn += time.Since(t1)
				to += t1.Sub(t0)
			}
			b.ReportMetric(float64(tn)/float64(to), "x-old")
		})
	}
}

// newCallWork is serveCalls' and serveCall's reading of body and writing
// of the answer res, as they are.
func newCallWork(body []byte, res *sdk.CallToolResult) func() []byte {
	return func() []byte {
		m, ok := readMessage(body)
		if v, _ := m.str("jsonrpc"); !ok || v != "2.0" {
			panic("not JSON-RPC")
		}
		if method, _ := m.str("method"); method != "tools/call" {
			panic("not a tools/call")
		}
		if _, _, _, _, ok := toolCall(m); !ok {
			panic("refused")
		}
		return answerOf(m["id"], res, nil)
	}
}
