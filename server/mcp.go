// Package server exposes an engine's registry as an MCP server: every tool
// — builtin, local, or from an upstream MCP server — with its annotations,
// output schema and structured results, over stdio or streamable HTTP.
//
//	srv := server.New(engine, server.Options{Name: "lathe"})
//	err := srv.ServeStdio(ctx, os.Stdin, os.Stdout)
//
// A call runs through the engine's pipeline like any other. While it runs,
// its progress reaches the client as notifications/progress (when the client
// sent a progress token), log messages of upstream servers as
// notifications/message, and an upstream server's elicitation or sampling
// request goes to the client that made the call. A tool that asks a
// question is answered through elicitation, when the client offers it.
// Cancelling a call (notifications/cancelled) cancels the engine's call and
// so the upstream one.
//
// Any call can run as an MCP task: the client gets a handle at once and
// fetches the result later, from the same session or a later one (see
// [TaskOptions] for the bounds). Under MCP 2026-07-28 a call that asks its
// client something waits for the client's next round, within the bounds of
// [RoundOptions].
//
// The server follows the engine's registry: when its tools change
// ([lathe.EventToolsChanged], from Register, Replace, Unregister, or an
// upstream server's own tools/list_changed), [Server.Sync] brings the
// served tools in line and the SDK sends notifications/tools/list_changed.
//
// Given the engine's pool of upstream servers ([Options].Upstream), the
// server also offers their resources, resource templates and
// subscriptions, prompts, completion and logging, each declared only when
// an upstream server declares it. Each resource read and prompt get of a
// client goes to [Options].Audit, as an [Access].
package server

import (
	"cmp"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/lathe-tools/lathe"
	"github.com/lathe-tools/lathe/internal/mcpconv"
	"github.com/lathe-tools/lathe/runtime/mcp"
	"github.com/lathe-tools/lathe/tool"
)

// ProtocolVersions returns the MCP versions the server speaks, newest
// first. Under 2026-07-28 a call's requests to its client (an upstream
// server's elicitation or sampling, a question, an approval) go back as
// input requests, and the call waits for the client's next round; under
// the versions before it they are sent while the call runs. Over
// streamable HTTP a client of 2026-07-28 has no session, as that version
// has none; its calls wait between rounds in a session of the server's
// own (see [Server.Handler]). The result is a copy: no package a program
// imports can make its servers claim a version they do not speak.
func ProtocolVersions() []string { return slices.Clone(protocolVersions) }

var protocolVersions = []string{"2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"}

// Options configure a [Server]. The zero value is ready to use.
type Options struct {
	// Name and Version are what the server calls itself; "lathe" and "dev"
	// by default.
	Name, Version string
	// Instructions are sent to clients when they connect.
	Instructions string
	// Logger receives the SDK's and the server's own logs; nil discards them.
	Logger *slog.Logger
	// Upstream, if set, is the pool of upstream MCP servers whose
	// resources, prompts, completion and logging the server offers besides
	// the engine's tools, each only when a server of the pool declares it
	// (see upstream.go). Without it, the server offers tools and logging.
	Upstream *mcp.Pool
	// Tasks bound what the server keeps for MCP tasks (see tasks.go).
	Tasks TaskOptions
	// Rounds bound the calls of MCP 2026-07-28 clients that wait for
	// their client's next round (see [RoundOptions]).
	Rounds RoundOptions
	// Audit, if set, records each resource read and prompt get of a
	// client ([Access]): it is called before the request goes upstream,
	// which it does not when Audit fails, and the function it returns is
	// called with how the request ended.
	Audit func(ctx context.Context, a *Access) (end func(AccessEnd), err error)
}

