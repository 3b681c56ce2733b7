package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os/exec"
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
	"github.com/lathe-tools/lathe/runtime/process"
	"github.com/lathe-tools/lathe/schema"
	"github.com/lathe-tools/lathe/tool"
)

// Back-off between restarts of a server that keeps failing: the first
// restart after a crash is immediate, so that one crash costs one call; each
// failure after that doubles the wait, up to maxBackoff.
const (
	firstBackoff = 250 * time.Millisecond
	maxBackoff   = 30 * time.Second
	// terminateGrace is how long a stdio server has to exit after its input
	// is closed before it is sent SIGTERM (and, as long again later, SIGKILL).
	terminateGrace = time.Second
)

// UpstreamProtocolVersion is the MCP version lathe asks an upstream server
// for. From 2026-07-28 on, a server may not send a request to its client in
// the middle of a call: it must answer the call with input requests
// instead, and a server written against an older API (one that calls
// Elicit or CreateMessage from its tool's handler, as most do) fails
// with "cannot be sent while serving a request". Under 2025-11-25 both
// kinds of server work: the old kind sends its requests as it always did,
// and an SDK that speaks 2026-07-28 turns the input requests of a new one
// into those same requests for an older client. A server that speaks only
// 2026-07-28 answers initialize with it, and lathe then speaks it, the
// SDK answering the input requests of its calls through the same handlers.
//
// This is the version asked over stdio. Over streamable HTTP lathe asks
// for the newest, 2026-07-28, as the SDK's own client does, and falls back
// to this one with a server that does not speak it (see upstreamVersion in
// tasks.go).
const UpstreamProtocolVersion = "2025-11-25"

// upTool is a tool as one server offers it.
type upTool struct {
	upstream string    // its name on the server
	tool     tool.Tool // Definition.Name is the upstream name made valid, without the prefix
}

// server is one upstream server and its current session.
type server struct {
	pool   *Pool
	cfg    Config
	client *sdk.Client
	stderr *tail
	ctx    context.Context // ends when the server is closed
	cancel context.CancelFunc
	wg     sync.WaitGroup // background work: session watchers, refreshes

	mu         sync.Mutex
	sess       *session
	connecting chan struct{} // closed when the connection attempt under way ends
	connErr    error         // how the last attempt failed
	failures   int           // consecutive failures: attempts that failed, sessions that died
	lastFail   time.Time
	started    bool // a session was established once
	closed     bool
	skipped    bool          // an optional server that Open could not start
	fromCache  bool          // tools came from the cache; no session was established yet
	deferred   bool          // neither started nor registered (Options.Defer)
	gen        atomic.Uint64 // counts changes of tools found when a session started
	tools      []upTool
	inflight   map[uint64]*inflight
	nextID     uint64
	// answered holds the sessions with a call the server answered lately
	// (lingerAnswered), abandoned those with one it did not answer
	// (lingerAbandoned); a session with a call that ended lately is in
	// either.
	answered   lingerSet
	abandoned  lingerSet
	refreshing bool
	again      bool
	// surfCached is the server's surface as the cache holds it (or as it
	// was last listed, when the pool has a cache); surfLoaded says the
	// cache was read (surfacecache.go).
	surfCached *surfaceEntry
	surfLoaded bool
	// nonce is the secret of the marks that name the call a message read
	// from a call's stream is for (related.go).
	nonce string
	// unnamed says the server asked a question naming no call: its calls
	// take turns (turns.go). turn is closed when a call ends; waiters
	// counts the calls of each session waiting for their turn.
	unnamed atomic.Bool
	turn    chan struct{}
	waiters map[string]int
	// held are the questions naming no call that wait to be placed, by
	// the order they came in (turns.go).
	held     map[uint64]bool
	nextHeld uint64
}

// session is one connection to the server: a process or an HTTP session.
type session struct {
	cs    *sdk.ClientSession
	cap   *capture
	done  chan struct{}
	close sync.Once
	// proc is the server's process, nil over HTTP and until it starts.
	proc atomic.Pointer[process.Proc]
	// conns holds the session's HTTP connections, nil over stdio; they
	// are closed with it.
	conns *http.Transport
	// direct sends plain calls past the SDK's client, over stdio
	// (direct.go); nil over HTTP.
	direct *directConn
}

