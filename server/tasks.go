package server

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/lathe-tools/lathe/internal/mcpconv"
	"github.com/lathe-tools/lathe/tool"
)

// MCP tasks (protocol 2025-11-25): a client that adds "task" to a tools/call
// gets a task handle at once, and fetches the call's result later, from the
// same session or a later one. The SDK models none of it, so the server
// builds it on the SDK's extension points: the task methods are custom
// methods, and a receiving middleware answers a task-augmented tools/call
// itself, running the call in the background through the same handler (and
// so the engine's pipeline: policy, approvals, limits, audit) as any call.
//
// Who may touch a task: the task ID is 128 random bits, a capability no
// client can guess; it is bound, besides, to the principal that made it —
// the authenticated user, when an authentication layer in front of
// [Server.Handler] names one (the SDK's auth.RequireBearerToken with a
// verifier that sets TokenInfo.UserID), and otherwise nobody in particular.
// tasks/get, tasks/result and tasks/cancel need both the ID and the same
// principal; a task of another principal is answered exactly as one that
// does not exist. tasks/list shows an authenticated user all of the user's
// tasks, and an unauthenticated session only the tasks it holds: those it
// made, and those whose IDs it presented (so a client that reconnects and
// presents its IDs sees them listed again). A task outlives the session
// that made it, not the server, and not its TTL.

// TaskOptions bound what the server keeps for tasks. The zero value is
// ready to use.
type TaskOptions struct {
	// DefaultTTL is how long a task is kept from its creation when the
	// client asks for no TTL; an hour when zero. MaxTTL caps what a client
	// may ask for; a day when zero. A task still running when its TTL ends
	// is cancelled, and the task is forgotten.
	DefaultTTL, MaxTTL time.Duration
	// MaxPerClient caps the tasks one principal (or, unauthenticated, one
	// session) holds at once, finished ones included until they expire;
	// 32 when zero. MaxTasks caps the tasks of all clients; 256 when zero.
	MaxPerClient, MaxTasks int
	// Promote is how long a call of a client of the tasks extension of
	// MCP 2026-07-28 runs before it becomes a task: one that ends sooner
	// is answered with its result, as a plain call, and one that asks its
	// client something sooner becomes a task at once. A second when zero;
	// negative, every such call becomes a task at once.
	Promote time.Duration
	// MaxResultBytes caps one task's result as JSON, 4 MiB when zero;
	// MaxStoredBytes caps all results kept, 64 MiB when zero. A result over
	// either is replaced by an error result that says so.
	MaxResultBytes, MaxStoredBytes int
}

func (o TaskOptions) withDefaults() TaskOptions {
	o.DefaultTTL = cmp.Or(o.DefaultTTL, time.Hour)
	o.MaxTTL = cmp.Or(o.MaxTTL, 24*time.Hour)
	o.DefaultTTL = min(o.DefaultTTL, o.MaxTTL)
	o.MaxPerClient = cmp.Or(o.MaxPerClient, 32)
	o.MaxTasks = cmp.Or(o.MaxTasks, 256)
	o.Promote = cmp.Or(o.Promote, time.Second)
	o.MaxResultBytes = cmp.Or(o.MaxResultBytes, 4<<20)
	o.MaxStoredBytes = cmp.Or(o.MaxStoredBytes, 64<<20)
	return o
}

// The task methods of MCP 2025-11-25.
const (
	methodTasksGet    = "tasks/get"
	methodTasksResult = "tasks/result"
	methodTasksCancel = "tasks/cancel"
	methodTasksList   = "tasks/list"
)

// pollInterval is the polling interval the server suggests, in milliseconds.
const pollInterval = 1000

type taskIDParams struct {
	sdk.ParamsBase
	TaskID string `json:"taskId"`
}

type listTasksParams struct {
	sdk.ParamsBase
	Cursor string `json:"cursor,omitempty"`
}

