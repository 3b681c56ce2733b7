package server

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Task status notifications. When a task's status changes, the sessions
// bound to it — the one that made it and those that presented its ID since,
// while they last — are told:
//
//   - a session of MCP 2025-11-25 gets notifications/tasks/status, the task
//     as tasks/get returns it;
//   - a session of 2026-07-28 gets notifications/tasks, the task as tasks/get
//     returns it (with its questions, result or error), for the tasks it
//     named in a subscriptions/listen (notifications.taskIds), while that
//     listen lasts, marked with the listen's subscription ID.
//
// The SDK sends no notification it does not know, so these are written on
// the session's connection beside the SDK's messages, each whole: over
// standard input and output, between the SDK's lines; over streamable HTTP,
// as events of the session's standalone stream (its GET), while the client
// holds one open. A session of another transport (Server.MCP() connected
// to a transport of one's own) gets none: its client polls.

// sink is where a session's task notifications are written.
type sink struct {
	ss  *sdk.ServerSession
	w   io.Writer   // writes one line whole
	out chan []byte // the lines to write, in order

	mu     sync.Mutex
	listen map[string]*listening // task ID → the subscriptions/listen that asked for it
}

// listening is a task a subscriptions/listen named (MCP 2026-07-28).
type listening struct {
	id    any              // the listen's JSON-RPC ID
	level sdk.LoggingLevel // the least severe log message it takes ("" none)
	sent  int              // the number of the last kept message it was sent
}

// addSink makes w the sink of session ss until the session ends, or until
// the returned function is called.
func (s *Server) addSink(ss *sdk.ServerSession, w io.Writer) (remove func()) {
	s.track(ss)
	id := s.sessionID(ss)
	k := &sink{ss: ss, w: w, out: make(chan []byte, sinkLines), listen: map[string]*listening{}}
	s.mu.Lock()
	if s.sinks == nil {
		s.sinks = map[string]*sink{}
	}
	// A new stream of the session replaces the one before it.
	s.sinks[id] = k
	s.mu.Unlock()
	stop := make(chan struct{})
	var once sync.Once
	remove = func() {
		once.Do(func() {
			s.mu.Lock()
			if s.sinks[id] == k {
				delete(s.sinks, id)
			}
			s.mu.Unlock()
			close(stop)
		})
	}
	// The lines are written apart from the task that changed: a client
	// that does not read its input holds up its own notifications, not
	// the task, nor the server's closing.
	go func() {
		ended := make(chan struct{})
		go func() {
			ss.Wait()
			close(ended)
		}()
		for {
			select {
			case b := <-k.out:
				_, _ = k.w.Write(b)
			case <-ended:
				remove()
				return
			case <-stop:
				return
			}
		}
	}()
	return remove
}

// sinkLines bounds the notifications that wait for a session that does not
// read them; more are dropped (the task's state is in tasks/get).
const sinkLines = 64

func (s *Server) sinkOf(sid string) *sink {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sinks[sid]
}

type notification struct {
	JSONRPC string `json:"jsonrpc"`
	Method  string `json:"method"`
	Params  any    `json:"params"`
}

// send queues a notification, and reports whether there was room for it.
func (k *sink) send(method string, params any) bool {
	b, err := json.Marshal(notification{JSONRPC: "2.0", Method: method, Params: params})
	if err != nil {
		return false
	}
	select {
	case k.out <- append(b, '\n'):
		return true
	default:
		return false
	}
}

// taskChanged tells the sessions bound to t of its status.
func (s *Server) taskChanged(t *task) {
	s.tasks.mu.Lock()
	holders := slices.Collect(maps.Keys(t.holders))
	s.tasks.mu.Unlock()
	for _, sid := range holders {
		k := s.sinkOf(sid)
		if k == nil {
			continue
		}
		if !multiRound(k.ss) {
			k.send("notifications/tasks/status", s.tasks.wire(t))
			continue
		}
		// One listener's notifications go out in order, each with the
		// kept messages it has not been sent (tasknotes.go); a message of
		// a notification that found no room goes with the next one.
		k.mu.Lock()
		if l, ok := k.listen[t.id]; ok {
			d := s.tasks.detailed(t, "")
			d.Meta = map[string]any{sdk.MetaKeySubscriptionID: l.id}
			last := s.tasks.withNotes(d, t, l.level, l.sent)
			if k.send("notifications/tasks", d) {
				l.sent = last
			}
		}
		k.mu.Unlock()
	}
}