// inflight is a call under way, found by the handlers of requests and
// notifications the server sends while it runs.
type inflight struct {
	// ctx is the context its request is made with; its abort ends the
	// request once the call has a question to end with, question (guarded
	// by server.mu).
	ctx      *callCtx
	hooks    tool.Hooks
	answers  map[string]any // the call's answers to questions it asked before
	question *tool.Question
	// session is the caller's session ([lathe.SessionFrom]); shared says
	// a call of another session was in flight with this one, or one the
	// server did not answer had ended shortly before it began (guarded by
	// server.mu). A shared call is never
	// taken to be the one a request naming no call is for.
	session string
	shared  bool
	// task is the ID of the upstream task the call became (MCP
	// 2025-11-25), which the server's requests for it name (related.go);
	// taskPending says the call may become one, its answer not yet read.
	task        string
	taskPending bool
	// plain says it is a client's request other than a tool call (a
	// resource read, a prompt get, a completion; follow.go), which cannot
	// end with a question.
	plain bool
}

// How long a call that ended still counts, for the attribution of what a
// server sends naming no call: a server may go on working on a call it was
// told to cancel, so a call of another session that begins within
// lingerAbandoned is not taken to be the one such a request is for (see
// server.caller); and a log message that comes within lingerAnswered of a
// call's answer may be about that call, so it reaches that call's session
// alone (see server.background).
const (
	lingerAnswered  = 2 * time.Second
	lingerAbandoned = 30 * time.Second
)

// inflightKey carries a call's id in the context of its tools/call, which
// the SDK hands to the handlers of the input requests (elicitation,
// sampling) a server answers the call with under MCP 2026-07-28.
type inflightKey struct{}

func newServer(p *Pool, cfg Config) *server {
	stderr := cfg.Stderr
	if stderr == nil {
		stderr = p.opts.Stderr
	}
	s := &server{pool: p, cfg: cfg, stderr: &tail{w: stderr}, inflight: map[uint64]*inflight{}, nonce: newNonce()}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.client = sdk.NewClient(&sdk.Implementation{Name: "lathe", Version: "1"}, &sdk.ClientOptions{
		// lathe offers no roots: a server such as the filesystem one would
		// otherwise replace the directories it was given with none.
		Capabilities:                &sdk.ClientCapabilities{},
		ToolListChangedHandler:      func(context.Context, *sdk.ToolListChangedRequest) { s.toolsChanged() },
		ProgressNotificationHandler: s.progress,
		LoggingMessageHandler:       s.log,
		ElicitationHandler:          s.elicit,
		CreateMessageHandler:        s.sample,
		// Resources, prompts and logging besides tools (resources.go).
		ResourceListChangedHandler: s.resourcesChanged,
		PromptListChangedHandler:   s.promptsChanged,
		ResourceUpdatedHandler:     s.resourceUpdated,
	})
	s.client.AddReceivingMiddleware(refuseRoots, titledItemsLeniency)
	s.client.AddSendingMiddleware(s.levelInMeta) // logging.go
	s.client.AddSendingMiddleware(declareTasks)  // tasks.go
	// Tasks: the task methods lathe sends upstream (tasks.go).
	addTaskMethods(s.client)
	return s
}

// refuseRoots answers a server's roots/list with an error. lathe declares
// no roots: the directories a server may use are those of its own
// configuration, never ones a client of lathe names, and an empty list
// would make a server such as the filesystem one drop the directories it
// was given. The SDK would answer with an empty list; a server that asks
// anyway learns instead that there are none to be had.
func refuseRoots(next sdk.MethodHandler) sdk.MethodHandler {
	return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
		if method == "roots/list" {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound,
				Message: "lathe offers no roots: the server's directories are those of its configuration"}
		}
		return next(ctx, method, req)
	}
}