// Server serves an engine's tools over MCP.
type Server struct {
	e    *lathe.Engine
	opts Options
	mcp  *sdk.Server
	ids  atomic.Uint64

	mu     sync.Mutex
	served map[string]string // tool name → the definition served, as JSON
	// outputs says, of each tool served, whether it declares an output
	// schema.
	outputs  map[string]bool
	sessions map[*sdk.ServerSession]*clientSession
	// byHTTPID finds a streamable HTTP session by its Mcp-Session-Id, so
	// that a DELETE can end its calls before the SDK waits for them.
	byHTTPID    map[string]*clientSession
	lastSession uint64
	// idleTimeout ends a streamable HTTP session with no request for this
	// long (keepSessions); zero, never.
	idleTimeout time.Duration
	// r26 runs the calls of clients of MCP 2026-07-28 over HTTP (http26.go).
	r26 round26
	wg  sync.WaitGroup
	// unsubscribe ends the server's subscription to the engine's events.
	unsubscribe func()
	closeOnce   sync.Once
	// rounds holds the calls of clients of MCP 2026-07-28 that wait for
	// their client's answers.
	rounds rounds
	// surf mirrors the upstream servers' resources and prompts (upstream.go).
	surf surfaceState
	// tasks holds the MCP tasks of every client (see tasks.go).
	tasks *taskStore
	// sinks are where sessions are sent task notifications, by session
	// (tasknotify.go).
	sinks map[string]*sink
	// listens are the responses of the subscriptions/listen requests of
	// clients of MCP 2026-07-28 over HTTP, by the name listenStream gave
	// them (listen26.go).
	listens map[string]io.Writer
}

// clientSession is what the server keeps of one client's session.
type clientSession struct {
	// id names the session for the policy and the engine's events, from a
	// counter: a name no later session can share, as it could share the
	// address of a freed one.
	id string
	// ctx ends when the session does (its client closed it, its
	// connection is gone, or the server closes): every call of the
	// session, and every approval or question it waits for, ends with it.
	ctx    context.Context
	cancel context.CancelFunc
	// web is what the HTTP face keeps of a streamable HTTP session
	// (httpcall.go); nil for other sessions.
	web *webSession
}

// end ends the session: its context, and with it every call, approval and
// question of the session's that registered there, and the tools/calls in
// flight on the HTTP face's own path, which register with web instead
// (httpcall.go: cheaper on the path of each call than a registration with
// ctx). A call that comes after finds web ended and is not served there.
func (cs *clientSession) end() {
	cs.cancel()
	w := cs.web
	if w == nil {
		return
	}
	w.mu.Lock()
	w.ended = true
	if w.idle != nil {
		w.idle.Stop()
	}
	calls := make([]context.CancelFunc, 0, len(w.calls))
	for _, cancel := range w.calls {
		calls = append(calls, cancel)
	}
	w.mu.Unlock()
	for _, cancel := range calls {
		cancel()
	}
}

// onEnd arranges for cancel to run when cs ends, and returns what stops
// that. When cs has ended already cancel runs at once, before onEnd
// returns: context.AfterFunc would run it a moment later from a goroutine
// of its own, after the work it was to stop had begun.
func (cs *clientSession) onEnd(cancel context.CancelFunc) (stop func() bool) {
	if cs.ctx.Err() != nil {
		cancel()
		return func() bool { return false }
	}
	return context.AfterFunc(cs.ctx, cancel)
}

// New returns a server of e's tools.
func New(e *lathe.Engine, opts Options) *Server {
	if opts.Name == "" {
		opts.Name = "lathe"
	}
	if opts.Version == "" {
		opts.Version = "dev"
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	s := &Server{e: e, opts: opts, served: map[string]string{}, outputs: map[string]bool{}, sessions: map[*sdk.ServerSession]*clientSession{},
		byHTTPID: map[string]*clientSession{}}
	s.rounds.opts = opts.Rounds.withDefaults()
	sopts := &sdk.ServerOptions{
		Instructions: opts.Instructions,
		Logger:       opts.Logger,
		Capabilities: &sdk.ServerCapabilities{
			Tools: &sdk.ToolCapabilities{ListChanged: true},
		},
		SupportedProtocolVersions: ProtocolVersions(),
	}
	// Resources, prompts, completion and logging, as the upstream servers
	// back them (upstream.go).
	s.surfaceOptions(sopts)
	s.mcp = sdk.NewServer(&sdk.Implementation{Name: opts.Name, Version: opts.Version}, sopts)
	s.gate(sopts)
	// What the HTTP face's own calls send their client goes on their own
	// responses (httpcall.go).
	s.mcp.AddSendingMiddleware(callMiddleware)
	// Sessions are tracked from their first request, so that Close also
	// ends those whose client never finished initializing. Every request
	// of a session ends when the session does: the SDK waits for the
	// requests in flight before it closes a session, and a call that
	// waits for an answer nobody will give would hold it open forever.
	s.mcp.AddReceivingMiddleware(func(next sdk.MethodHandler) sdk.MethodHandler {
		return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
			ss, ok := req.GetSession().(*sdk.ServerSession)
			if !ok {
				return next(ctx, method, req)
			}
			// Tracked from its first request, whatever it is: a client
			// of MCP 2026-07-28 begins with server/discover, not
			// initialize.
			s.track(ss)
			cs := s.session(ss)
			ctx, cancel := context.WithCancel(ctx)
			defer cancel()
			defer cs.onEnd(cancel)()
			return next(ctx, method, req)
		}
	})
	// Tasks: the task methods, and the middleware that answers
	// task-augmented calls (tasks.go).
	s.serveTasks()
	// Subscribed before the first Sync, so that no change falls between.
	// A subscriber that fell behind and lost events may have lost a change
	// of the tools, so it syncs then too; Sync is idempotent.
	s.unsubscribe = e.Subscribe(func(ev lathe.Event) {
		if ev.Kind == lathe.EventToolsChanged || ev.Dropped > 0 {
			s.Sync()
		}
	}, lathe.EventToolsChanged)
	s.Sync()
	s.startSurface() // upstream.go
	return s
}

