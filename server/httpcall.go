package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/lathe-tools/lathe/internal/jsonscan"
	"github.com/lathe-tools/lathe/internal/mcpconv"
)

// The HTTP face's own path for tools/call.
//
// The SDK's streamable HTTP handler serves a tools/call by decoding the
// POSTed message several times over (the message, its params, its _meta
// twice), each time with a fresh decoder and a 32 KB buffer, and by handing
// it between goroutines: the request's, the session's reader, the call's,
// and back. A gateway is a server of tools/call above all, so lathe serves
// that one request itself, on the request's goroutine, with one decoding of
// the message, and leaves every other request to the SDK (initialize, the
// lists, resources, prompts, tasks, the standalone GET stream, DELETE).
//
// It takes only what it is sure to serve as the SDK would: a POST of one
// tools/call, with the headers the SDK requires, in an initialized session
// of a version before 2026-07-28, of a tool the server serves, asking for no
// task and carrying nothing of MCP 2026-07-28 (no input responses, request
// state, or per-request protocol version). Everything else, malformed
// messages included, goes on to the SDK, which answers as it always did.
//
// The call runs through the same handler as the SDK's (handler), in the
// same session. The SDK's receiving middleware does not see it: what every
// call needs belongs in handler and run, which both paths share (the
// session's tracking and end are done here as the middleware does them).
// What the call sends its client (progress, log messages,
// elicitation, sampling) goes through the SDK session's methods, which check
// the client's capabilities and log level, and then, through a sending
// middleware (callMiddleware), onto the call's own response. That response
// is a JSON body when the call sent nothing before its answer, and an event
// stream from the first message it sent. The client answers lathe's
// requests with POSTs of JSON-RPC responses, which are matched here to the
// session that was asked, and cancels a call with notifications/cancelled.

// webSession is what the HTTP face keeps of one streamable HTTP session.
type webSession struct {
	ss *sdk.ServerSession

	mu sync.Mutex
	// calls are the session's tools/calls in flight on this path, by their
	// JSON-RPC id, so that a cancellation reaches them and an id is not
	// used twice at once.
	calls map[string]context.CancelFunc
	// asked are the requests this path sent the client and waits for, by
	// their id.
	asked   map[string]chan *jsonrpc.Response
	lastReq uint64
	// busy counts the session's POSTs in flight; the idle timer runs only
	// when there are none.
	busy  int
	idle  *time.Timer
	ended bool
}

// begin marks a POST of the session under way, stopping its idle timer.
func (w *webSession) begin() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.busy++
	if w.idle != nil {
		w.idle.Stop()
	}
}

// end marks a POST done, starting the idle timer once none is under way.
func (w *webSession) end(timeout time.Duration) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.busy--
	if w.busy == 0 && w.idle != nil && !w.ended {
		w.idle.Reset(timeout)
	}
}

// web returns the HTTP face's state of the session with the Mcp-Session-Id
// id, nil when there is none.
func (s *Server) web(id string) *webSession {
	s.mu.Lock()
	defer s.mu.Unlock()
	if cs := s.byHTTPID[id]; cs != nil {
		return cs.web
	}
	return nil
}

// keepSessions ends a session that has had no request for timeout. The
// SDK's own timer knows only of the requests it serves, and those of
// serveCalls never reach it, so the server keeps the time itself.
func (s *Server) keepSessions(timeout time.Duration, next http.Handler) http.Handler {
	s.mu.Lock()
	s.idleTimeout = timeout
	s.mu.Unlock()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			if ws := s.web(r.Header.Get("Mcp-Session-Id")); ws != nil {
				ws.begin()
				defer ws.end(timeout)
			}
		}
		next.ServeHTTP(w, r)
	})
}

// callKey carries, in the context of a call served by serveCalls, the
// response it writes to.
type callKey struct{}

// callContext is the context of a call of serveCall: it carries the
// call's fastCall under callKey, as context.WithValue would, and holds it
// and the call's response, so that the three are allocated as one.
type callContext struct {
	context.Context
	fc  fastCall
	out callStream
}