// session returns the live session, starting the server if there is none.
// Concurrent callers share one attempt; a caller whose context ends stops
// waiting, but the attempt goes on for the others.
func (s *server) session(ctx context.Context) (*session, error) {
	for {
		s.mu.Lock()
		switch {
		case s.closed:
			s.mu.Unlock()
			return nil, errors.New("the MCP server is closed")
		case s.sess != nil:
			sess := s.sess
			s.mu.Unlock()
			return sess, nil
		case s.connecting == nil:
			s.connecting = make(chan struct{})
			wait := s.backoffLocked()
			s.wg.Add(1)
			go s.connect(wait, s.connecting)
		}
		ch := s.connecting
		s.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		s.mu.Lock()
		sess, err := s.sess, s.connErr
		s.mu.Unlock()
		if sess != nil {
			return sess, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

// backoffLocked says how long to wait before the next attempt.
func (s *server) backoffLocked() time.Duration {
	if s.failures <= 1 {
		return 0
	}
	d := firstBackoff << (s.failures - 2)
	if d > maxBackoff || d <= 0 {
		d = maxBackoff
	}
	return max(0, d-time.Since(s.lastFail))
}

// connect makes one attempt to start a session, after waiting wait.
func (s *server) connect(wait time.Duration, done chan struct{}) {
	defer s.wg.Done()
	var (
		sess  *session
		tools []upTool
		err   error
	)
	if wait > 0 {
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-s.ctx.Done():
			t.Stop()
		}
	}
	if s.ctx.Err() != nil {
		err = errors.New("the MCP server is closed")
	} else {
		sess, tools, err = s.start()
	}

	if err == nil {
		s.adopt(tools)
	}
	s.mu.Lock()
	s.connecting = nil
	s.connErr = err
	switch {
	case err != nil:
		s.failures++
		s.lastFail = time.Now()
	case s.closed:
		s.mu.Unlock()
		sess.shut()
		close(done)
		return
	default:
		s.sess = sess
		if s.started || s.surfCached != nil {
			// A restarted server forgot its subscriptions, and may offer
			// other resources and prompts (resources.go); so may one whose
			// catalog came from the cache (surfacecache.go).
			s.wg.Add(1)
			go s.resume(sess)
		}
		s.started = true
		s.wg.Add(1)
		go s.watch(sess)
		if s.cfg.PingInterval > 0 {
			s.wg.Add(1)
			go s.ping(sess)
		}
	}
	s.mu.Unlock()
	close(done)
}

// start starts the server, initializes a session and lists the tools,
// within the startup timeout.
func (s *server) start() (*session, []upTool, error) {
	ctx, cancel := context.WithTimeout(s.ctx, s.cfg.startupTimeout())
	defer cancel()
	sess := &session{cap: newCapture(), done: make(chan struct{})}
	sess.cap.nonce = s.nonce
	var t sdk.Transport
	if len(s.cfg.Command) > 0 {
		cmd := exec.Command(s.cfg.Command[0], s.cfg.Command[1:]...)
		cmd.Dir = s.cfg.Dir
		cmd.Stderr = s.stderr
		// The server gets lathe's one environment for children, never
		// lathe's own: a token in it would be one tool call away.
		cmd.Env = process.Env(s.cfg.PassEnv, s.cfg.Env)
		// A grandchild that keeps standard error open does not hold up
		// the end of the session.
		cmd.WaitDelay = terminateGrace
		st := &stdioTransport{cmd: cmd, sandbox: s.cfg.Sandbox, grace: s.cfg.exitGrace(), cap: sess.cap,
			started: func(p *process.Proc) { sess.proc.Store(p) }}
		t = &captureTransport{inner: st, cap: sess.cap}
		// Tasks: task-augmented calls on the wire (tasks.go).
		t = &taskTransport{inner: t}
	} else {
		sess.conns = http.DefaultTransport.(*http.Transport).Clone()
		t = &sdk.StreamableClientTransport{
			Endpoint:     s.cfg.URL,
			HTTPClient:   httpClient(s.cfg.URL, s.cfg.Headers, sess.cap, sess.conns),
			OAuthHandler: s.cfg.OAuth,
			MaxRetries:   2,
		}
	}
	t = s.withTraffic(ctx, t)
	if sess.conns == nil {
		t = &directTransport{inner: t, made: func(c *directConn) { sess.direct = c }}
	}
	cs, err := s.client.Connect(ctx, t, &sdk.ClientSessionOptions{ProtocolVersion: upstreamVersion(s.cfg)})
	if err != nil {
		sess.shut()
		return nil, nil, s.startError("starting", ctx, err)
	}
	sess.cs = cs
	// The log level lathe's clients and the configuration ask for
	// (logging.go); a server that refuses it still serves its tools.
	if err := s.applyLogLevel(ctx, cs); err != nil {
		s.warn(fmt.Errorf("mcp server %s: logging/setLevel: %w", s.cfg.Name, err))
	}
	tools, err := s.list(ctx, sess)
	if err != nil {
		sess.shut()
		return nil, nil, s.startError("listing tools", ctx, err)
	}
	return sess, tools, nil
}

// startError explains a failed start, with the end of the server's stderr.
func (s *server) startError(what string, ctx context.Context, err error) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		err = fmt.Errorf("%s took longer than the startup timeout of %s", what, s.cfg.startupTimeout())
	} else {
		err = fmt.Errorf("%s: %w", what, err)
	}
	if t := s.stderr.String(); t != "" {
		err = fmt.Errorf("%w; its stderr ends:\n%s", err, t)
	}
	return err
}