// track keeps a session until it ends, so that Close can end it.
func (s *Server) track(ss *sdk.ServerSession) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.sessions == nil || s.sessions[ss] != nil {
		return
	}
	cs := &clientSession{id: s.newSessionID()}
	cs.ctx, cs.cancel = context.WithCancel(context.Background())
	s.sessions[ss] = cs
	httpID := ss.ID()
	if httpID != "" {
		s.byHTTPID[httpID] = cs
		cs.web = &webSession{ss: ss, calls: map[string]context.CancelFunc{}, asked: map[string]chan *jsonrpc.Response{}}
		if s.idleTimeout > 0 {
			web := cs.web
			cs.web.idle = time.AfterFunc(s.idleTimeout, func() {
				web.mu.Lock()
				idle := web.busy == 0 && !web.ended
				web.mu.Unlock()
				if idle {
					cs.end()
					ss.Close()
				}
			})
		}
	}
	s.wg.Go(func() {
		ss.Wait()
		cs.end()
		s.mu.Lock()
		delete(s.sessions, ss)
		if httpID != "" && s.byHTTPID[httpID] == cs {
			delete(s.byHTTPID, httpID)
		}
		s.mu.Unlock()
	})
}

// newSessionID returns a session name never given before. s.mu is held.
func (s *Server) newSessionID() string {
	s.lastSession++
	return "mcp-" + strconv.FormatUint(s.lastSession, 10)
}

// session returns what the server keeps of ss. The name lives as long as
// the session; a session the server does not track (one that began as the
// server closed) gets a fresh name and an ended context, so that no
// approval carries over and nothing of it runs.
func (s *Server) session(ss *sdk.ServerSession) *clientSession {
	s.mu.Lock()
	defer s.mu.Unlock()
	if cs := s.sessions[ss]; cs != nil {
		return cs
	}
	cs := &clientSession{id: s.newSessionID()}
	cs.ctx, cs.cancel = context.WithCancel(context.Background())
	cs.cancel()
	return cs
}

// sessionID names the session ss for the policy's "allow for the session"
// and the engine's events (see session).
func (s *Server) sessionID(ss *sdk.ServerSession) string { return s.session(ss).id }

// endHTTPSession ends the calls of the streamable HTTP session id, which
// its client is closing (DELETE): the SDK closes the session only once its
// requests in flight are done.
func (s *Server) endHTTPSession(id string) {
	s.mu.Lock()
	cs := s.byHTTPID[id]
	s.mu.Unlock()
	if cs != nil {
		cs.end()
	}
}

// Close ends every client session, and the server's following of the
// engine's tools. Calls in flight are cancelled, and pending approvals and
// questions with them; Close returns once they have ended. Closing again
// does nothing.
func (s *Server) Close() error {
	s.closeOnce.Do(s.unsubscribe)
	s.mu.Lock()
	sessions := s.sessions
	s.sessions = nil
	s.mu.Unlock()
	for _, cs := range sessions {
		cs.end()
	}
	for ss := range sessions {
		ss.Close()
	}
	s.wg.Wait()
	s.r26.close()
	// Tasks outlive their sessions, not the server (tasks.go).
	s.tasks.close()
	return nil
}

// MCP returns the SDK server, to connect to transports of one's own.
func (s *Server) MCP() *sdk.Server { return s.mcp }