func (c *callContext) Value(key any) any {
	if _, ok := key.(callKey); ok {
		return &c.fc
	}
	return c.Context.Value(key)
}

// fastCall is one tools/call served by serveCalls or serveCall26.
type fastCall struct {
	ws *webSession
	// level is the least severe level of log message the call's client
	// takes, when leveled (MCP 2026-07-28 names it in each request; "" takes
	// none); before 2026-07-28 the session's level holds, which the SDK
	// applies.
	level   sdk.LoggingLevel
	leveled bool
	// session, when set, names the call's session for the policy and the
	// engine's events in place of the SDK session's (http26.go).
	session string

	mu  sync.Mutex
	cur *callStream // the response the call's messages go on
}

// out is the response the call's messages go on now.
func (fc *fastCall) out() *callStream {
	fc.mu.Lock()
	defer fc.mu.Unlock()
	return fc.cur
}

// message is a JSON-RPC message as it arrives, its members kept raw. The
// members are found by their exact names (as the SDK finds them), not in
// any case as encoding/json would match struct fields.
type message map[string]json.RawMessage

// readMessage reads the JSON object b into a message: the message
// json.Unmarshal would make of it (each key as written, escapes decoded, the
// last of a repeated key kept), without decoding each member apart. The
// members are slices of b, which the caller keeps unchanged. False for
// anything but an object.
func readMessage(b []byte) (message, bool) {
	if !jsonscan.Valid(b) {
		return nil, false
	}
	m := message{}
	if jsonscan.MembersKnown(b, 0, messageKeys, func(key string, vs, ve int) { m[key] = json.RawMessage(b[vs:ve:ve]) }) != nil {
		return nil, false
	}
	return m, true
}

// messageKeys are the keys of a tools/call and its params, which reading a
// message takes without copying them.
var messageKeys = []string{"jsonrpc", "id", "method", "params", "name", "arguments", "_meta"}

// str is the member key when it is a string, "" when it is null (as
// json.Unmarshal leaves a string), false when it is absent or anything
// else. A string without escapes is taken as it is written; the rest is
// decoded by json.Unmarshal.
func (m message) str(key string) (string, bool) {
	raw, ok := m[key]
	if !ok {
		return "", false
	}
	if s, ok := jsonscan.PlainString(raw); ok {
		// The values every call carries are not copied.
		switch string(s) {
		case "2.0":
			return "2.0", true
		case "tools/call":
			return "tools/call", true
		}
		return string(s), true
	}
	var v string
	if json.Unmarshal(raw, &v) != nil {
		return "", false
	}
	return v, true
}

// idKey is the key of a JSON-RPC id (a string or a number), as the SDK
// compares them; false for anything else.
func idKey(raw json.RawMessage) (string, bool) {
	s, f, num, ok := readID(raw)
	switch {
	case !ok:
		return "", false
	case num:
		var buf [32]byte
		return string(strconv.AppendFloat(append(buf[:0], 'n'), f, 'g', -1, 64)), true
	}
	return "s" + s, true
}