// watch waits for the session to end and forgets it, so that the next call
// starts the server again. Calls in flight fail as the connection closes.
func (s *server) watch(sess *session) {
	defer s.wg.Done()
	sess.cs.Wait()
	s.forgetSession(sess.cs) // logging.go
	s.mu.Lock()
	crashed := s.sess == sess && !s.closed
	if s.sess == sess {
		s.sess = nil
	}
	if crashed {
		s.failures++
		s.lastFail = time.Now()
	}
	s.mu.Unlock()
	if crashed {
		s.pool.opts.Logger.Warn("MCP server connection ended; it starts again on the next call", "server", s.cfg.Name)
	}
	sess.shut()
	close(sess.done)
}

// drop forgets a session that failed a call, so that the next call starts
// a new one.
func (s *server) drop(sess *session) {
	s.mu.Lock()
	if s.sess == sess {
		s.sess = nil
		s.failures++
		s.lastFail = time.Now()
	}
	s.mu.Unlock()
	sess.shut()
}

// shut closes the session and stops what is left of its process.
func (sess *session) shut() {
	sess.close.Do(func() {
		if sess.cs != nil {
			sess.cs.Close()
		}
		// Whatever is left of the server goes, with everything it
		// started; waiting for it undoes its sandbox.
		if p := sess.proc.Load(); p != nil {
			p.Kill()
			p.Wait()
		}
		if sess.conns != nil {
			sess.conns.CloseIdleConnections()
		}
	})
}

func (s *server) close() {
	s.mu.Lock()
	s.closed = true
	sess := s.sess
	s.sess = nil
	s.mu.Unlock()
	s.cancel()
	if sess != nil {
		sess.shut()
	}
	s.wg.Wait()
}

func (s *server) currentTools() []upTool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.tools
}

// list lists the server's tools and converts those that Allow and Deny let
// through. A tool that lathe cannot take — its definition spoils the list
// (see [capture.screen]), its name cannot be made valid, its schema does not
// compile, or converting it panics — is left out and reported to
// [Options.Warn], naming the server and the tool; the others load.
func (s *server) list(ctx context.Context, sess *session) ([]upTool, error) {
	var tools []upTool
	for t, err := range sess.cs.Tools(ctx, nil) {
		if err != nil {
			return nil, err
		}
		if !s.cfg.allowed(t.Name) {
			continue
		}
		ut, err := s.safeConvert(t, sess.cap.tool(t.Name))
		if err != nil {
			s.warn(fmt.Errorf("mcp server %s: tool %q left out: %w", s.cfg.Name, t.Name, err))
			continue
		}
		tools = append(tools, ut)
	}
	for _, r := range sess.cap.takeRejected() {
		if r.name == "" || s.cfg.allowed(r.name) {
			s.warn(fmt.Errorf("mcp server %s: %w", s.cfg.Name, r))
		}
	}
	slices.SortFunc(tools, func(a, b upTool) int { return strings.Compare(a.upstream, b.upstream) })
	return tools, nil
}

// safeConvert is convert, with a panic of the code it calls (the schema
// compiler, given a hostile schema) turned into an error of that one tool.
func (s *server) safeConvert(t *sdk.Tool, raw *rawTool) (ut upTool, err error) {
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("converting it failed: %v", v)
		}
	}()
	return s.convert(t, raw)
}

// warn reports a problem that costs part of a server, not the server.
func (s *server) warn(err error) {
	if w := s.pool.opts.Warn; w != nil {
		w(err)
		return
	}
	s.pool.opts.Logger.Warn("MCP tool left out", "server", s.cfg.Name, "error", err)
}