type taskResult struct {
	sdk.ResultBase
	mcpconv.Task
}

type createTaskResult struct {
	sdk.ResultBase
	Task mcpconv.Task `json:"task"`
}

type listTasksResult struct {
	sdk.ResultBase
	Tasks []mcpconv.Task `json:"tasks"`
}

// rawResult is a result the server has already encoded: the SDK's result
// of initialize or tools/list with the fields of tasks its types lack.
type rawResult struct {
	sdk.ResultBase
	raw json.RawMessage
}

func (r *rawResult) MarshalJSON() ([]byte, error) { return r.raw, nil }

// task is one task-augmented call.
type task struct {
	id        string
	principal string // the authenticated user, or "" for none
	owner     string // whose count of tasks it is in: the principal, or the session that made it
	holders   map[string]bool
	created   time.Time
	ttl       time.Duration
	cancel    context.CancelFunc
	timer     *time.Timer
	done      chan struct{} // closed when the call has ended and result is set

	// asked is closed at the task's first question (see startTask2026).
	asked chan struct{}
	// handed is set once the client of MCP 2026-07-28 was given the task's
	// handle: its call is a task from then on (tasknotes.go).
	handed atomic.Bool

	// Guarded by taskStore.mu.
	status, message string
	updated         time.Time
	result          *sdk.CallToolResult
	callErr         string // set when the call failed with an error, not a result
	bytes           int
	open            []*question         // questions put to the client, not yet answered (taskinput.go)
	keys            int                 // the questions asked so far, which name the next one
	routes          map[*route]struct{} // sessions the task's questions are sent to (taskinput.go)

	// What the call reported, and how much of it each session was sent
	// (tasknotes.go).
	notes     []taskNote
	noteSeq   int
	noteBytes int
	seen      map[*sdk.ServerSession]int
}

func (t *task) wire() mcpconv.Task {
	ttl := t.ttl.Milliseconds()
	return mcpconv.Task{TaskID: t.id, Status: t.status, StatusMessage: t.message,
		CreatedAt: t.created.UTC().Format(time.RFC3339Nano), LastUpdatedAt: t.updated.UTC().Format(time.RFC3339Nano),
		TTL: &ttl, PollInterval: pollInterval}
}

// taskStore keeps the tasks of one server, in memory.
type taskStore struct {
	opts TaskOptions
	wg   sync.WaitGroup

	mu       sync.Mutex
	tasks    map[string]*task
	perOwner map[string]int
	stored   int
	closed   bool

	// changed, if set, is told of every change of a task's status, outside
	// the lock (tasknotify.go).
	changed func(*task)
}

// notify tells ts.changed that t's status changed. ts.mu must not be held.
func (ts *taskStore) notify(t *task) {
	if ts.changed != nil {
		ts.changed(t)
	}
}

func newTaskStore(opts TaskOptions) *taskStore {
	return &taskStore{opts: opts.withDefaults(), tasks: map[string]*task{}, perOwner: map[string]int{}}
}

// errUnknownTask answers a task ID that is not the caller's, whether it
// names another principal's task, an expired one, or none at all: the
// answer must not tell them apart.
var errUnknownTask = &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "unknown task"}

// ttl reads the task metadata a client sent ({"ttl": milliseconds}).
func (ts *taskStore) ttl(spec any) (time.Duration, error) {
	m, ok := spec.(map[string]any)
	if !ok {
		return 0, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams,
			Message: fmt.Sprintf("/params/task: want an object such as {\"ttl\": 60000}, got %T", spec)}
	}
	v, ok := m["ttl"]
	if !ok || v == nil {
		return ts.opts.DefaultTTL, nil
	}
	ms, ok := v.(float64)
	if !ok || ms <= 0 || ms != float64(int64(ms)) {
		return 0, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams,
			Message: fmt.Sprintf("/params/task/ttl: want a positive whole number of milliseconds, got %v", v)}
	}
	return min(time.Duration(ms)*time.Millisecond, ts.opts.MaxTTL), nil
}