// Sync serves the engine's current tools: it adds the new, replaces the
// changed and removes the gone, and so makes the SDK notify connected
// clients. The server calls it itself whenever the engine's tools change.
func (s *Server) Sync() {
	s.mu.Lock()
	defer s.mu.Unlock()
	defs := s.e.Tools()
	now := make(map[string]bool, len(defs))
	for _, d := range defs {
		now[d.Name] = true
		t := sdkTool(&d)
		b, _ := json.Marshal(t)
		if s.served[d.Name] == string(b) {
			continue
		}
		if err := s.add(t); err != nil {
			s.opts.Logger.Warn("tool not served", "tool", d.Name, "error", err)
			continue
		}
		s.served[d.Name] = string(b)
		s.outputs[d.Name] = t.OutputSchema != nil
	}
	var gone []string
	for name := range s.served {
		if !now[name] {
			gone = append(gone, name)
			delete(s.served, name)
			delete(s.outputs, name)
		}
	}
	if len(gone) > 0 {
		s.mcp.RemoveTools(gone...)
	}
}

// add adds one tool; the SDK panics on a schema it will not serve.
func (s *Server) add(t *sdk.Tool) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("%v", p)
		}
	}()
	s.mcp.AddTool(t, s.handler(t.Name, t.OutputSchema != nil))
	return nil
}

// sdkTool is the MCP form of a definition. The schemas go out as the bytes
// the engine holds (for an upstream tool, those its server sent).
func sdkTool(d *tool.Definition) *sdk.Tool {
	t := &sdk.Tool{
		Name:        d.Name,
		Description: d.Description,
		Title:       d.Annotations.Title,
		Annotations: mcpconv.SDKAnnotations(d.Annotations),
	}
	if t.Description == "" {
		t.Description = d.Summary
	}
	t.InputSchema = json.RawMessage(d.InputSchema)
	if len(d.InputSchema) == 0 {
		t.InputSchema = json.RawMessage(`{"type":"object"}`)
	}
	if len(d.OutputSchema) > 0 {
		t.OutputSchema = json.RawMessage(d.OutputSchema)
	}
	return t
}

// handler runs a tools/call through the engine. hasOutput says the tool
// declares an output schema.
func (s *Server) handler(name string, hasOutput bool) sdk.ToolHandler {
	return func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		ss := req.Session
		// The client's capabilities: from the request under MCP
		// 2026-07-28, else from its session's initialize.
		caps := req.ClientCapabilities()
		if t, ok := ctx.Value(taskKey{}).(*task); ok {
			// A task's questions wait with the task for a client that
			// presents it (taskinput.go).
			return s.run(ctx, ss, req, name, hasOutput, caps, taskAsker{s.tasks, t}), nil
		}
		if multiRound(ss) {
			// The client cannot be sent a request while its call runs:
			// what the call asks goes back to it as input requests, and
			// the call waits for its next tools/call (see rounds).
			return s.rounds.serve(ctx, ss, s.roundClient(ctx, ss), req, func(ctx context.Context, to asker) *sdk.CallToolResult {
				return s.run(ctx, ss, req, name, hasOutput, caps, to)
			})
		}
		return s.run(ctx, ss, req, name, hasOutput, caps, ss), nil
	}
}