// convert makes a lathe tool of an MCP tool. The schemas are the bytes the
// server sent, where they were seen on the wire, so that nothing the SDK
// does not model is lost.
func (s *server) convert(t *sdk.Tool, raw *rawTool) (upTool, error) {
	name := validName(t.Name)
	if !tool.ValidName(s.cfg.prefix() + name) {
		return upTool{}, fmt.Errorf("%q cannot be made a valid tool name (%s)", s.cfg.prefix()+name, tool.NamePattern)
	}
	def := tool.Definition{
		Name:        name,
		Summary:     summaryOf(t.Description),
		Description: t.Description,
		Annotations: mcpconv.Annotations(t),
		Source:      "mcp." + s.cfg.Name,
		Runtime:     RuntimeName,
	}
	var err error
	if raw != nil && len(raw.InputSchema) > 0 {
		def.InputSchema = raw.InputSchema
		def.OutputSchema = raw.OutputSchema
	} else {
		if def.InputSchema, err = marshalSchema(t.InputSchema); err != nil {
			return upTool{}, err
		}
		if def.OutputSchema, err = marshalSchema(t.OutputSchema); err != nil {
			return upTool{}, err
		}
	}
	if raw != nil && len(raw.Annotations) > 0 {
		// The annotations as sent, read with lathe's own field names, which
		// are MCP's.
		var a tool.Annotations
		if json.Unmarshal(raw.Annotations, &a) == nil {
			if a.Title == "" {
				a.Title = t.Title
			}
			def.Annotations = a
		}
	}
	if _, err := schema.Prepare(def.InputSchema); err != nil {
		return upTool{}, fmt.Errorf("input schema: %w", err)
	}
	if len(def.OutputSchema) > 0 {
		if _, err := schema.Prepare(def.OutputSchema); err != nil {
			return upTool{}, fmt.Errorf("output schema: %w", err)
		}
	}
	return upTool{upstream: t.Name, tool: tool.Tool{Definition: def, Runtime: s.pool, Timeout: s.cfg.Timeout}}, nil
}

func marshalSchema(v any) (json.RawMessage, error) {
	if v == nil {
		return nil, nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("schema: %w", err)
	}
	return b, nil
}

// validName replaces the characters a lathe tool name may not hold (MCP
// allows dots and slashes) with underscores.
func validName(name string) string {
	b := []byte(name)
	for i, c := range b {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-') {
			b[i] = '_'
		}
	}
	return string(b)
}

func sameTools(a, b []upTool) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		ja, _ := json.Marshal(a[i].tool.Definition)
		jb, _ := json.Marshal(b[i].tool.Definition)
		if a[i].upstream != b[i].upstream || !bytes.Equal(ja, jb) {
			return false
		}
	}
	return true
}

// toolsChanged lists the tools again after notifications/tools/list_changed.
// Notifications that arrive during a refresh cause one more refresh after
// it, not one each.
func (s *server) toolsChanged() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	if s.refreshing {
		s.again = true
		return
	}
	s.refreshing = true
	s.wg.Add(1)
	go s.refresh()
}

func (s *server) refresh() {
	defer s.wg.Done()
	for {
		s.mu.Lock()
		sess := s.sess
		s.mu.Unlock()
		if sess != nil {
			ctx, cancel := context.WithTimeout(s.ctx, s.cfg.startupTimeout())
			tools, err := s.list(ctx, sess)
			cancel()
			if err != nil {
				s.pool.opts.Logger.Warn("listing tools after list_changed failed", "server", s.cfg.Name, "error", err)
			} else {
				s.mu.Lock()
				changed := !sameTools(s.tools, tools)
				s.tools = tools
				s.mu.Unlock()
				if changed {
					s.pool.refreshed(s, tools)
					s.remember(tools)
				}
			}
		}
		s.mu.Lock()
		if !s.again || s.closed {
			s.refreshing, s.again = false, false
			s.mu.Unlock()
			return
		}
		s.again = false
		s.mu.Unlock()
	}
}

