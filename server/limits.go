package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// Defaults of [HTTPOptions].
const (
	// DefaultMaxSessions is how many sessions a handler keeps open at once.
	DefaultMaxSessions = 64
	// DefaultMaxBodyBytes is the largest request body a handler reads.
	DefaultMaxBodyBytes = 4 << 20
	// DefaultBodyTimeout is how long a client has to send a request body.
	DefaultBodyTimeout = 30 * time.Second
)

// bodyDeadline gives the client timeout to send the request's body, from
// the moment its header was read, and caps the body at max bytes. It runs
// before everything else, so that a request refused early (without a
// token) cannot hold its connection open by sending its body slowly either:
// the server's discarding of an unread body meets the same deadline.
// readBody lifts the deadline once the body is in.
func bodyDeadline(timeout time.Duration, max int64, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength > max {
			w.Header().Set("Connection", "close")
			http.Error(w, fmt.Sprintf("request body too large: at most %d bytes", max), http.StatusRequestEntityTooLarge)
			return
		}
		// A connection that cannot take a deadline (none of net/http's)
		// still gets the size cap.
		_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(timeout))
		r.Body = http.MaxBytesReader(w, r.Body, max)
		next.ServeHTTP(w, r)
	})
}

// readBody reads the whole body (the SDK reads it whole anyway) while the
// deadline of bodyDeadline holds, then lifts the deadline: a long-lived
// response stream must not be cut by it.
func readBody(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			w.Header().Set("Connection", "close")
			var tooLarge *http.MaxBytesError
			var ne net.Error
			switch {
			case errors.As(err, &tooLarge):
				http.Error(w, fmt.Sprintf("request body too large: at most %d bytes", tooLarge.Limit),
					http.StatusRequestEntityTooLarge)
			case errors.As(err, &ne) && ne.Timeout():
				http.Error(w, "request body not sent in time", http.StatusRequestTimeout)
			default:
				http.Error(w, "reading the request body: "+err.Error(), http.StatusBadRequest)
			}
			return
		}
		_ = http.NewResponseController(w).SetReadDeadline(time.Time{})
		// Tasks: a tools/call's "task" is kept (tasks.go).
		body = liftTaskBody(body)
		r.Body, r.ContentLength = &heldBody{Reader: bytes.NewReader(body), b: body}, int64(len(body))
		next.ServeHTTP(w, r)
	})
}

// limitSessions refuses a request that would open a session (a POST
// without a session id) when max sessions are open. Requests opening one
// are counted while they run, so that a burst of them cannot slip past the
// cap together.
func (s *Server) limitSessions(max int, next http.Handler) http.Handler {
	var opening atomic.Int64
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// The SDK makes a session for each POST without a session ID, and
		// closes it when the request ends unless the request initialized
		// it: only an initialize opens a session that lasts. A client
		// that probes with server/discover before it initializes (one of
		// MCP 2026-07-28 does) must not count twice, its probe's session
		// still closing as its initialize arrives.
		if r.Method != http.MethodPost || r.Header.Get("Mcp-Session-Id") != "" || !initializes(r) {
			next.ServeHTTP(w, r)
			return
		}
		n := opening.Add(1)
		// The request stops counting as opening once its answer starts,
		// by when its session counts as open (it is initialized): were it
		// counted until the handler returns, a client that sends its next
		// initialize on reading the answer would find its first session
		// counted twice.
		var once sync.Once
		done := func() { once.Do(func() { opening.Add(-1) }) }
		defer done()
		w = &answerStarted{ResponseWriter: w, started: done}
		open := 0
		for ss := range s.mcp.Sessions() {
			if ss.InitializeParams() != nil {
				open++
			}
		}
		if open+int(n) > max {
			w.Header().Set("Retry-After", "10")
			http.Error(w, fmt.Sprintf("too many sessions: this server keeps at most %d open; end one (DELETE %s) "+
				"or wait for an idle one to time out", max, Path), http.StatusServiceUnavailable)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// initializes reports whether r's body is an initialize request. A body
// that is not one JSON-RPC message is taken as one, so that the cap judges
// it.
func initializes(r *http.Request) bool {
	body, err := bodyOf(r)
	if err != nil {
		return true
	}
	var m struct {
		Method string `json:"method"`
	}
	if json.Unmarshal(body, &m) != nil {
		return true
	}
	return m.Method == "initialize"
}

// answerStarted calls started when the first byte or the header of the
// answer is written.
type answerStarted struct {
	http.ResponseWriter
	started func()
}

func (a *answerStarted) WriteHeader(code int) {
	a.started()
	a.ResponseWriter.WriteHeader(code)
}

func (a *answerStarted) Write(b []byte) (int, error) {
	a.started()
	return a.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the connection (to flush a
// stream, to set deadlines).
func (a *answerStarted) Unwrap() http.ResponseWriter { return a.ResponseWriter }

// heldBody is a request body readBody has read whole: the handlers behind
// it take the bytes (heldBytes) instead of reading them again.
type heldBody struct {
	*bytes.Reader
	b []byte
}

func (*heldBody) Close() error { return nil }

// bodyOf returns the request's body, whole, and leaves it in place for the
// handlers after: the bytes readBody read, or, when a handler between has
// replaced the body, read again and put back.
func bodyOf(r *http.Request) ([]byte, error) {
	if b, ok := heldBytes(r); ok {
		return b, nil
	}
	b, err := io.ReadAll(r.Body)
	r.Body = &heldBody{Reader: bytes.NewReader(b), b: b}
	return b, err
}

// heldBytes returns the body readBody read, unless a handler between has
// replaced it.
func heldBytes(r *http.Request) ([]byte, bool) {
	if h, ok := r.Body.(*heldBody); ok {
		return h.b, true
	}
	return nil, false
}