// run runs a call through the engine; the call's requests to the client
// go to to.
func (s *Server) run(ctx context.Context, ss *sdk.ServerSession, req *sdk.CallToolRequest, name string, hasOutput bool,
	caps *sdk.ClientCapabilities, to asker) *sdk.CallToolResult {
	{
		h := s.hooks(ctx, ss, to, req.Params.GetProgressToken(), caps)
		h.LogLevel = callLevel(ctx, ss, req)
		ctx = tool.WithHooks(ctx, h)
		ctx = withTrace(ctx, req)
		// An "allow for the session" a client's person gives holds for that
		// client alone, not for every client of the server, nor for a later
		// one, and is forgotten when the session ends.
		cs := s.session(ss)
		sid, end := cs.id, cs.ctx.Done()
		if fc, ok := ctx.Value(callKey{}).(*fastCall); ok && fc.session != "" {
			// A call of a client of MCP 2026-07-28 over HTTP, which has no
			// session: what holds "for the session" holds for the call.
			sid, end = fc.session, ctx.Done()
		}
		ctx = lathe.WithSessionEnd(lathe.WithSession(ctx, sid), end)
		c := &tool.Call{ID: "mcp-" + strconv.FormatUint(s.ids.Add(1), 10), Name: name}
		if len(req.Params.Arguments) > 0 {
			c.Arguments = req.Params.Arguments
		}
		for range maxQuestions {
			out := s.e.Call(ctx, c)
			if out.Question == nil {
				return mcpconv.SDKResult(withoutStructured(out.Result, hasOutput))
			}
			q := out.Question
			if caps == nil || caps.Elicitation == nil {
				return needsInput(q, "the client cannot be asked (it offers no elicitation)")
			}
			// A question nobody answers ends the call as its tool's
			// timeout would have.
			qctx, cancel := ctx, context.CancelFunc(func() {})
			wait, known := s.e.CallTimeout(name)
			if known {
				qctx, cancel = context.WithTimeout(ctx, wait)
			}
			answer, ok, err := ask(qctx, to, q)
			unanswered := qctx.Err() != nil && ctx.Err() == nil
			cancel()
			if unanswered {
				r := tool.ErrorResult(&tool.Error{Kind: tool.KindTimeout, Tool: name, Stage: "question",
					Message: fmt.Sprintf("nobody answered the question within %s, the call's timeout: %s", wait, q.Text)})
				return mcpconv.SDKResult(r)
			}
			if err != nil {
				return needsInput(q, err.Error())
			}
			if !ok {
				r := tool.ErrorResult(&tool.Error{Kind: tool.KindDenied, Tool: name, Stage: "question",
					Message: "the question was not answered: " + q.Text})
				return mcpconv.SDKResult(r)
			}
			if c.Answers == nil {
				c.Answers = map[string]any{}
			}
			c.Answers[q.ID] = answer
		}
		r := tool.ErrorResult(&tool.Error{Kind: tool.KindRuntimeFailure, Tool: name, Stage: "question",
			Message: fmt.Sprintf("the tool asked more than %d questions", maxQuestions)})
		return mcpconv.SDKResult(r)
	}
}

// maxQuestions bounds the questions of one call, against a tool that asks
// forever.
const maxQuestions = 16

// hooks are the ways a call reaches back to the client that made it. What
// they send goes out in the context of call, the context of the client's
// tools/call: the SDK finds there which request it relates to, and over
// streamable HTTP sends it on that request's stream, where the client
// waits for it. Sent with another context (that of an upstream server's
// request, say), it would go to the client's optional standalone stream,
// and be lost when the client opened none.
func (s *Server) hooks(call context.Context, ss *sdk.ServerSession, to asker, token any, caps *sdk.ClientCapabilities) tool.Hooks {
	// Notifications must not end with the call: a log message sent as it
	// returns still belongs to it. A request of MCP 2026-07-28 may name
	// the log level of its own messages; one that names none gets the
	// session's (logging/setLevel), as a request of an older version does.
	notify := sessionLevel{context.WithoutCancel(call)}
	h := tool.Hooks{
		Log: func(m tool.LogMessage) {
			ss.Log(notify, &sdk.LoggingMessageParams{Level: sdk.LoggingLevel(m.Level), Logger: m.Logger,
				Data: json.RawMessage(m.Data)})
		},
	}
	if token != nil {
		h.Progress = func(p tool.Progress) {
			ss.NotifyProgress(notify, &sdk.ProgressNotificationParams{ProgressToken: token,
				Progress: p.Progress, Total: p.Total, Message: p.Message})
		}
	}
	if t, ok := call.Value(taskKey{}).(*task); ok && multiRound(ss) {
		// A task of MCP 2026-07-28: kept with the task, which carries
		// them to its client (tasknotes.go).
		h.Log, h.Progress = s.tasks.notes26(t, h.Log, h.Progress)
	}
	if caps != nil && caps.Elicitation != nil {
		h.Elicit = func(ctx context.Context, r *tool.ElicitRequest) (*tool.ElicitResult, error) {
			ctx, done := related(call, ctx)
			defer done()
			res, err := to.Elicit(ctx, mcpconv.SDKElicit(r))
			if err != nil {
				return nil, err
			}
			return &tool.ElicitResult{Action: res.Action, Content: res.Content}, nil
		}
	}
	if caps != nil && caps.Sampling != nil {
		h.Sample = func(ctx context.Context, r *tool.SamplingRequest) (*tool.SamplingResult, error) {
			p, err := mcpconv.SDKSampling(r)
			if err != nil {
				return nil, err
			}
			ctx, done := related(call, ctx)
			defer done()
			res, err := to.CreateMessage(ctx, p)
			if err != nil {
				return nil, err
			}
			return mcpconv.SamplingResult(res), nil
		}
	}
	return h
}