// call runs one tools/call.
func (s *server) call(ctx context.Context, def *tool.Definition, upstream string, c *tool.Call) (*tool.Outcome, error) {
	gen := s.gen.Load()
	sess, err := s.session(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, &tool.Error{Kind: tool.KindRuntimeFailure, Tool: def.Name, Runtime: RuntimeName, Stage: "execute",
			Message: "cannot start MCP server " + s.cfg.Name, Err: err}
	}
	if err := s.stale(gen, def); err != nil {
		return nil, err
	}
	hooks := tool.HooksFrom(ctx)
	callCtx, id, end, err := s.begin(ctx, sess, &inflight{hooks: hooks, answers: c.Answers})
	if err != nil {
		// The call's deadline or cancellation came while it waited for
		// its turn (turns.go).
		return nil, err
	}
	// A call that ends without the server's answer (cancelled, timed out,
	// ended with a question) may still be worked on by the server.
	answered := false
	defer func() { end(answered) }()

	args := json.RawMessage(c.Arguments)
	if len(args) == 0 {
		args = json.RawMessage(`{}`)
	}
	params := &sdk.CallToolParams{Name: upstream, Arguments: args}
	if hooks.Progress != nil || s.pool.opts.Hooks.Progress != nil {
		params.SetProgressToken(progressToken(id))
	}
	// Tasks: a tool its server offers to run as a task runs as one; a
	// server of 2026-07-28 may answer any call with a task (tasks.go).
	ext := tasks26(sess.cs)
	asTask := !ext && offersTasks(sess.cap.tool(upstream))
	var res *sdk.CallToolResult
	endTrace := traceCall(callCtx, params, s.cfg.Name)
	if asTask || ext {
		if asTask {
			askTask(callCtx, params)
		}
		res, err = s.callTask(callCtx, sess, params)
	} else if sess.direct != nil {
		// A plain call over stdio, to a server of MCP before 2026-07-28:
		// the SDK's client would add nothing to it (direct.go).
		res, err = sess.direct.call(callCtx, params)
	} else {
		res, err = sess.cs.CallTool(callCtx, params)
	}
	endTrace(err)
	answered = callCtx.Err() == nil
	// The log and progress messages sent before the answer reach the call
	// before it ends (logging.go).
	sess.settle(callCtx)
	if q := s.asked(id); q != nil {
		// The server asked what only the caller can answer: whatever it
		// did after that is moot, as the call runs again with the answer.
		return &tool.Outcome{Question: q}, nil
	}
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		var werr *jsonrpc.Error
		if errors.As(err, &werr) && werr.Code != codeRejected {
			// The server answered, with an error: the session is sound.
			kind := tool.KindToolError
			if werr.Code == jsonrpc.CodeInvalidParams {
				kind = tool.KindInvalidArguments
			}
			return nil, &tool.Error{Kind: kind, Tool: def.Name, Runtime: RuntimeName, Stage: "execute",
				Message: "MCP server " + s.cfg.Name + " refused the call: " + werr.Message}
		}
		// Dropping the session waits for the server's process, and so for
		// the last of its standard error, which says why it died.
		s.drop(sess)
		msg := "MCP server " + s.cfg.Name + " failed during the call"
		if t := s.stderr.String(); t != "" {
			msg += "; its stderr ends:\n" + t
		}
		return nil, &tool.Error{Kind: tool.KindRuntimeFailure, Tool: def.Name, Runtime: RuntimeName, Stage: "execute",
			Message: msg, Err: err}
	}
	s.healthy()
	r, err := mcpconv.Result(res)
	if err != nil {
		return nil, &tool.Error{Kind: tool.KindRuntimeFailure, Tool: def.Name, Runtime: RuntimeName, Stage: "execute",
			Message: "cannot read the MCP server's result", Err: err}
	}
	return &tool.Outcome{Result: r}, nil
}

// healthy notes a call that succeeded: the server's failures are behind it.
func (s *server) healthy() {
	s.mu.Lock()
	s.failures = 0
	s.mu.Unlock()
}

// codeRejected is the JSON-RPC code the SDK gives a request its transport
// could not deliver, or whose HTTP answer was a failure of the transport
// (its jsonrpc2.ErrRejected, which it does not export): a server that died
// under streamable HTTP shows as that. The server did not answer, so it is
// a failure of the machinery, not of the tool.
const codeRejected = -32005

func progressToken(id uint64) string { return "lathe-" + strconv.FormatUint(id, 10) }

// track adds a call in flight. A call of another session in flight, or
// ended lately, makes both shared.
func (s *server) track(f *inflight) uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pruneEndedLocked(time.Now())
	if s.abandoned.others(f.session) {
		f.shared = true
	}
	for _, g := range s.inflight {
		if g.session != f.session {
			g.shared, f.shared = true, true
		}
	}
	s.nextID++
	if f.ctx != nil {
		// Before f is in flight, where others find it (under s.mu).
		f.ctx.id = s.nextID
	}
	s.inflight[s.nextID] = f
	return s.nextID
}

// asked returns the question the call id ends with, if it has one.
func (s *server) asked(id uint64) *tool.Question {
	s.mu.Lock()
	defer s.mu.Unlock()
	if f := s.inflight[id]; f != nil {
		return f.question
	}
	return nil
}

