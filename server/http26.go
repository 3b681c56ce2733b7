package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Clients of MCP 2026-07-28 over streamable HTTP.
//
// MCP 2026-07-28 has no sessions: each request carries the client's
// version, identity and capabilities in its _meta, and a call that needs
// its client's input is answered with input requests and a request state,
// which the client's next tools/call brings back with the answers. The
// SDK's streamable HTTP handler serves that version only statelessly, with
// a session per request, closed when the request ends; lathe's calls
// between rounds wait in their session (rounds.go), and would end with it.
//
// So the HTTP face serves these clients in two ways. Their requests other
// than tools/call go to the SDK's stateless handler, a session per request,
// as the SDK serves them. Their tools/calls are served by lathe itself
// (serveCall26), in one session of the server's own that lasts as long as
// the server (round26), so that a call waiting for its client's answers
// outlives the request that returned its questions. What a session would
// scope is scoped to the call instead: an approval "for the session" holds
// for the rounds of that call alone, and the request state, random and good
// for one round, names the call to whoever presents it (with the token).

// protocol2026 is the first version without sessions.
const protocol2026 = "2026-07-28"

// sessionless reports whether r is a request of a client of MCP 2026-07-28
// or later: it names such a version and no session.
func sessionless(r *http.Request) bool {
	return r.Header.Get("Mcp-Session-Id") == "" && r.Header.Get("Mcp-Protocol-Version") >= protocol2026
}

// round26 is the session in which the server runs the tools/calls of
// clients of MCP 2026-07-28 over HTTP, and the calls of that session that
// wait for their client's next round.
type round26 struct {
	mu   sync.Mutex
	ws   *webSession
	conn sdk.Connection // the session's other end, drained
	// waiting are the calls between rounds by their request state, so that
	// the next round's messages go on the next round's response.
	waiting map[string]*waiting26
}

type waiting26 struct {
	fc    *fastCall
	timer *time.Timer
}