// callLevel is the log level a call's client names for the call's own log
// messages, which the call's hooks carry to the runtime (an upstream MCP
// server of 2026-07-28 is asked for it in the _meta of lathe's request):
// under MCP 2026-07-28 the level of the tools/call's _meta, "" when it
// names none; before 2026-07-28 "", since the session's level holds, which
// the upstream pool is told of (logging/setLevel, upstream.go).
func callLevel(ctx context.Context, ss *sdk.ServerSession, req *sdk.CallToolRequest) string {
	if fc, ok := ctx.Value(callKey{}).(*fastCall); ok && fc.leveled {
		if severity(fc.level) < 0 {
			return ""
		}
		return string(fc.level)
	}
	return requestLevel(ss, req.Params.GetMeta())
}

// requestLevel is the log level a request of the client of ss names in its
// _meta for its own messages: "" before MCP 2026-07-28, where the
// session's level holds, and when it names none or no valid one.
func requestLevel(ss *sdk.ServerSession, meta sdk.Meta) string {
	if v, _ := meta[sdk.MetaKeyProtocolVersion].(string); v < protocol2026 && !multiRound(ss) {
		return ""
	}
	l, _ := meta[sdk.MetaKeyLogLevel].(string)
	if severity(sdk.LoggingLevel(l)) < 0 {
		return ""
	}
	return l
}

// sessionLevel hides a request's log level when the request named none,
// so that the SDK falls back to the session's. The SDK keeps the level
// under a key of its own; it is the one value of type sdk.LoggingLevel.
type sessionLevel struct{ context.Context }

func (c sessionLevel) Value(key any) any {
	v := c.Context.Value(key)
	if l, ok := v.(sdk.LoggingLevel); ok && l == "" {
		return nil
	}
	return v
}

// related returns a context with the values of call (which request of the
// client a message relates to) that ends when ctx or call does, and the
// function that releases it.
func related(call, ctx context.Context) (context.Context, func()) {
	merged, cancel := context.WithCancel(call)
	stop := context.AfterFunc(ctx, cancel)
	return merged, func() { stop(); cancel() }
}

// ask puts a tool's question to the client as an elicitation of one field,
// "answer". ok is false when the person declined or cancelled.
func ask(ctx context.Context, to asker, q *tool.Question) (any, bool, error) {
	field := map[string]any{"title": q.Text}
	switch q.Kind {
	case tool.QuestionBoolean:
		field["type"] = "boolean"
	case tool.QuestionSelect:
		field["type"] = "string"
		field["enum"] = q.Options
	default:
		field["type"] = "string"
	}
	if q.Default != nil {
		field["default"] = q.Default
	}
	res, err := to.Elicit(ctx, &sdk.ElicitParams{
		Message: q.Text,
		RequestedSchema: map[string]any{
			"type":       "object",
			"properties": map[string]any{"answer": field},
			"required":   []string{"answer"},
		},
	})
	if err != nil {
		return nil, false, fmt.Errorf("asking the client failed: %w", err)
	}
	if res.Action != tool.ElicitAccept {
		return nil, false, nil
	}
	a, ok := res.Content["answer"]
	if !ok {
		return nil, false, nil
	}
	return a, true, nil
}

// needsInput is the result of a call whose question could not be put to
// anyone: an error result that says what the tool asked.
// withoutStructured marks as an error a successful result of a tool that
// declares an output schema but carries no structured output: MCP requires
// structured content that conforms to the schema, and clients reject a
// success without it. The engine leaves out structured output that breaks
// the schema (with a note saying why), so this is how such a result, or a
// tool that gave none, reaches an MCP client: its content intact, as an
// error the model can read.
func withoutStructured(r *tool.Result, hasOutput bool) *tool.Result {
	if !hasOutput || r == nil || r.IsError || len(r.Structured) > 0 {
		return r
	}
	c := *r
	c.IsError, c.ErrorKind = true, tool.KindToolError
	c.Content = append(slices.Clip(c.Content), tool.Content{Type: tool.ContentText,
		Text: "[the tool declares an output schema, and its result has no structured output that matches it]"})
	return &c
}