// add makes a task for principal, made by session sid.
func (ts *taskStore) add(principal, sid string, ttl time.Duration, cancel context.CancelFunc) (*task, error) {
	var b [16]byte
	rand.Read(b[:])
	now := time.Now()
	t := &task{id: base64.RawURLEncoding.EncodeToString(b[:]), principal: principal, owner: principal,
		holders: map[string]bool{sid: true}, created: now, updated: now, ttl: ttl, cancel: cancel,
		done: make(chan struct{}), asked: make(chan struct{}), status: mcpconv.TaskWorking,
		routes: map[*route]struct{}{}}
	if principal == "" {
		t.owner = "session " + sid
	}
	ts.mu.Lock()
	defer ts.mu.Unlock()
	switch {
	case ts.closed:
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "the server is closing"}
	case ts.perOwner[t.owner] >= ts.opts.MaxPerClient:
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf(
			"too many tasks: a client holds at most %d; fetch or cancel some, or wait for them to expire",
			ts.opts.MaxPerClient)}
	case len(ts.tasks) >= ts.opts.MaxTasks:
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf(
			"too many tasks: the server holds at most %d", ts.opts.MaxTasks)}
	}
	ts.tasks[t.id] = t
	ts.perOwner[t.owner]++
	t.timer = time.AfterFunc(ttl, func() { ts.expire(t) })
	return t, nil
}

// expire forgets t at the end of its TTL, cancelling its call if it still
// runs.
func (ts *taskStore) expire(t *task) {
	ts.mu.Lock()
	if ts.tasks[t.id] == t {
		ts.forgetLocked(t)
	}
	ended := !mcpconv.Terminal(t.status)
	if ended {
		t.status, t.message, t.updated = mcpconv.TaskCancelled, "the task's TTL ended before its call did", time.Now()
	}
	ts.mu.Unlock()
	t.cancel()
	if ended {
		ts.notify(t)
	}
}

// discard forgets t without a trace: a call of a client of MCP 2026-07-28
// that ended before it became a task (see startTask2026).
func (ts *taskStore) discard(t *task) {
	t.timer.Stop()
	ts.mu.Lock()
	if ts.tasks[t.id] == t {
		ts.forgetLocked(t)
	}
	ts.mu.Unlock()
}

func (ts *taskStore) forgetLocked(t *task) {
	delete(ts.tasks, t.id)
	if ts.perOwner[t.owner]--; ts.perOwner[t.owner] <= 0 {
		delete(ts.perOwner, t.owner)
	}
	ts.stored -= t.bytes
	t.bytes = 0
}

// finish records the result of t's call; callErr is the error the call
// failed with, if it gave no result.
func (ts *taskStore) finish(t *task, res *sdk.CallToolResult, callErr string) {
	defer ts.notify(t)
	b, err := json.Marshal(res)
	ts.mu.Lock()
	defer ts.mu.Unlock()
	t.callErr = callErr
	live := ts.tasks[t.id] == t
	switch {
	case err != nil:
		res = taskError(fmt.Sprintf("the result cannot be encoded: %v", err))
	case len(b) > ts.opts.MaxResultBytes:
		res = taskError(fmt.Sprintf("the result is %d bytes as JSON, more than the %d a task keeps; "+
			"call the tool without a task to get it whole", len(b), ts.opts.MaxResultBytes))
	case live && ts.stored+len(b) > ts.opts.MaxStoredBytes:
		res = taskError(fmt.Sprintf("the server keeps at most %d bytes of task results, and holds too many "+
			"now; fetch the results of finished tasks or call without a task", ts.opts.MaxStoredBytes))
	default:
		if live {
			t.bytes = len(b)
			ts.stored += t.bytes
		}
	}
	t.result = res
	if !mcpconv.Terminal(t.status) {
		t.status = mcpconv.TaskCompleted
		if res.IsError {
			t.status, t.message = mcpconv.TaskFailed, firstText(res)
		}
	}
	t.updated = time.Now()
	close(t.done)
}