// The SDK's subscriptions/listen knows no taskIds, and would drop them
// while decoding the request: they are moved into _meta at the edge of the
// connection (liftTaskMessage), with the request's ID, which the handler
// is not told.
const (
	listenTasksKey = "lathe/taskIds"
	listenIDKey    = "lathe/listenId"
)

// ackKey carries, in a subscriptions/listen's context, the task IDs the
// server agreed to, for its acknowledgement.
type ackKey struct{}

// listenTasks serves the taskIds of a subscriptions/listen: the tasks the
// client may see are followed, the acknowledgement names them, and the
// listen lasts until the client ends it (or its session ends).
func (s *Server) listenTasks(ctx context.Context, req sdk.Request, next sdk.MethodHandler) (sdk.Result, error) {
	r, ok := req.(*sdk.SubscriptionsListenRequest)
	if !ok || r.Params == nil {
		return next(ctx, "subscriptions/listen", req)
	}
	raw, asked := r.Params.Meta[listenTasksKey]
	listenID := r.Params.Meta[listenIDKey]
	if asked {
		meta := maps.Clone(r.Params.Meta)
		delete(meta, listenTasksKey)
		delete(meta, listenIDKey)
		r.Params.Meta = meta
	}
	ids, _ := raw.([]any)
	if !asked {
		return next(ctx, "subscriptions/listen", req)
	}
	if !declaresTasks(r.Params.Meta) {
		return nil, errMissingTasks
	}
	k := s.sinkOf(s.sessionID(r.Session))
	if k == nil {
		// A client of MCP 2026-07-28 over streamable HTTP: the listen's
		// own response is where its notifications go (listenStream).
		if w := s.listenWriter(r.Extra); w != nil {
			defer s.addSink(r.Session, w)()
			k = s.sinkOf(s.sessionID(r.Session))
		}
	}
	level, _ := notesWanted(r.Params.Meta)
	var agreed []string
	sid := s.sessionID(r.Session)
	for _, v := range ids {
		id, _ := v.(string)
		// A task the client may not see is left out of the
		// acknowledgement, as one that does not exist is.
		t, err := s.tasks.find(principalOf(req), id)
		if err != nil || k == nil {
			continue
		}
		// The session is bound to the task while the listen lasts.
		if s.tasks.hold(t, sid) {
			defer s.tasks.unhold(t, sid)
		}
		agreed = append(agreed, id)
	}
	if k != nil {
		k.mu.Lock()
		mine := map[string]*listening{}
		for _, id := range agreed {
			mine[id] = &listening{id: listenID, level: level}
			k.listen[id] = mine[id]
		}
		k.mu.Unlock()
		defer func() {
			k.mu.Lock()
			for _, id := range agreed {
				if k.listen[id] == mine[id] {
					delete(k.listen, id)
				}
			}
			k.mu.Unlock()
		}()
	}
	res, err := next(context.WithValue(ctx, ackKey{}, agreed), "subscriptions/listen", req)
	if err != nil {
		return res, err
	}
	if len(agreed) > 0 {
		// The SDK ends a listen at once when it follows nothing of its
		// own; the tasks are followed until the client ends it.
		<-ctx.Done()
	}
	return res, nil
}

// ackParams are the params of notifications/subscriptions/acknowledged with
// the task IDs the SDK's type has no field for.
type ackParams struct {
	sdk.ParamsBase
	Notifications map[string]any `json:"notifications"`
}

// withTaskIDs adds the agreed task IDs to a subscriptions/listen's
// acknowledgement (a notification the SDK sends in the listen's context).
func withTaskIDs(ctx context.Context, req sdk.Request) sdk.Request {
	agreed, ok := ctx.Value(ackKey{}).([]string)
	if !ok {
		return req
	}
	p, ok := req.GetParams().(*sdk.SubscriptionsAcknowledgedParams)
	ss, ok2 := req.GetSession().(*sdk.ServerSession)
	if !ok || !ok2 || p == nil {
		return req
	}
	b, err := json.Marshal(p.Notifications)
	if err != nil {
		return req
	}
	n := map[string]any{}
	if json.Unmarshal(b, &n) != nil {
		return req
	}
	n["taskIds"] = append([]string{}, agreed...)
	out := &ackParams{Notifications: n}
	out.Meta = p.Meta
	return &sdk.ServerRequest[*ackParams]{Session: ss, Params: out}
}