// serveCalls serves the tools/calls it can (see above), the answers to the
// requests it sent, and the cancellations of its calls; it passes on every
// other request. It sits behind the checks of token, origin and body, with
// the body read whole.
func (s *Server) serveCalls(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.Header.Get("Mcp-Session-Id")
		if r.Method == http.MethodPost && sessionless(r) {
			// A client of MCP 2026-07-28 (http26.go).
			body, ok := heldBytes(r)
			if m, read := readMessage(body); ok && read {
				if method, _ := m.str("method"); method == "tools/call" && s.serveCall26(w, r, m) {
					return
				}
			}
			next.ServeHTTP(w, r)
			return
		}
		if r.Method != http.MethodPost || id == "" {
			next.ServeHTTP(w, r)
			return
		}
		ws := s.web(id)
		body, ok := heldBytes(r)
		if ws == nil || !ok || !plainPOST(r) {
			next.ServeHTTP(w, r)
			return
		}
		m, read := readMessage(body)
		if !read {
			next.ServeHTTP(w, r)
			return
		}
		if v, _ := m.str("jsonrpc"); v != "2.0" {
			next.ServeHTTP(w, r)
			return
		}
		method, named := m.str("method")
		_, hasMethod := m["method"]
		switch {
		case !hasMethod:
			// A response: perhaps to a question of this path.
			if ws.answered(m) {
				w.WriteHeader(http.StatusAccepted)
				return
			}
		case !named:
			// A method that is not a string: the SDK's to refuse.
		case method == "notifications/cancelled":
			if ws.cancelled(m) {
				w.WriteHeader(http.StatusAccepted)
				return
			}
		case method == "tools/call":
			if s.serveCall(w, r, ws, m) {
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// plainPOST reports whether r carries the headers the SDK asks of a POST in
// a session of a version before 2026-07-28: a JSON body, an Accept of both
// JSON and event streams, no Last-Event-ID, a protocol version header that
// is absent or names such a version the server speaks, and none of the
// headers of 2026-07-28 that name the method and its parameters.
func plainPOST(r *http.Request) bool {
	// The common header as it is written, without parsing it.
	if ct := r.Header.Get("Content-Type"); ct != "application/json" {
		if ct, _, err := mime.ParseMediaType(ct); err != nil || ct != "application/json" {
			return false
		}
	}
	if !acceptsBoth(r.Header.Values("Accept")) || len(r.Header.Values("Last-Event-ID")) > 0 {
		return false
	}
	if v := r.Header.Get("Mcp-Protocol-Version"); v != "" && (v >= "2026-07-28" || !slices.Contains(protocolVersions, v)) {
		return false
	}
	for k := range r.Header {
		if k == "Mcp-Method" || k == "Mcp-Name" || strings.HasPrefix(k, "Mcp-Param-") {
			return false
		}
	}
	return true
}

// acceptsBoth reports whether an Accept header takes both JSON and event
// streams, as the SDK reads it.
func acceptsBoth(values []string) bool {
	var jsonOK, streamOK bool
	for _, value := range values {
		for raw := range strings.SplitSeq(value, ",") {
			base, _, _ := strings.Cut(strings.TrimSpace(raw), ";")
			switch strings.ToLower(strings.TrimSpace(base)) {
			case "application/json", "application/*":
				jsonOK = true
			case "text/event-stream", "text/*":
				streamOK = true
			case "*/*":
				jsonOK, streamOK = true, true
			}
		}
	}
	return jsonOK && streamOK
}

// object reads the member key, an object, as readMessage reads a message;
// false when it is absent or not an object. m is a message readMessage
// read, and its members, parts of valid JSON, are valid JSON themselves:
// they are not checked again.
func (m message) object(key string) (message, bool) {
	b := m[key]
	p := message{}
	if jsonscan.MembersKnown(b, 0, messageKeys, func(key string, vs, ve int) { p[key] = json.RawMessage(b[vs:ve:ve]) }) != nil {
		return nil, false
	}
	return p, true
}

// toolCall reads the id, the tool's name, the params and the arguments of
// a tools/call (a message readMessage read) that lathe's own path can
// serve: params of no other keys than name, arguments, _meta and the extra
// ones named, and arguments that are an object or null (nil). It reports
// false for anything else, which the SDK's handler serves (and answers when
// malformed).
func toolCall(m message, extra ...string) (key, name string, p message, args json.RawMessage, ok bool) {
	if key, ok = idKey(m["id"]); !ok {
		return
	}
	if p, ok = m.object("params"); !ok {
		return "", "", nil, nil, false
	}
	if name, ok = p.str("name"); !ok {
		return
	}
	for k := range p {
		if k != "name" && k != "arguments" && k != "_meta" && !slices.Contains(extra, k) {
			return "", "", nil, nil, false
		}
	}
	args = p["arguments"]
	if len(args) > 0 && args[0] != '{' && string(args) != "null" {
		return "", "", nil, nil, false
	}
	if string(args) == "null" {
		args = nil
	}
	return key, name, p, args, true
}

// serveCall serves one tools/call, or reports false, having written
// nothing, for the SDK to serve it.
func (s *Server) serveCall(w http.ResponseWriter, r *http.Request, ws *webSession, m message) bool {
	// "task", "inputResponses", "requestState" and whatever else the SDK
	// knows and this path does not are the SDK's to serve.
	key, name, p, args, ok := toolCall(m)
	if !ok {
		return false
	}
	var meta sdk.Meta
	if raw := p["_meta"]; len(raw) > 0 && string(raw) != "null" {
		// A variable of its own, which json.Unmarshal makes escape: a
		// call without _meta allocates none.
		var m sdk.Meta
		if json.Unmarshal(raw, &m) != nil {
			return false
		}
		meta = m
		for k := range meta {
			// MCP 2026-07-28's own keys, and lathe's: a task asked for
			// ("lathe/task", moved there by readBody) is the SDK's to serve.
			if strings.HasPrefix(k, "io.modelcontextprotocol/") || strings.HasPrefix(k, "lathe/") {
				return false
			}
		}
	}
	ss := ws.ss
	if ss.InitializeParams() == nil || multiRound(ss) {
		return false
	}
	s.mu.Lock()
	hasOutput, served := s.outputs[name]
	// What the server keeps of the session, found under the same lock as
	// the tool: the server's one lock is taken by every call of every
	// client. A session it does not keep gets what session gives it.
	cs := s.sessions[ss]
	s.mu.Unlock()
	if !served {
		return false
	}
	if cs == nil {
		cs = s.session(ss)
	}
	if cs.ctx.Err() != nil {
		// The session has ended (its client sent DELETE, which ends its
		// calls first): the SDK, which has forgotten it or is closing it,
		// answers.
		return false
	}

	// The session's end reaches the call through ws.calls (clientSession.end),
	// not a registration with the session's context.
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	ws.mu.Lock()
	if _, dup := ws.calls[key]; dup || ws.ended {
		ws.mu.Unlock()
		if dup {
			writeRPCError(w, http.StatusBadRequest, m["id"], jsonrpc.CodeInvalidRequest,
				"a request with this id is in flight in this session already")
			return true
		}
		return false
	}
	ws.calls[key] = cancel
	ws.mu.Unlock()
	defer func() {
		ws.mu.Lock()
		delete(ws.calls, key)
		ws.mu.Unlock()
	}()

	cc := &callContext{Context: ctx}
	out := &cc.out
	out.init(w, cancel)
	cc.fc.ws, cc.fc.cur = ws, out
	ctx = cc
	req := &sdk.CallToolRequest{Session: ss,
		Params: &sdk.CallToolParamsRaw{Name: name, Arguments: args, Meta: meta},
		Extra:  &sdk.RequestExtra{Header: r.Header}}
	res, err := s.handler(name, hasOutput)(ctx, req)
	out.answer(answerOf(m["id"], res, err))
	return true
}

// answerOf is the JSON-RPC response to the tools/call id that ended with
// res and err: res, with content [] when it has none, or err as a JSON-RPC
// error. A result of the shapes lathe's tools give is written straight
// into the response (mcpconv.AppendCallToolResult), others through
// json.Marshal; the bytes are the same.
func answerOf(id json.RawMessage, res *sdk.CallToolResult, err error) []byte {
	if err == nil && res == nil {
		res = &sdk.CallToolResult{}
	}
	var body []byte
	if err == nil {
		if res.Content == nil {
			res.Content = []sdk.Content{}
		}
		if b, ok := resultAnswer(id, res, ""); ok {
			return b
		}
		body, err = json.Marshal(res)
	}
	var rpcErr *jsonrpc.Error
	if err != nil && !errors.As(err, &rpcErr) {
		rpcErr = &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()}
	}
	return encodeResponse(id, body, rpcErr)
}

// resultAnswer is the JSON-RPC response to the request id with the
// result res, written straight (mcpconv.AppendCallToolResult), the bytes
// json.Marshal gives, with first, members of the caller's ending in a
// comma, ahead of the result's own; false for a result of another shape,
// which the caller encodes with json.Marshal.
func resultAnswer(id json.RawMessage, res *sdk.CallToolResult, first string) ([]byte, bool) {
	size := len(responseHead) + len(id) + len(`,"result":{"content":[]}}`) + len(first)
	for _, c := range res.Content {
		if t, ok := c.(*sdk.TextContent); ok && t != nil {
			size += len(`{"type":"text","text":""},`) + len(t.Text)
		}
	}
	b := append(append(append(make([]byte, 0, size), responseHead...), id...), `,"result":`...)
	open := len(b)
	b, ok := mcpconv.AppendCallToolResult(b, res)
	if !ok {
		return nil, false
	}
	if first != "" {
		// Inside the result's object, ahead of its members.
		b = slices.Insert(b, open+1, []byte(first)...)
	}
	return append(b, '}'), true
}

// responseHead begins every JSON-RPC response, up to its id.
const responseHead = `{"jsonrpc":"2.0","id":`

// encodeResponse is the JSON-RPC response to the request id: result, or
// rpcErr when it is set.
func encodeResponse(id json.RawMessage, result []byte, rpcErr *jsonrpc.Error) []byte {
	var b bytes.Buffer
	b.Grow(len(result) + len(id) + 40)
	b.WriteString(responseHead)
	b.Write(id)
	if rpcErr != nil {
		e, _ := json.Marshal(rpcErr)
		b.WriteString(`,"error":`)
		b.Write(e)
	} else {
		b.WriteString(`,"result":`)
		b.Write(result)
	}
	b.WriteByte('}')
	return b.Bytes()
}

// writeRPCError answers a request with a JSON-RPC error, as the SDK does
// the errors it finds before a request reaches its session.
func writeRPCError(w http.ResponseWriter, status int, id json.RawMessage, code int64, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(encodeResponse(id, nil, &jsonrpc.Error{Code: code, Message: msg}))
}

// answered hands a client's response to the request of this path it
// answers, and reports whether there was one.
func (w *webSession) answered(m message) bool {
	id, ok := m.str("id")
	if !ok || !strings.HasPrefix(id, askedPrefix) {
		return false
	}
	w.mu.Lock()
	ch := w.asked[id]
	delete(w.asked, id)
	w.mu.Unlock()
	if ch == nil {
		return false
	}
	resp := &jsonrpc.Response{Result: m["result"]}
	if raw, ok := m["error"]; ok {
		var e jsonrpc.Error
		if json.Unmarshal(raw, &e) != nil {
			e = jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: "the client's error response is malformed"}
		}
		resp.Error = &e
	}
	ch <- resp // buffered: the asker may have given up
	return true
}

// cancelled cancels the call a notifications/cancelled names, and reports
// whether it was one of this path's.
func (w *webSession) cancelled(m message) bool {
	var p struct {
		RequestID json.RawMessage `json:"requestId"`
	}
	if json.Unmarshal(m["params"], &p) != nil {
		return false
	}
	key, ok := idKey(p.RequestID)
	if !ok {
		return false
	}
	w.mu.Lock()
	cancel := w.calls[key]
	w.mu.Unlock()
	if cancel == nil {
		return false
	}
	cancel()
	return true
}

// askedPrefix begins the ids of the requests this path sends, which are
// strings: the SDK's own are numbers, so the two never meet.
const askedPrefix = "lathe-"

// callMiddleware sends what a call of serveCalls sends its client on that
// call's response, after the SDK's session has checked it (the client's
// capabilities, its log level). Messages of other calls, of other
// sessions, and of no call go on to the SDK.
func callMiddleware(next sdk.MethodHandler) sdk.MethodHandler {
	return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
		fc, ok := ctx.Value(callKey{}).(*fastCall)
		if !ok || req.GetSession() != sdk.Session(fc.ws.ss) {
			return next(ctx, method, req)
		}
		switch method {
		case "notifications/message", "notifications/progress":
			if lm, ok := req.GetParams().(*sdk.LoggingMessageParams); ok && fc.leveled &&
				(fc.level == "" || severity(lm.Level) < severity(fc.level)) {
				return nil, nil
			}
			b, err := encodeNotification(method, req.GetParams())
			if err != nil {
				return nil, err
			}
			fc.out().notify(b)
			return nil, nil
		case "elicitation/create":
			var res sdk.ElicitResult
			if err := fc.ask(ctx, method, req.GetParams(), &res); err != nil {
				return nil, err
			}
			return &res, nil
		case "sampling/createMessage":
			// The SDK's CreateMessage takes the result of
			// CreateMessageWithTools too, and converts it.
			var res sdk.CreateMessageWithToolsResult
			if err := fc.ask(ctx, method, req.GetParams(), &res); err != nil {
				return nil, err
			}
			return &res, nil
		}
		return next(ctx, method, req)
	}
}