func taskError(msg string) *sdk.CallToolResult {
	return mcpconv.SDKResult(tool.ErrorResult(&tool.Error{Kind: tool.KindRuntimeFailure, Stage: "task", Message: msg}))
}

func firstText(r *sdk.CallToolResult) string {
	for _, c := range r.Content {
		if tc, ok := c.(*sdk.TextContent); ok {
			return tc.Text
		}
	}
	return ""
}

// get returns the task id if principal may see it, and notes that the
// session sid holds it.
func (ts *taskStore) get(principal, sid, id string) (*task, error) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	t := ts.tasks[id]
	if t == nil || t.principal != principal {
		return nil, errUnknownTask
	}
	t.holders[sid] = true
	return t, nil
}

// find returns the task id if principal may see it, as get does, without
// binding a session to it: a request of MCP 2026-07-28 over streamable
// HTTP is a session of its own, which ends with it, and one bound at each
// poll would grow the task's sessions at each (tasknotes.go).
func (ts *taskStore) find(principal, id string) (*task, error) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	t := ts.tasks[id]
	if t == nil || t.principal != principal {
		return nil, errUnknownTask
	}
	return t, nil
}

// hold binds the session sid to t until unhold, and reports whether it
// was not bound before.
func (ts *taskStore) hold(t *task, sid string) bool {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if t.holders[sid] {
		return false
	}
	t.holders[sid] = true
	return true
}

func (ts *taskStore) unhold(t *task, sid string) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	delete(t.holders, sid)
}

func (ts *taskStore) wire(t *task) mcpconv.Task {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	return t.wire()
}

func (ts *taskStore) cancel(t *task) (mcpconv.Task, error) {
	ts.mu.Lock()
	if mcpconv.Terminal(t.status) {
		ts.mu.Unlock()
		return mcpconv.Task{}, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams,
			Message: "the task is " + t.status + " already; only a task that has not ended can be cancelled"}
	}
	t.status, t.message, t.updated = mcpconv.TaskCancelled, "cancelled by the client", time.Now()
	w := t.wire()
	ts.mu.Unlock()
	t.cancel()
	ts.notify(t)
	return w, nil
}

func (ts *taskStore) list(principal, sid string) []mcpconv.Task {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	var mine []*task
	for _, t := range ts.tasks {
		if t.principal == principal && (principal != "" || t.holders[sid]) {
			mine = append(mine, t)
		}
	}
	slices.SortFunc(mine, func(a, b *task) int { return a.created.Compare(b.created) })
	out := make([]mcpconv.Task, 0, len(mine))
	for _, t := range mine {
		out = append(out, t.wire())
	}
	return out
}

// close cancels every task and waits for their calls to end, so that each
// call's record is complete.
func (ts *taskStore) close() {
	ts.mu.Lock()
	ts.closed = true
	all := slices.Collect(maps.Values(ts.tasks))
	ts.mu.Unlock()
	for _, t := range all {
		t.timer.Stop()
		ts.expire(t)
	}
	ts.wg.Wait()
}

// principalKey carries the principal of a task method's request to its
// handler, which the SDK hands only the session and the params.
type principalKey struct{}

// principalOf is the authenticated user a request comes from, or "".
func principalOf(req sdk.Request) string {
	if ex := req.GetExtra(); ex != nil && ex.TokenInfo != nil && ex.TokenInfo.UserID != "" {
		return "user " + ex.TokenInfo.UserID
	}
	return ""
}

func principalFrom(ctx context.Context) string {
	p, _ := ctx.Value(principalKey{}).(string)
	return p
}