// session26 returns the session of the calls of MCP 2026-07-28 over HTTP,
// opening it on first use. It is a session of the server's own, connected
// in memory, initialized with MCP 2026-07-28 so that its calls go by
// rounds; what the server sends to its other end (list changes, background
// logs) is read and dropped.
func (s *Server) session26() (*webSession, error) {
	r := &s.r26
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ws != nil {
		select {
		case <-s.session(r.ws.ss).ctx.Done():
			// Closed (the server is closing): not opened again.
			return nil, errors.New("the server is closing")
		default:
			return r.ws, nil
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ct, st := sdk.NewInMemoryTransports()
	ss, err := s.mcp.Connect(ctx, st, nil)
	if err != nil {
		return nil, err
	}
	conn, err := ct.Connect(ctx)
	if err != nil {
		ss.Close()
		return nil, err
	}
	id, _ := jsonrpc.MakeID("init")
	init := &jsonrpc.Request{ID: id, Method: "initialize", Params: json.RawMessage(`{"protocolVersion":"` +
		protocol2026 + `","capabilities":{},"clientInfo":{"name":"lathe-http-2026","version":"1"}}`)}
	if err := conn.Write(ctx, init); err != nil {
		conn.Close()
		ss.Close()
		return nil, err
	}
	for {
		msg, err := conn.Read(ctx)
		if err != nil {
			conn.Close()
			ss.Close()
			return nil, fmt.Errorf("initializing the session of MCP %s calls: %w", protocol2026, err)
		}
		if resp, ok := msg.(*jsonrpc.Response); ok && resp.ID == id {
			if resp.Error != nil {
				conn.Close()
				ss.Close()
				return nil, resp.Error
			}
			break
		}
	}
	if err := conn.Write(ctx, &jsonrpc.Request{Method: "notifications/initialized", Params: json.RawMessage(`{}`)}); err != nil {
		conn.Close()
		ss.Close()
		return nil, err
	}
	go func() {
		for {
			if _, err := conn.Read(context.Background()); err != nil {
				return
			}
		}
	}()
	r.conn = conn
	r.ws = &webSession{ss: ss, calls: map[string]context.CancelFunc{}, asked: map[string]chan *jsonrpc.Response{}}
	r.waiting = map[string]*waiting26{}
	return r.ws, nil
}

// serveCall26 serves one tools/call of a client of MCP 2026-07-28, or
// reports false, having written nothing, for the SDK's stateless handler to
// serve it (and answer what is malformed).
func (s *Server) serveCall26(w http.ResponseWriter, r *http.Request, m message) bool {
	_, name, p, args, ok := toolCall(m, "inputResponses", "requestState")
	if !ok {
		return false
	}
	// The headers of 2026-07-28 that name the method and the tool must
	// agree with the body; those of parameters are left to the SDK.
	if r.Header.Get("Mcp-Method") != "tools/call" || r.Header.Get("Mcp-Name") != name {
		return false
	}
	for k := range r.Header {
		if strings.HasPrefix(k, "Mcp-Param-") {
			return false
		}
	}
	var meta sdk.Meta
	if json.Unmarshal(p["_meta"], &meta) != nil {
		return false
	}
	if v, _ := meta[sdk.MetaKeyProtocolVersion].(string); v != protocol2026 || r.Header.Get("Mcp-Protocol-Version") != v {
		return false
	}
	for k := range meta {
		if strings.HasPrefix(k, "lathe/") {
			return false // a task (tasks.go)
		}
	}
	if declaresTasks(meta) {
		// The server may make the call a task (tasks26.go), which the
		// SDK's path does.
		return false
	}
	var level sdk.LoggingLevel
	if v, ok := meta[sdk.MetaKeyLogLevel].(string); ok {
		level = sdk.LoggingLevel(v)
	}
	var state string
	if raw, ok := p["requestState"]; ok && json.Unmarshal(raw, &state) != nil {
		return false
	}
	var inputs sdk.InputResponseMap
	if raw, ok := p["inputResponses"]; ok && json.Unmarshal(raw, &inputs) != nil {
		return false
	}
	s.mu.Lock()
	hasOutput, served := s.outputs[name]
	s.mu.Unlock()
	if !served {
		return false
	}
	ws, err := s.session26()
	if err != nil {
		writeRPCError(w, http.StatusServiceUnavailable, m["id"], jsonrpc.CodeInternalError, err.Error())
		return true
	}

	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	out := newCallStream(w, cancel)
	// A call that resumes goes on sending on this round's response.
	fc := s.r26.resume(state, out)
	if fc == nil {
		fc = &fastCall{ws: ws, cur: out, level: level, leveled: true}
		s.mu.Lock()
		fc.session = s.newSessionID()
		s.mu.Unlock()
	}
	// The client the call counts against, named when a bound of the
	// rounds needs it: a call that can be asked nothing never does.
	client := func() string { return client26(r, meta) }
	ctx = logLevel26{context.WithValue(context.WithValue(ctx, callKey{}, fc), roundKey{}, client)}
	req := &sdk.CallToolRequest{Session: ws.ss,
		Params: &sdk.CallToolParamsRaw{Name: name, Arguments: args, Meta: meta, InputResponses: inputs, RequestState: state},
		Extra:  &sdk.RequestExtra{Header: r.Header}}
	var res *sdk.CallToolResult
	if caps, ok := asksNothing(meta); state == "" && ok {
		// A client that can be asked nothing: its call cannot wait
		// between rounds (what it would ask ends as a question nobody
		// can answer, as in rounds), so it runs here, on the request's
		// goroutine, without the rounds' own.
		res = s.run(ctx, ws.ss, req, name, hasOutput, caps, ws.ss)
	} else {
		res, err = s.handler(name, hasOutput)(ctx, req)
	}
	var body []byte
	if err == nil && res == nil {
		res = &sdk.CallToolResult{}
	}
	if err == nil && res.RequestState == "" {
		if b, ok := completeAnswer(m["id"], res); ok {
			out.answer(b)
			return true
		}
	}
	if err == nil {
		input := len(res.InputRequests) > 0
		if res.Content == nil && !input {
			res.Content = []sdk.Content{}
		}
		if body, err = json.Marshal(res); err == nil {
			kind := "complete"
			if input {
				kind = "input_required"
			}
			body = append([]byte(`{"resultType":"`+kind+`",`), body[1:]...)
			if len(body) > 0 && body[len(body)-2] == ',' {
				// The result was empty ({}).
				body = append(body[:len(body)-2], '}')
			}
		}
		if res.RequestState != "" {
			s.r26.hold(res.RequestState, fc, s.rounds.opts.Wait)
		}
	}
	var rpcErr *jsonrpc.Error
	if err != nil && !errors.As(err, &rpcErr) {
		rpcErr = &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()}
	}
	out.answer(encodeResponse(m["id"], body, rpcErr))
	return true
}

// asksNothing reports whether the capabilities a request of MCP 2026-07-28
// declares in its _meta offer neither elicitation nor sampling, and
// returns them for the call's hooks, which look at those two alone. It
// reads the _meta as decoded from JSON; what it cannot read there (no
// capabilities, a value of another shape) it reports false for, and the
// SDK's reading decides.
func asksNothing(meta sdk.Meta) (*sdk.ClientCapabilities, bool) {
	caps, ok := meta[sdk.MetaKeyClientCapabilities].(map[string]any)
	if !ok {
		return nil, false
	}
	if caps["elicitation"] != nil || caps["sampling"] != nil {
		return nil, false
	}
	return &sdk.ClientCapabilities{}, true
}

// completeAnswer is the JSON-RPC response of MCP 2026-07-28 to the
// tools/call id that ended with res, complete (no input requests, no
// request state): the bytes json.Marshal gives res, with "resultType"
// first. It reports false for a result resultAnswer does not write, which
// the caller encodes with json.Marshal.
func completeAnswer(id json.RawMessage, res *sdk.CallToolResult) ([]byte, bool) {
	if res.Content == nil && res.InputRequests == nil {
		res.Content = []sdk.Content{}
	}
	return resultAnswer(id, res, `"resultType":"complete",`)
}

// client26 names the client of a request of MCP 2026-07-28 for the bounds
// of RoundOptions: the authenticated user, when a layer in front of the
// handler names one, or else the name and version the client declares.
func client26(r *http.Request, meta sdk.Meta) string {
	if ti := auth.TokenInfoFromContext(r.Context()); ti != nil && ti.UserID != "" {
		return "user " + ti.UserID
	}
	var info struct{ Name, Version string }
	if b, err := json.Marshal(meta[sdk.MetaKeyClientInfo]); err == nil {
		_ = json.Unmarshal(b, &info)
	}
	return "declared " + strconv.Quote(info.Name) + " " + strconv.Quote(info.Version)
}

// hold keeps fc under state until the client's next round, or until no
// round could still come (the wait of rounds.go, and a minute).
func (r *round26) hold(state string, fc *fastCall, wait time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	w := &waiting26{fc: fc}
	w.timer = time.AfterFunc(wait+time.Minute, func() {
		r.mu.Lock()
		if r.waiting[state] == w {
			delete(r.waiting, state)
		}
		r.mu.Unlock()
	})
	r.waiting[state] = w
}

// resume returns the call waiting under state, its messages sent from now
// on out; nil when none waits (a new call, or a state that names none,
// which rounds.go answers).
func (r *round26) resume(state string, out *callStream) *fastCall {
	if state == "" {
		return nil
	}
	r.mu.Lock()
	w := r.waiting[state]
	delete(r.waiting, state)
	r.mu.Unlock()
	if w == nil {
		return nil
	}
	w.timer.Stop()
	w.fc.mu.Lock()
	w.fc.cur = out
	w.fc.mu.Unlock()
	return w.fc
}

// close ends the session of MCP 2026-07-28 calls, with the server.
func (r *round26) close() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.conn != nil {
		r.conn.Close()
	}
	for _, w := range r.waiting {
		w.timer.Stop()
	}
	r.waiting = nil
}

// levels are MCP's log levels, least severe first.
var levels = []sdk.LoggingLevel{"debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"}

func severity(l sdk.LoggingLevel) int {
	for i, v := range levels {
		if v == l {
			return i
		}
	}
	return -1
}

// logLevel26 gives the SDK's session, which sends a call's log messages,
// the level a request of MCP 2026-07-28 names in its _meta, as the SDK's
// own handling of such a request does (under a key of its own): the
// messages of a call pass to callMiddleware, which keeps those at or above
// the call's level. Were the key ever to change, the SDK would find no
// level and send nothing: no message is sent against the client's wish.
type logLevel26 struct{ context.Context }

func (c logLevel26) Value(key any) any {
	if t := reflect.TypeOf(key); t != nil && t.Name() == "logLevelContextKey" &&
		t.PkgPath() == "github.com/modelcontextprotocol/go-sdk/mcp" {
		return sdk.LoggingLevel("debug")
	}
	return c.Context.Value(key)
}