func encodeNotification(method string, params any) ([]byte, error) {
	p, err := json.Marshal(params)
	if err != nil {
		return nil, err
	}
	return json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		Method  string          `json:"method"`
		Params  json.RawMessage `json:"params"`
	}{"2.0", method, p})
}

// ask sends the client a request on the call's response and waits for its
// answer, the end of ctx, or the end of the response.
func (fc *fastCall) ask(ctx context.Context, method string, params any, into any) error {
	ws := fc.ws
	ws.mu.Lock()
	ws.lastReq++
	id := askedPrefix + strconv.FormatUint(ws.lastReq, 10)
	ch := make(chan *jsonrpc.Response, 1)
	ws.asked[id] = ch
	ws.mu.Unlock()
	defer func() {
		ws.mu.Lock()
		delete(ws.asked, id)
		ws.mu.Unlock()
	}()
	p, err := json.Marshal(params)
	if err != nil {
		return err
	}
	b, err := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      string          `json:"id"`
		Method  string          `json:"method"`
		Params  json.RawMessage `json:"params"`
	}{"2.0", id, method, p})
	if err != nil {
		return err
	}
	out := fc.out()
	if err := out.request(ctx, b); err != nil {
		return err
	}
	select {
	case resp := <-ch:
		if resp.Error != nil {
			return resp.Error
		}
		if err := json.Unmarshal(resp.Result, into); err != nil {
			return fmt.Errorf("the client's answer to %s is malformed: %w", method, err)
		}
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-out.gone:
		return errClientGone
	}
}

