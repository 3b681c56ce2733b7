package server

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/lathe-tools/lathe"
)

// BenchmarkMiddlewares measures what the answers taken out of a batch
// (batchAnswers) and the naming of listens (listenStream) add to a request
// they pass on — a tools/call of a session, the gateway's hot path —
// against the same request through readBody alone, in the same run:
// go test -run '^$' -bench Middlewares ./server.
func BenchmarkMiddlewares(b *testing.B) {
	e := lathe.New(lathe.Options{})
	defer e.Close()
	s := New(e, Options{})
	defer s.Close()
	noop := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {})
	body := `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"text":"` +
		strings.Repeat("x", 256) + `"}}}`
	for _, c := range []struct {
		name string
		h    http.Handler
	}{
		{"baseline", readBody(noop)},
		{"batch+listen", readBody(s.batchAnswers(s.listenStream(64, noop)))},
	} {
		b.Run(c.name, func(b *testing.B) {
			w := httptest.NewRecorder()
			b.ReportAllocs()
			for b.Loop() {
				r := httptest.NewRequest("POST", Path, strings.NewReader(body))
				r.Header.Set("Content-Type", "application/json")
				r.Header.Set("Accept", "application/json, text/event-stream")
				r.Header.Set("Mcp-Session-Id", "S1")
				c.h.ServeHTTP(w, r)
			}
		})
	}
}