// serveTasks registers the task methods and the middleware that answers
// task-augmented calls and advertises tasks. Each method answers in the
// shape of the version its session speaks: MCP 2025-11-25 (tasks.go) or
// the tasks extension of 2026-07-28 (tasks26.go).
func (s *Server) serveTasks() {
	s.tasks = newTaskStore(s.opts.Tasks)
	s.tasks.changed = s.taskChanged
	must(sdk.AddReceivingCustomMethod(s.mcp, methodTasksGet,
		func(ctx context.Context, ss *sdk.ServerSession, p *taskIDParams) (*rawResult, error) {
			t, err := s.presented(ctx, ss, p.Meta, p.TaskID)
			if err != nil {
				return nil, err
			}
			if multiRound(ss) {
				d := s.tasks.detailed(t, "complete")
				level, after := notesWanted(p.Meta)
				s.tasks.withNotes(d, t, level, after)
				return encode(d)
			}
			return encode(&taskResult{Task: s.tasks.wire(t)})
		}))
	must(sdk.AddReceivingCustomMethod(s.mcp, methodTasksCancel,
		func(ctx context.Context, ss *sdk.ServerSession, p *taskIDParams) (*rawResult, error) {
			t, err := s.presented(ctx, ss, p.Meta, p.TaskID)
			if err != nil {
				return nil, err
			}
			w, err := s.tasks.cancel(t)
			if multiRound(ss) {
				// Cancelling is cooperative in the extension: a task that
				// has ended already is acknowledged all the same.
				return encode(complete{ResultType: "complete"})
			}
			if err != nil {
				return nil, err
			}
			return encode(&taskResult{Task: w})
		}))
	must(sdk.AddReceivingCustomMethod(s.mcp, methodTasksUpdate,
		func(ctx context.Context, ss *sdk.ServerSession, p *updateTaskParams) (*rawResult, error) {
			if !multiRound(ss) {
				return nil, errNot2025(methodTasksUpdate)
			}
			t, err := s.presented(ctx, ss, p.Meta, p.TaskID)
			if err != nil {
				return nil, err
			}
			for key, a := range p.InputResponses {
				s.tasks.answer(t, key, a)
			}
			return encode(complete{ResultType: "complete"})
		}))
	must(sdk.AddReceivingCustomMethod(s.mcp, methodTasksResult,
		func(ctx context.Context, ss *sdk.ServerSession, p *taskIDParams) (*rawResult, error) {
			// Not part of the extension of 2026-07-28, where tasks/get
			// carries the result; lathe answers it in every version,
			// without the extension's declaration, for a client that made
			// its task with _meta["lathe/task"].
			t, err := s.tasks.get(principalFrom(ctx), s.sessionID(ss), p.TaskID)
			if err != nil {
				return nil, err
			}
			// While the client waits here, the task's questions come to
			// it on this request's stream (taskinput.go); a client of
			// 2026-07-28 cannot be sent a request while its own one is
			// served, and answers them with tasks/update.
			if !multiRound(ss) {
				detach := s.tasks.attach(t, ss, ctx, true)
				defer detach()
				// So do its progress and log messages (tasknotes.go).
				s.tasks.catchUp(t, ss, ctx)
			}
			// The result is waited for as long as the client waits, and
			// no longer than the task lives.
			select {
			case <-t.done:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			s.tasks.mu.Lock()
			r := *t.result
			s.tasks.mu.Unlock()
			r.Meta = maps.Clone(r.Meta)
			if r.Meta == nil {
				r.Meta = sdk.Meta{}
			}
			r.Meta[mcpconv.RelatedTaskKey] = map[string]any{"taskId": t.id}
			return encode(&r)
		}))
	must(sdk.AddReceivingCustomMethod(s.mcp, methodTasksList,
		func(ctx context.Context, ss *sdk.ServerSession, _ *listTasksParams) (*rawResult, error) {
			return encode(&listTasksResult{Tasks: s.tasks.list(principalFrom(ctx), s.sessionID(ss))})
		}))
	s.mcp.AddReceivingMiddleware(s.taskMiddleware)
	s.mcp.AddSendingMiddleware(s.taskSending)
}

// presented returns the task id that the session ss presents, if its
// principal may see it, and notes that ss holds it. A session of MCP
// 2026-07-28 must declare the tasks extension on the request (meta).
func (s *Server) presented(ctx context.Context, ss *sdk.ServerSession, meta sdk.Meta, id string) (*task, error) {
	if multiRound(ss) {
		if !declaresTasks(meta) {
			return nil, errMissingTasks
		}
		// A session of 2026-07-28 is bound to a task by a listen alone
		// (tasknotify.go), the one thing it is bound for.
		return s.tasks.find(principalFrom(ctx), id)
	}
	t, err := s.tasks.get(principalFrom(ctx), s.sessionID(ss), id)
	if err == nil {
		// What the task reported that this session was not sent comes on
		// this request's stream (tasknotes.go).
		s.tasks.catchUp(t, ss, ctx)
	}
	return t, err
}

// encode makes v a result the task methods return as it is.
func encode(v any) (*rawResult, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "encoding the answer: " + err.Error()}
	}
	return &rawResult{raw: b}, nil
}