var errClientGone = errors.New("the client stopped reading the call's response")

// callStream is the response of one call. It stays unwritten until the
// call sends something before its answer; then it becomes an event stream,
// fed by a goroutine of its own through a bounded queue, so that a client
// that does not read costs at most the queue: what the call sends waits for
// room, and a write the client does not take within streamWriteTimeout ends
// the stream and cancels the call.
type callStream struct {
	w      http.ResponseWriter
	cancel context.CancelFunc

	mu      sync.Mutex
	queue   chan []byte   // nil until the stream begins
	stop    chan struct{} // closed by answer: the writer sends what is queued, and ends
	flushed chan struct{} // closed when the writer has ended
	ended   bool

	gone     chan struct{} // closed when the client stopped taking the stream
	goneOnce sync.Once
}

// streamQueue bounds the messages queued for a call's event stream.
const streamQueue = 64

// streamWriteTimeout is how long a client has to take one event of a
// call's stream (a variable for the tests).
var streamWriteTimeout = 10 * time.Second

func newCallStream(w http.ResponseWriter, cancel context.CancelFunc) *callStream {
	c := &callStream{}
	c.init(w, cancel)
	return c
}

// init readies c, a callStream not yet used, to carry the response w of
// the call that cancel ends.
func (c *callStream) init(w http.ResponseWriter, cancel context.CancelFunc) {
	c.w, c.cancel, c.gone = w, cancel, make(chan struct{})
}

