package server

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// The subscriptions/listen of a client of MCP 2026-07-28 over streamable
// HTTP. That version has no session, and so no standalone stream: a listen
// is a POST whose response is an event stream that lasts as long as the
// listen, on which the SDK sends the listen's acknowledgement. The task
// notifications the listen asks for (tasknotify.go) go on that same
// response, each event whole between the SDK's.
//
// The SDK serves the listen in a session of its own, made for the request,
// which does not know the response it writes to. listenStream names the
// response with a random value in a header of the request, which the
// listen's handler finds among the request's headers (listenWriter); a
// client's own value of that header is removed first, so that no request
// can name another's response.

// listenHeader carries the name of a listen's response, from listenStream
// to listenTasks.
const listenHeader = "Lathe-Listen-Stream"

// listenStream names the response of each subscriptions/listen of a
// client of MCP 2026-07-28, for listenTasks to send its task notifications
// on. A listen lasts as long as its client keeps it, holding a connection
// and the session the SDK makes for it, as a session's stream would: at
// most max are open at once (no cap when max is not positive), as at most
// max sessions are.
func (s *Server) listenStream(max int, next http.Handler) http.Handler {
	var open atomic.Int64
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Header.Del(listenHeader)
		// The method's header is read first, so that other requests pay
		// nothing more; a listen whose header says otherwise goes without
		// its response named, and so without task notifications.
		if r.Method != http.MethodPost || !sessionless(r) || r.Header.Get("Mcp-Method") != "subscriptions/listen" {
			next.ServeHTTP(w, r)
			return
		}
		body, err := bodyOf(r)
		if err != nil {
			next.ServeHTTP(w, r)
			return
		}
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		if json.Unmarshal(body, &m) != nil || m.Method != "subscriptions/listen" {
			next.ServeHTTP(w, r)
			return
		}
		if n := open.Add(1); max > 0 && n > int64(max) {
			open.Add(-1)
			if len(m.ID) == 0 {
				m.ID = json.RawMessage("null")
			}
			w.Header().Set("Retry-After", "10")
			writeRPCError(w, http.StatusServiceUnavailable, m.ID, jsonrpc.CodeInternalError, fmt.Sprintf(
				"too many listens: this server keeps at most %d subscriptions/listen open at once (HTTPOptions.MaxSessions); "+
					"end one, or follow a task with tasks/get", max))
			return
		}
		defer open.Add(-1)
		var b [16]byte
		if _, err := rand.Read(b[:]); err != nil {
			next.ServeHTTP(w, r)
			return
		}
		name := hex.EncodeToString(b[:])
		sw := &sseWriter{ResponseWriter: w}
		s.mu.Lock()
		if s.listens == nil {
			s.listens = map[string]io.Writer{}
		}
		s.listens[name] = sseInject{sw}
		s.mu.Unlock()
		defer func() {
			sw.mu.Lock()
			sw.closed = true
			sw.mu.Unlock()
			s.mu.Lock()
			delete(s.listens, name)
			s.mu.Unlock()
		}()
		r.Header.Set(listenHeader, name)
		next.ServeHTTP(sw, r)
	})
}

// listenWriter is the response a listen's request names (listenStream),
// nil when it names none.
func (s *Server) listenWriter(extra *sdk.RequestExtra) io.Writer {
	if extra == nil || extra.Header == nil {
		return nil
	}
	name := extra.Header.Get(listenHeader)
	if name == "" {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.listens[name]
}