// taskKey carries the task of a call in the call's context.
type taskKey struct{}

// taskSending marks what a task's call sends the client — questions,
// sampling, progress, log messages — as related to the task.
func (s *Server) taskSending(next sdk.MethodHandler) sdk.MethodHandler {
	return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
		if method == "notifications/subscriptions/acknowledged" {
			req = withTaskIDs(ctx, req)
		}
		t, _ := ctx.Value(taskKey{}).(*task)
		if t == nil {
			return next(ctx, method, req)
		}
		if ss, ok := req.GetSession().(*sdk.ServerSession); ok && multiRound(ss) {
			// A call of 2026-07-28 sends its session something only
			// while it is a plain call (tasknotes.go), not yet a task.
			return next(ctx, method, req)
		}
		// A progress or log message is kept with the task, for a session
		// of its client that comes later (tasknotes.go).
		s.keepNote(ctx, t, method, req)
		if p := req.GetParams(); p != nil {
			meta := maps.Clone(p.GetMeta())
			if meta == nil {
				meta = map[string]any{}
			}
			meta[mcpconv.RelatedTaskKey] = map[string]any{"taskId": t.id}
			p.SetMeta(meta)
		}
		return next(ctx, method, req)
	}
}

func must(err error) {
	if err != nil {
		panic(err)
	}
}

func (s *Server) taskMiddleware(next sdk.MethodHandler) sdk.MethodHandler {
	return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
		switch method {
		case "initialize":
			res, err := next(ctx, method, req)
			if err != nil {
				return res, err
			}
			if ir, ok := res.(*sdk.InitializeResult); ok && ir.ProtocolVersion >= "2026-07-28" {
				return withTasksExtension(res), nil
			}
			return withTaskCapability(res), nil
		case "server/discover":
			res, err := next(ctx, method, req)
			if err != nil {
				return res, err
			}
			return withTasksExtension(res), nil
		case "tools/list":
			res, err := next(ctx, method, req)
			if err != nil {
				return res, err
			}
			if ss, ok := req.GetSession().(*sdk.ServerSession); ok && multiRound(ss) {
				// The extension has no taskSupport: the server decides
				// which calls become tasks.
				return res, nil
			}
			return withTaskSupport(res), nil
		case "tools/call":
			if r, ok := req.(*sdk.CallToolRequest); ok && r.Params != nil {
				if spec, ok := r.Params.Meta[mcpconv.TaskMetaKey]; ok {
					return s.startTask(r, spec)
				}
				if multiRound(r.Session) && r.Params.RequestState == "" && declaresTasks(r.Params.Meta) {
					if res, ok, err := s.startTask2026(ctx, r); ok {
						return res, err
					}
				}
			}
		case "subscriptions/listen":
			return s.listenTasks(ctx, req, next)
		case methodTasksGet, methodTasksResult, methodTasksCancel, methodTasksList, methodTasksUpdate:
			ctx = context.WithValue(ctx, principalKey{}, principalOf(req))
		}
		return next(ctx, method, req)
	}
}