// start begins the event stream, once. c.mu is held.
func (c *callStream) start() {
	if c.queue != nil {
		return
	}
	c.queue = make(chan []byte, streamQueue)
	c.stop = make(chan struct{})
	c.flushed = make(chan struct{})
	h := c.w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache, no-transform")
	h.Set("Connection", "keep-alive")
	c.w.WriteHeader(http.StatusOK)
	go c.write()
}

// write sends the queued events until answer stops it, or the client stops
// taking them.
func (c *callStream) write() {
	defer close(c.flushed)
	rc := http.NewResponseController(c.w)
	defer func() { _ = rc.SetWriteDeadline(time.Time{}) }()
	send := func(b []byte) bool {
		_ = rc.SetWriteDeadline(time.Now().Add(streamWriteTimeout))
		if writeEvent(c.w, b) != nil || rc.Flush() != nil {
			c.goneOnce.Do(func() { close(c.gone) })
			c.cancel()
			return false
		}
		return true
	}
	for {
		select {
		case b := <-c.queue:
			if !send(b) {
				return
			}
		case <-c.stop:
			for {
				select {
				case b := <-c.queue:
					if !send(b) {
						return
					}
				default:
					return
				}
			}
		}
	}
}

func writeEvent(w http.ResponseWriter, data []byte) error {
	buf := make([]byte, 0, len(data)+24)
	buf = append(buf, "event: message\ndata: "...)
	buf = append(buf, data...)
	buf = append(buf, "\n\n"...)
	_, err := w.Write(buf)
	return err
}