// caller finds the call an input request of the server is for: the one
// whose tools/call carried ctx (MCP 2026-07-28), else the only call in
// flight, provided no call of another session was in flight with it, nor
// one the server did not answer ended shortly before it (see
// lingerAbandoned). A request the server sent on
// its own while several calls are in flight, perhaps of several clients,
// cannot be told apart, nor one sent for a call that has just ended from
// one for the call that followed: caller returns 0 and nil for it, as when
// no call is in flight, so that no call's answers answer another's
// elicitation, no client is shown another's question, and no call ends
// with another's question.
func (s *server) caller(ctx context.Context) (uint64, *inflight) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if id, ok := ctx.Value(inflightKey{}).(uint64); ok {
		// The call it is for, or none if that call has ended.
		if f := s.inflight[id]; f != nil {
			return id, f
		}
		return 0, nil
	}
	if len(s.inflight) != 1 {
		return 0, nil
	}
	for id, f := range s.inflight {
		if f.shared {
			return 0, nil
		}
		return id, f
	}
	return 0, nil
}

// begin puts f, a request of a client to s (a call, or one followed as a
// call is: follow.go), in flight: it holds the log level f's hooks name on
// a server that takes no level per request (logging.go), waits for the
// request's turn (turns.go) and tracks it. It returns the context to make
// the request with, which names it (inflightKey) and which end cancels,
// the request's id, and end, to be called once the request is done with
// whether the server answered it.
func (s *server) begin(ctx context.Context, sess *session, f *inflight) (context.Context, uint64, func(answered bool), error) {
	release := s.holdLevel(ctx, sess, f.hooks.LogLevel)
	f.ctx, f.session = newCallCtx(ctx), lathe.SessionFrom(ctx)
	id, err := s.trackTurn(ctx, f)
	if err != nil {
		release()
		return nil, 0, nil, err
	}
	return f.ctx, id, func(answered bool) {
		s.untrack(id, answered)
		f.ctx.release()
		release()
	}, nil
}

// pruneEndedLocked forgets the sessions whose calls' linger is over at
// now. s.mu is held.
func (s *server) pruneEndedLocked(now time.Time) {
	s.answered.prune(now)
	s.abandoned.prune(now)
}

// untrack ends a call; answered says the server answered it.
func (s *server) untrack(id uint64, answered bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f := s.inflight[id]
	delete(s.inflight, id)
	if f == nil {
		return
	}
	s.nextTurnLocked() // turns.go
	// The time is taken under the lock, so that each set's entries come in
	// the order they expire.
	if answered {
		s.answered.add(f.session, time.Now().Add(lingerAnswered))
	} else {
		s.abandoned.add(f.session, time.Now().Add(lingerAbandoned))
	}
}

// claimant finds whom a request or notification from the server is for:
// the hooks of the context it came with (the SDK's multi-round-trip path
// keeps the call's context), else those of the call it is for (see
// caller), else the pool's own hooks. MCP before 2026-07-28 does not say
// which call caused a server's elicitation, sampling or log message; such
// a request reaches a call's hooks only when that call is the server's only
// one in flight, so that no client's person is asked, and no client's log
// shows, what a server says about another client's call.
func (s *server) claimant(ctx context.Context, has func(tool.Hooks) bool) (context.Context, tool.Hooks, func(), bool) {
	if h := tool.HooksFrom(ctx); has(h) {
		return ctx, h, func() {}, true
	}
	if _, f := s.caller(ctx); f != nil && has(f.hooks) {
		// Answer within the call's life and the request's, whichever ends first.
		merged, cancel := context.WithCancel(ctx)
		stop := context.AfterFunc(f.ctx, cancel)
		return merged, f.hooks, func() { stop(); cancel() }, true
	}
	if h := s.pool.opts.Hooks; has(h) {
		return ctx, h, func() {}, true
	}
	return ctx, tool.Hooks{}, func() {}, false
}

func (s *server) progress(_ context.Context, req *sdk.ProgressNotificationClientRequest) {
	defer s.handledFor(req.Session) // logging.go
	p := req.Params
	tok, ok := p.ProgressToken.(string)
	if !ok || !strings.HasPrefix(tok, "lathe-") {
		return
	}
	id, err := strconv.ParseUint(strings.TrimPrefix(tok, "lathe-"), 10, 64)
	if err != nil {
		return
	}
	s.mu.Lock()
	f := s.inflight[id]
	s.mu.Unlock()
	h := s.pool.opts.Hooks
	if f != nil && f.hooks.Progress != nil {
		h = f.hooks
	}
	if h.Progress != nil {
		h.Progress(tool.Progress{Progress: p.Progress, Total: p.Total, Message: p.Message})
	}
}