// startTask starts a task-augmented call and answers with its handle.
func (s *Server) startTask(req *sdk.CallToolRequest, spec any) (sdk.Result, error) {
	ttl, err := s.taskTool(req.Params.Name, spec)
	if err != nil {
		return nil, err
	}
	t, err := s.launch(context.Background(), req, ttl)
	if err != nil {
		return nil, err
	}
	// The session that made the task is asked its questions while it
	// lasts (taskinput.go).
	if !multiRound(req.Session) {
		s.tasks.attach(t, req.Session, s.session(req.Session).ctx, false)
	}
	return &createTaskResult{Task: s.tasks.wire(t)}, nil
}

// taskTool checks that name is a tool the server serves, and reads the
// TTL the client asked for.
func (s *Server) taskTool(name string, spec any) (time.Duration, error) {
	s.mu.Lock()
	_, served := s.served[name]
	s.mu.Unlock()
	if _, ok := s.e.Lookup(name); !ok || !served {
		return 0, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("unknown tool %q", name)}
	}
	return s.tasks.ttl(spec)
}

// launch makes a task of the call req and starts the call. Its questions
// go to no session until one is attached (taskinput.go).
//
// The call takes the values of from, not its end: a call of a client of
// MCP 2026-07-28 is a plain call until the client is given its handle, and
// what it reports until then goes on the request that made it, which the
// SDK finds in those values (tasknotes.go).
func (s *Server) launch(from context.Context, req *sdk.CallToolRequest, ttl time.Duration) (*task, error) {
	name := req.Params.Name
	def, _ := s.e.Lookup(name)
	// The call outlives its request: it ends with the task (cancelled, or
	// at its TTL) or the server, never with the session that made it.
	ctx, cancel := context.WithCancel(context.WithoutCancel(from))
	t, err := s.tasks.add(principalOf(req), s.sessionID(req.Session), ttl, cancel)
	if err != nil {
		cancel()
		return nil, err
	}
	ctx = context.WithValue(ctx, taskKey{}, t)
	p := *req.Params
	p.Meta = maps.Clone(p.Meta)
	delete(p.Meta, mcpconv.TaskMetaKey)
	call := &sdk.CallToolRequest{Session: req.Session, Params: &p, Extra: req.Extra}
	h := s.handler(name, len(def.OutputSchema) > 0)
	s.tasks.wg.Go(func() {
		defer cancel()
		res, err := h(ctx, call)
		callErr := ""
		if err != nil || res == nil {
			callErr = fmt.Sprintf("the call failed: %v", err)
			res = taskError(callErr)
		}
		s.tasks.finish(t, res, callErr)
	})
	return t, nil
}

// withTaskCapability adds tasks to the capabilities of an initialize result.
func withTaskCapability(res sdk.Result) sdk.Result {
	ir, ok := res.(*sdk.InitializeResult)
	if !ok {
		return res
	}
	b, err := json.Marshal(ir)
	if err != nil {
		return res
	}
	var m map[string]json.RawMessage
	var caps map[string]json.RawMessage
	if json.Unmarshal(b, &m) != nil || json.Unmarshal(m["capabilities"], &caps) != nil {
		return res
	}
	if caps == nil {
		caps = map[string]json.RawMessage{}
	}
	caps["tasks"] = json.RawMessage(`{"list":{},"cancel":{},"requests":{"tools":{"call":{}}}}`)
	m["capabilities"], _ = json.Marshal(caps)
	b, err = json.Marshal(m)
	if err != nil {
		return res
	}
	return &rawResult{raw: b}
}