func needsInput(q *tool.Question, why string) *sdk.CallToolResult {
	msg := fmt.Sprintf("the tool needs input: %s (question %q", q.Text, q.ID)
	if len(q.Options) > 0 {
		msg += "; options: " + strings.Join(q.Options, ", ")
	}
	msg += "); " + why
	r := tool.ErrorResult(&tool.Error{Kind: tool.KindDenied, Stage: "question", Message: msg})
	return mcpconv.SDKResult(r)
}

// ServeStdio serves one client over in and out until in ends or ctx is done.
// A line that holds no JSON-RPC message is answered with a JSON-RPC error
// (parse error or invalid request), and the session goes on. When ctx ends,
// the session's calls are cancelled, pending approvals and questions with
// them, and ServeStdio returns once they have ended.
func (s *Server) ServeStdio(ctx context.Context, in io.Reader, out io.Writer) error {
	// liftLines keeps a tools/call's "task" (tasks.go).
	t, w := stdioTransport(newLiftLines(in), out)
	ss, err := s.mcp.Connect(ctx, t, nil)
	if err != nil {
		return err
	}
	// Task notifications go out between the SDK's lines (tasknotify.go).
	defer s.addSink(ss, w)()
	ended := make(chan error, 1)
	go func() { ended <- ss.Wait() }()
	select {
	case err := <-ended:
		return err
	case <-ctx.Done():
	}
	// The SDK closes a session only once its requests in flight are done:
	// they are ended first.
	s.session(ss).end()
	ss.Close()
	<-ended
	return nil
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

// HTTPOptions configure [Server.Handler].
type HTTPOptions struct {
	// Token, if set, is the bearer token every request must carry in its
	// Authorization header.
	Token string
	// SessionTimeout ends a session that has had no request for this long,
	// so that clients which went away without saying so do not pile up.
	// Zero means an hour; a client whose session ended starts a new one.
	SessionTimeout time.Duration
	// MaxSessions caps the sessions open at once; a client that would open
	// one more is answered 503 Service Unavailable. Zero means
	// [DefaultMaxSessions]; negative, no cap. It caps as well the
	// subscriptions/listen requests of clients of MCP 2026-07-28 open at
	// once, each a stream that lasts as a session's would.
	MaxSessions int
	// MaxBodyBytes caps a request's body; a larger one is answered 413.
	// Zero means [DefaultMaxBodyBytes].
	MaxBodyBytes int64
	// BodyTimeout is how long a client has to send a request's body, from
	// the moment its header was read; a slower one is cut off with 408.
	// Zero means [DefaultBodyTimeout].
	BodyTimeout time.Duration
	// Mounts are other handlers served beside MCP on the same listener, by
	// [http.ServeMux] pattern ("/api/", "/metrics", "/"). Each gets the
	// checks of Host and Origin and the body limits MCP gets ([Rebound]), but authenticates its own
	// requests (a page logs in and carries a cookie; see [RequireToken]
	// for a bearer token alone).
	Mounts map[string]http.Handler
}

// Path is where the HTTP handler serves MCP.
const Path = "/mcp"

// Handler returns the streamable HTTP handler, at [Path]. Whatever the
// address it is served on, it rejects a request whose Origin is not the
// server's own (a web page that is not lathe's cannot drive it) and a request
// that reached a loopback address under a foreign Host name (DNS rebinding);
// with a token, it rejects a request without it. It bounds what one client
// can hold: the sessions open at once, a request body's size, and the time
// to send it (see [HTTPOptions]), and what a call's stream holds for a
// client that does not read it.
//
// It serves tools/call itself, and every other request through the MCP
// SDK's handler. Clients of MCP 2026-07-28, which have no session, are
// served that version: their calls' questions come back as input requests,
// and a call waits for the client's next round in a session of the
// server's own; an approval "for the session" holds for that call.
//
// Without a token, anyone who can reach the address can call every tool and
// answer its own approvals: on a machine with other users that includes
// loopback. Serve it without one only behind authentication of your own or
// on a Unix socket only you can open.
func (s *Server) Handler(opts HTTPOptions) http.Handler {
	maxBody := cmp.Or(opts.MaxBodyBytes, DefaultMaxBodyBytes)
	// The sessions' idle time is kept by keepSessions, which sees every
	// request, those that serveCalls serves too; the SDK's timer would not.
	getServer := func(*http.Request) *sdk.Server { return s.mcp }
	stateful := sdk.NewStreamableHTTPHandler(getServer,
		&sdk.StreamableHTTPOptions{Logger: s.opts.Logger, MaxRequestBodyBytes: maxBody})
	// Clients of MCP 2026-07-28 have no session: the SDK serves them
	// statelessly, their tools/calls aside (http26.go).
	stateless := sdk.NewStreamableHTTPHandler(getServer,
		&sdk.StreamableHTTPOptions{Logger: s.opts.Logger, MaxRequestBodyBytes: maxBody, Stateless: true})
	var h http.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if sessionless(r) {
			stateless.ServeHTTP(w, r)
			return
		}
		stateful.ServeHTTP(w, r)
	})
	h = s.endOnDelete(h)
	// Task notifications on the sessions' standalone streams (tasknotify.go).
	h = s.taskStream(h)
	// And on the responses of listens of MCP 2026-07-28 (listen26.go).
	h = s.listenStream(cmp.Or(opts.MaxSessions, DefaultMaxSessions), h)
	if max := cmp.Or(opts.MaxSessions, DefaultMaxSessions); max > 0 {
		h = s.limitSessions(max, h)
	}
	h = endWithAnswer(h)
	// tools/call, on lathe's own path (httpcall.go).
	h = s.serveCalls(h)
	// Answers to lathe's own requests inside a batch (batch.go).
	h = s.batchAnswers(h)
	h = s.keepSessions(cmp.Or(opts.SessionTimeout, time.Hour), h)
	h = readBody(h)
	h = sameOrigin(h)
	if opts.Token != "" {
		h = bearer(opts.Token, h)
	}
	h = bodyDeadline(cmp.Or(opts.BodyTimeout, DefaultBodyTimeout), maxBody, h)
	mux := http.NewServeMux()
	mux.Handle(Path, h)
	for pattern, m := range opts.Mounts {
		mux.Handle(pattern, mounted(opts, maxBody, m))
	}
	return mux
}