func (s *server) log(ctx context.Context, req *sdk.LoggingMessageRequest) {
	defer s.handledFor(req.Session) // logging.go
	p := req.Params
	data, err := json.Marshal(p.Data)
	if err != nil {
		return
	}
	msg := tool.LogMessage{Level: string(p.Level), Logger: p.Logger, Data: data}
	ctx = s.named(ctx, p.Meta) // related.go
	if _, h, release, ok := s.claimant(ctx, func(h tool.Hooks) bool { return h.Log != nil }); ok {
		release()
		h.Log(msg)
		return
	}
	s.pool.opts.Logger.Debug("MCP server log", "server", s.cfg.Name, "level", msg.Level, "logger", msg.Logger,
		"data", string(msg.Data))
	// A message of no call reaches the pool's watchers (logging.go).
	s.background(p)
}

// elicit answers a server's elicitation: from the answers of the call it
// is for, when they hold it (the call is a second run, after a question);
// else through the hooks (see claimant); else by ending the call with a
// question.
func (s *server) elicit(ctx context.Context, req *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
	r, err := mcpconv.Elicit(req.Params)
	if err != nil {
		return nil, err
	}
	ctx = s.named(ctx, req.Params.Meta)                                                   // related.go
	s.noteUnnamed(ctx)                                                                    // turns.go
	ctx, unplaced := s.attribute(ctx, func(h tool.Hooks) bool { return h.Elicit != nil }) // turns.go
	id, f := s.caller(ctx)
	if f != nil && len(f.answers) > 0 {
		if res, q, err := elicitFromAnswers(r, f.answers); err == nil && q == nil {
			return &sdk.ElicitResult{Action: res.Action, Content: res.Content}, nil
		}
	}
	hctx, h, release, ok := s.claimant(ctx, func(h tool.Hooks) bool { return h.Elicit != nil })
	defer release()
	if !ok {
		if f == nil && unplaced != nil {
			return nil, unplaced
		}
		if f == nil {
			return nil, errors.New("lathe cannot ask anyone: the caller offers no way to answer an elicitation, " +
				"and the server did not say which of its calls under way it is for")
		}
		if f.plain {
			return nil, errors.New("lathe cannot ask anyone: the elicitation came during a request of its client " +
				"that is not a tool call (a resource read, a prompt, a completion), which cannot end with a question")
		}
		_, q, err := elicitFromAnswers(r, f.answers)
		if err == nil && q == nil {
			err = errors.New("the answers do not fit the question")
		}
		if err != nil {
			return nil, fmt.Errorf("lathe cannot ask anyone: the caller offers no way to answer this elicitation: %w", err)
		}
		s.mu.Lock()
		if s.inflight[id] == f && f.question == nil {
			f.question = q
		}
		s.mu.Unlock()
		f.ctx.abort()
		return nil, errors.New("the call ends with a question to its caller; it runs again with the answer")
	}
	res, err := h.Elicit(hctx, r)
	if err != nil {
		return nil, err
	}
	return &sdk.ElicitResult{Action: res.Action, Content: res.Content}, nil
}

func (s *server) sample(ctx context.Context, req *sdk.CreateMessageRequest) (*sdk.CreateMessageResult, error) {
	ctx = s.named(ctx, req.Params.Meta)                                                   // related.go
	s.noteUnnamed(ctx)                                                                    // turns.go
	ctx, unplaced := s.attribute(ctx, func(h tool.Hooks) bool { return h.Sample != nil }) // turns.go
	ctx, h, release, ok := s.claimant(ctx, func(h tool.Hooks) bool { return h.Sample != nil })
	defer release()
	if !ok && unplaced != nil {
		return nil, unplaced
	}
	if !ok {
		return nil, errors.New("lathe cannot sample: the caller offers no model")
	}
	r, err := mcpconv.Sampling(req.Params)
	if err != nil {
		return nil, err
	}
	res, err := h.Sample(ctx, r)
	if err != nil {
		return nil, err
	}
	return mcpconv.SDKSamplingResult(res), nil
}

// tail keeps the last lines a server wrote to stderr, for error messages,
// and passes everything on to w if it is set.
type tail struct {
	w   io.Writer
	mu  sync.Mutex
	buf []byte
}

const tailBytes = 2048

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > tailBytes {
		t.buf = append(t.buf[:0], t.buf[len(t.buf)-tailBytes:]...)
	}
	t.mu.Unlock()
	if t.w != nil {
		t.w.Write(p)
	}
	return len(p), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return strings.TrimSpace(string(t.buf))
}