// liftListen moves the taskIds of a subscriptions/listen, and its ID, into
// its _meta (see listenTasksKey).
func liftListen(full map[string]json.RawMessage) bool {
	var params map[string]json.RawMessage
	if json.Unmarshal(full["params"], &params) != nil || params == nil {
		return false
	}
	var n map[string]json.RawMessage
	if json.Unmarshal(params["notifications"], &n) != nil || n == nil {
		return false
	}
	ids, ok := n["taskIds"]
	if !ok {
		return false
	}
	delete(n, "taskIds")
	var meta map[string]json.RawMessage
	if raw, ok := params["_meta"]; ok && json.Unmarshal(raw, &meta) != nil {
		return false
	}
	if meta == nil {
		meta = map[string]json.RawMessage{}
	}
	meta[listenTasksKey] = ids
	id := full["id"]
	if id == nil {
		id = json.RawMessage("null")
	}
	meta[listenIDKey] = id
	var err error
	if params["notifications"], err = json.Marshal(n); err != nil {
		return false
	}
	if params["_meta"], err = json.Marshal(meta); err != nil {
		return false
	}
	if full["params"], err = json.Marshal(params); err != nil {
		return false
	}
	return true
}

// taskStream makes the standalone stream of a streamable HTTP session (the
// response to its GET) the sink of the session's task notifications, once
// the SDK has accepted it: a GET the SDK refuses — another user's session,
// a second stream — never carries one.
func (s *Server) taskStream(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.Header.Get("Mcp-Session-Id")
		if r.Method != http.MethodGet || id == "" {
			next.ServeHTTP(w, r)
			return
		}
		sw := &sseWriter{ResponseWriter: w}
		sw.live = func() {
			if ss := s.httpSession(id); ss != nil {
				sw.remove = s.addSink(ss, sseInject{sw})
			}
		}
		defer func() {
			sw.mu.Lock()
			sw.closed = true
			remove := sw.remove
			sw.mu.Unlock()
			if remove != nil {
				remove()
			}
		}()
		next.ServeHTTP(sw, r)
	})
}

// httpSession finds the session of a streamable HTTP session ID.
func (s *Server) httpSession(id string) *sdk.ServerSession {
	s.mu.Lock()
	defer s.mu.Unlock()
	cs := s.byHTTPID[id]
	if cs == nil {
		return nil
	}
	for ss, c := range s.sessions {
		if c == cs {
			return ss
		}
	}
	return nil
}

// sseWriter is the response of a standalone stream: the SDK's events and
// the task notifications go out whole, one after another, and nothing is
// written once the handler has returned.
type sseWriter struct {
	http.ResponseWriter
	mu     sync.Mutex
	live   func() // called once the SDK has begun the stream
	remove func()
	headed bool // the status is sent
	began  bool // with 200, as an event stream
	closed bool
}

func (w *sseWriter) WriteHeader(code int) {
	w.mu.Lock()
	w.ResponseWriter.WriteHeader(code)
	begin := w.begins(code)
	w.mu.Unlock()
	if begin && w.live != nil {
		w.live()
	}
}

// begins notes the status of the response, and reports whether it begins
// the stream. w.mu is held.
func (w *sseWriter) begins(code int) bool {
	if w.headed {
		return false
	}
	w.headed = true
	w.began = code == http.StatusOK && strings.HasPrefix(w.Header().Get("Content-Type"), "text/event-stream")
	return w.began
}

func (w *sseWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	// A first Write without WriteHeader sends the status 200 (the SDK
	// begins the stream of a POST so).
	begin := w.begins(http.StatusOK)
	n, err := w.ResponseWriter.Write(p)
	w.mu.Unlock()
	if begin && w.live != nil {
		w.live()
	}
	return n, err
}

func (w *sseWriter) Flush() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (w *sseWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// sseInject writes a notification's line as an event of the stream.
type sseInject struct{ w *sseWriter }

func (i sseInject) Write(p []byte) (int, error) {
	i.w.mu.Lock()
	defer i.w.mu.Unlock()
	if i.w.closed || !i.w.began {
		return 0, io.ErrClosedPipe
	}
	var b bytes.Buffer
	b.WriteString("event: message\ndata: ")
	b.Write(bytes.TrimRight(p, "\n"))
	b.WriteString("\n\n")
	if _, err := i.w.ResponseWriter.Write(b.Bytes()); err != nil {
		return 0, err
	}
	if f, ok := i.w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
	return len(p), nil
}