// notify queues a notification, waiting for room: no message of a call is
// lost while its client reads. A client that does not read holds it up for
// at most streamWriteTimeout, after which the stream is gone and what is
// sent to it is dropped.
func (c *callStream) notify(b []byte) {
	c.mu.Lock()
	if c.ended {
		c.mu.Unlock()
		return
	}
	c.start()
	q, stop := c.queue, c.stop
	c.mu.Unlock()
	select {
	case q <- b:
	case <-c.gone:
	case <-stop:
	}
}

// request queues a request to the client, waiting for room while ctx lasts.
func (c *callStream) request(ctx context.Context, b []byte) error {
	c.mu.Lock()
	if c.ended {
		c.mu.Unlock()
		return errClientGone
	}
	c.start()
	q, stop := c.queue, c.stop
	c.mu.Unlock()
	select {
	case q <- b:
		return nil
	case <-c.gone:
		return errClientGone
	case <-stop:
		return errClientGone
	case <-ctx.Done():
		return ctx.Err()
	}
}

// answer sends the call's answer: as the JSON body when nothing was sent
// before it, else as the last event of the stream. The JSON body is not
// flushed: it goes out with the end of the response, in one write, so that
// the client keeps its connection (see endWithAnswer).
func (c *callStream) answer(b []byte) {
	c.mu.Lock()
	c.ended = true
	started := c.queue != nil
	if started {
		close(c.stop)
	}
	c.mu.Unlock()
	if !started {
		h := c.w.Header()
		h.Set("Content-Type", "application/json")
		h.Set("Cache-Control", "no-cache, no-transform")
		_, _ = c.w.Write(b)
		return
	}
	<-c.flushed
	select {
	case <-c.gone:
		return
	default:
	}
	// Flushed, unlike the answer of a call that sent nothing before it, so
	// that the deadline can be lifted again: it would otherwise stay on the
	// connection for the client's next request.
	rc := http.NewResponseController(c.w)
	_ = rc.SetWriteDeadline(time.Now().Add(streamWriteTimeout))
	if writeEvent(c.w, b) == nil {
		_ = rc.Flush()
	}
	_ = rc.SetWriteDeadline(time.Time{})
}