// withTaskSupport marks every tool of a tools/list result as one that may
// run as a task: the server runs any tool as one.
func withTaskSupport(res sdk.Result) sdk.Result {
	lr, ok := res.(*sdk.ListToolsResult)
	if !ok {
		return res
	}
	b, err := json.Marshal(lr)
	if err != nil {
		return res
	}
	var m map[string]json.RawMessage
	var tools []map[string]json.RawMessage
	if json.Unmarshal(b, &m) != nil || json.Unmarshal(m["tools"], &tools) != nil {
		return res
	}
	for _, t := range tools {
		t["execution"] = json.RawMessage(`{"taskSupport":"optional"}`)
	}
	if m["tools"], err = json.Marshal(tools); err != nil {
		return res
	}
	if b, err = json.Marshal(m); err != nil {
		return res
	}
	return &rawResult{raw: b}
}

// liftTaskBody moves the "task" of each tools/call in a request body into
// its _meta, where the SDK keeps it (see [mcpconv.TaskMetaKey]). readBody
// calls it on every body it has read.
func liftTaskBody(b []byte) []byte {
	// Most bodies ask for no task, and are passed on without being parsed:
	// one scan finds both "task" and "taskIds".
	if !bytes.Contains(b, []byte(`"task`)) {
		return b
	}
	if t := bytes.TrimSpace(b); len(t) > 0 && t[0] == '[' {
		var msgs []json.RawMessage
		if json.Unmarshal(t, &msgs) != nil {
			return b
		}
		for i := range msgs {
			msgs[i] = liftTaskMessage(msgs[i])
		}
		out, err := json.Marshal(msgs)
		if err != nil {
			return b
		}
		return out
	}
	return liftTaskMessage(b)
}

func liftTaskMessage(m json.RawMessage) json.RawMessage {
	var full map[string]json.RawMessage
	if json.Unmarshal(m, &full) != nil {
		return m
	}
	var method string
	if json.Unmarshal(full["method"], &method) != nil {
		return m
	}
	switch method {
	case "tools/call":
		p, ok := mcpconv.MoveField(full["params"], "task", mcpconv.TaskMetaKey, false)
		if !ok {
			return m
		}
		full["params"] = p
	case "subscriptions/listen":
		// Its taskIds (tasknotify.go).
		if !liftListen(full) {
			return m
		}
	default:
		return m
	}
	out, err := json.Marshal(full)
	if err != nil {
		return m
	}
	return out
}

// liftLines does for the lines of standard input what readBody does for
// HTTP bodies. It works on the bytes, before the SDK's connection: wrapping
// the connection would hide the optional methods the SDK finds on it by type
// assertion. A line longer than its buffer is passed on as it is (such a call
// runs as a plain call).
type liftLines struct {
	r     *bufio.Reader
	buf   []byte // what is left to pass on of the current line
	store []byte
	err   error
}

func newLiftLines(r io.Reader) *liftLines { return &liftLines{r: bufio.NewReaderSize(r, 1<<20)} }

func (l *liftLines) Read(p []byte) (int, error) {
	for len(l.buf) == 0 {
		if l.err != nil {
			return 0, l.err
		}
		line, err := l.r.ReadSlice('\n')
		// A line passes on from the reader's buffer, which holds until the
		// next ReadSlice, after l.buf is drained; only a rewritten one is
		// copied.
		l.buf = line
		if err == nil || err == io.EOF {
			body := bytes.TrimRight(line, "\r\n")
			if out := liftTaskBody(body); len(out) != len(body) || (len(out) > 0 && &out[0] != &body[0]) {
				l.store = append(append(l.store[:0], out...), line[len(body):]...)
				l.buf = l.store
			}
		}
		if err != nil && err != bufio.ErrBufferFull {
			l.err = err
		}
	}
	n := copy(p, l.buf)
	l.buf = l.buf[n:]
	return n, nil
}