// RequireToken returns a handler that serves next only to requests that
// carry token as their bearer token (Authorization: Bearer TOKEN), compared
// in constant time; others are answered 401 Unauthorized.
func RequireToken(token string, next http.Handler) http.Handler { return bearer(token, next) }

// endOnDelete ends the calls of a session its client closes (DELETE) before
// the SDK closes it: the SDK waits for the session's requests in flight,
// and one that waits for an approval would hold the DELETE forever. It
// sits behind the checks of origin and token, so only a client that may
// use the server, and knows the session's id, ends a session.
func (s *Server) endOnDelete(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodDelete {
			if id := r.Header.Get("Mcp-Session-Id"); id != "" {
				s.endHTTPSession(id)
			}
		}
		next.ServeHTTP(w, r)
	})
}

// sameOrigin rejects requests from a browser page of another origin. A
// loopback origin is accepted only by a loopback host, and then on any port:
// a local tool's page may talk to a local server.
func sameOrigin(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if o := r.Header.Get("Origin"); o != "" && !allowedOrigin(o, r.Host) {
			http.Error(w, "forbidden: cross-origin request", http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, r)
	})
}

func allowedOrigin(origin, host string) bool {
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" {
		return false
	}
	if strings.EqualFold(u.Host, host) {
		return true
	}
	return Loopback(u.Hostname()) && Loopback(hostOnly(host))
}

func hostOnly(hostport string) string {
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		return h
	}
	return hostport
}

// Loopback reports whether host names this machine only: "localhost", or
// an address in 127.0.0.0/8 or ::1.
func Loopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(strings.Trim(host, "[]"))
	return ip != nil && ip.IsLoopback()
}

// bearer rejects a request that does not carry the token. The scheme is
// matched in any case, as HTTP auth schemes are; the tokens are compared by
// their hashes in constant time, so that neither their bytes nor their
// lengths show in the time taken.
func bearer(token string, next http.Handler) http.Handler {
	want := sha256.Sum256([]byte(token))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		scheme, got, _ := strings.Cut(strings.TrimSpace(r.Header.Get("Authorization")), " ")
		sum := sha256.Sum256([]byte(strings.TrimSpace(got)))
		if subtle.ConstantTimeCompare(sum[:], want[:]) != 1 || !strings.EqualFold(scheme, "Bearer") {
			w.Header().Set("WWW-Authenticate", `Bearer realm="lathe"`)
			http.Error(w, "unauthorized: a bearer token is required", http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, r)
	})
}
