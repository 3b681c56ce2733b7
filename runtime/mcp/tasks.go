package mcp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/lathe-tools/lathe/internal/mcpconv"
)

// Upstream tasks (MCP 2025-11-25). A tool whose server declares
// execution.taskSupport ("optional" or "required") is called as a task:
// tools/call with "task", then tasks/result, which the server answers when
// the call has ended; when lathe's call is cancelled, tasks/cancel. A server
// that requires tasks for a tool refuses a plain call of it, and one that
// offers them keeps the call going whatever becomes of one request, so lathe
// uses them whenever they are offered; the cost is one round trip more.
// The call stays one call of lathe's: the engine's pipeline (policy, limits,
// audit) runs around it as around any other, and a client of lathe that
// wants a handle to poll gets one from lathe's own server face, whatever
// the upstream offers.
//
// The SDK's client models neither the "task" field of tools/call nor a
// CreateTaskResult, so the connection rewrites both at the edge: a call
// whose _meta holds [mcpconv.TaskMetaKey] goes out with that value as its
// "task", and the CreateTaskResult that answers it comes back as a
// CallToolResult with no content whose _meta holds the task.

// Upstream tasks (MCP 2026-07-28, the io.modelcontextprotocol/tasks
// extension). lathe declares the extension in the client capabilities each
// request to a server of 2026-07-28 carries in its _meta; such a server,
// not lathe, decides which call becomes a task, and answers it with the
// task's fields flat beside "resultType": "task". lathe then polls
// tasks/get, which carries the task's status, its open questions
// (inputRequests, answered through the same hooks as any question of the
// call, and sent back with tasks/update), and at the end its result or its
// error; when lathe's call ends first, tasks/cancel. The connection turns
// the task's handle into a CallToolResult with the task in its _meta, as
// for 2025-11-25.

// extTasks names the tasks extension of MCP 2026-07-28.
const extTasks = "io.modelcontextprotocol/tasks"

// tasksFrom is the first protocol version whose tasks are the extension.
const tasksFrom = "2026-07-28"

// upstreamHTTPVersion is the MCP version lathe asks an upstream server
// over streamable HTTP for: the newest, as the SDK's own client does. The
// SDK asks first with server/discover. A server that does not know it
// refuses it, as does go-sdk's handler with sessions (it serves
// 2026-07-28 only without them), and the SDK falls back to initialize
// with 2025-11-25, where such a server sends its requests during the call.
// A server that does serve 2026-07-28 over HTTP does so without sessions
// (go-sdk's stateless handler): it has no way to send lathe a request
// during a call under any version, and asks by answering the call with
// input requests, which only 2026-07-28 lets it do. Over stdio lathe asks
// for [UpstreamProtocolVersion] instead.
const upstreamHTTPVersion = "2026-07-28"

// upstreamVersion is the version lathe asks the server of cfg for.
func upstreamVersion(cfg Config) string {
	if len(cfg.Command) == 0 {
		return upstreamHTTPVersion
	}
	return UpstreamProtocolVersion
}

// tasks26 reports whether cs speaks a version whose tasks are the
// extension's.
func tasks26(cs *sdk.ClientSession) bool {
	ir := cs.InitializeResult()
	return ir != nil && ir.ProtocolVersion >= tasksFrom
}

// declareTasks is a sending middleware of the server's client: on a
// session of 2026-07-28 or later, it declares the tasks extension in the
// client capabilities of each tools/call and task method, which the SDK
// has put into the request's _meta without it.
func declareTasks(next sdk.MethodHandler) sdk.MethodHandler {
	return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
		cs, ok := req.GetSession().(*sdk.ClientSession)
		params := req.GetParams()
		if !ok || params == nil || method != "tools/call" && !strings.HasPrefix(method, "tasks/") || !tasks26(cs) {
			return next(ctx, method, req)
		}
		meta := maps.Clone(params.GetMeta())
		if meta == nil {
			meta = map[string]any{}
		}
		caps := map[string]any{}
		if v, ok := meta[sdk.MetaKeyClientCapabilities]; ok {
			if b, err := json.Marshal(v); err == nil {
				json.Unmarshal(b, &caps)
			}
		}
		ext, _ := caps["extensions"].(map[string]any)
		ext = maps.Clone(ext)
		if ext == nil {
			ext = map[string]any{}
		}
		ext[extTasks] = map[string]any{}
		caps["extensions"] = ext
		meta[sdk.MetaKeyClientCapabilities] = caps
		params.SetMeta(meta)
		return next(ctx, method, req)
	}
}

type taskIDParams struct {
	sdk.ParamsBase
	TaskID string `json:"taskId"`
}

type taskState struct {
	sdk.ResultBase
	mcpconv.Task
}

// polledTask is a task as tasks/get of the extension returns it.
type polledTask struct {
	sdk.ResultBase
	TaskID         string              `json:"taskId"`
	Status         string              `json:"status"`
	StatusMessage  string              `json:"statusMessage,omitempty"`
	PollIntervalMs int64               `json:"pollIntervalMs,omitempty"`
	InputRequests  json.RawMessage     `json:"inputRequests,omitempty"`
	Result         *sdk.CallToolResult `json:"result,omitempty"`
	Error          *jsonrpc.Error      `json:"error,omitempty"`
}

type updateTaskParams struct {
	sdk.ParamsBase
	TaskID         string         `json:"taskId"`
	InputResponses map[string]any `json:"inputResponses"`
}

// The task methods lathe sends.
const (
	methodTasksResult = "tasks/result"
	methodTasksCancel = "tasks/cancel"
	methodTasksGet    = "tasks/get"
	methodTasksUpdate = "tasks/update"
)

// addTaskMethods lets c send the task methods.
func addTaskMethods(c *sdk.Client) {
	for _, err := range []error{
		sdk.AddSendingCustomMethod[*taskIDParams, *sdk.CallToolResult](c, methodTasksResult),
		sdk.AddSendingCustomMethod[*taskIDParams, *taskState](c, methodTasksCancel),
		sdk.AddSendingCustomMethod[*taskIDParams, *polledTask](c, methodTasksGet),
		sdk.AddSendingCustomMethod[*updateTaskParams, *taskState](c, methodTasksUpdate),
	} {
		if err != nil {
			// Only a standard method's name can be refused.
			panic(err)
		}
	}
}

// offersTasks reports whether the server of raw lets it run as a task.
func offersTasks(raw *rawTool) bool {
	if raw == nil || len(raw.Execution) == 0 {
		return false
	}
	var ex struct {
		TaskSupport string `json:"taskSupport"`
	}
	if json.Unmarshal(raw.Execution, &ex) != nil {
		return false
	}
	return ex.TaskSupport == "optional" || ex.TaskSupport == "required"
}

// createGrace is how long a task-augmented call waits for its task's handle
// after the caller has given up: cancelling the request that creates a task
// would lose the handle, and with it the way to cancel the task.
const createGrace = 5 * time.Second

// callTask makes a call that may be answered with a task, and returns its
// result, that of the task if it became one. When ctx ends before the
// answer, callTask returns at once, and the answer is waited for in the
// background, up to createGrace, so that a task it announces is cancelled
// rather than left running.
func (s *server) callTask(ctx context.Context, sess *session, params *sdk.CallToolParams) (*sdk.CallToolResult, error) {
	type answer struct {
		res *sdk.CallToolResult
		err error
	}
	s.noteTask(ctx, "", true)
	sendCtx, done := createContext(ctx)
	if !mayBecomeTask(sess.cs, params) {
		// No handle can be lost: the call ends with the caller's, and a
		// server of 2026-07-28 over HTTP learns of it at once, as its
		// request closes.
		sendCtx, done = context.WithCancel(ctx)
	}
	ch := make(chan answer, 1)
	go func() {
		r, err := sess.cs.CallTool(sendCtx, params)
		ch <- answer{r, err}
	}()
	select {
	case a := <-ch:
		done()
		if a.err != nil {
			return nil, a.err
		}
		return s.awaitTask(ctx, sess, a.res)
	case <-ctx.Done():
		s.wg.Go(func() {
			defer done()
			a := <-ch
			if a.err != nil || a.res == nil {
				return
			}
			var tk mcpconv.Task
			if b, err := json.Marshal(a.res.Meta[mcpconv.TaskMetaKey]); err == nil && json.Unmarshal(b, &tk) == nil && tk.TaskID != "" {
				s.cancelTask(sess, tk.TaskID)
			}
		})
		return nil, ctx.Err()
	}
}

// mayBecomeTask reports whether the server of cs may answer the call of
// params with a task: lathe asked for one (MCP 2025-11-25), or the server
// declared the tasks extension (2026-07-28); a server that did not, did
// not agree to make tasks.
func mayBecomeTask(cs *sdk.ClientSession, params *sdk.CallToolParams) bool {
	if _, asked := params.Meta[mcpconv.TaskMetaKey]; asked {
		return true
	}
	ir := cs.InitializeResult()
	if ir == nil || ir.Capabilities == nil {
		return false
	}
	_, ok := ir.Capabilities.Extensions[extTasks]
	return ok
}

// createContext is the context of a task-augmented tools/call: it ends
// createGrace after ctx does, so that the task's handle, which is the only
// way to cancel the task, is not lost with the request.
func createContext(ctx context.Context) (context.Context, context.CancelFunc) {
	cctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	stop := context.AfterFunc(ctx, func() {
		t := time.AfterFunc(createGrace, cancel)
		context.AfterFunc(cctx, func() { t.Stop() })
	})
	return cctx, func() {
		stop()
		cancel()
	}
}

// askTask makes params a task-augmented call. The task is kept a minute
// past the call's deadline, so that its result outlives the wait for it.
func askTask(ctx context.Context, params *sdk.CallToolParams) {
	spec := map[string]any{}
	if d, ok := ctx.Deadline(); ok {
		spec["ttl"] = (time.Until(d) + time.Minute).Milliseconds()
	}
	if params.Meta == nil {
		params.Meta = sdk.Meta{}
	}
	params.Meta[mcpconv.TaskMetaKey] = spec
}

// awaitTask waits for the result of the task res announces, if it
// announces one (a server may answer a task-augmented call at once). When
// ctx ends first, the task is cancelled upstream.
func (s *server) awaitTask(ctx context.Context, sess *session, res *sdk.CallToolResult) (*sdk.CallToolResult, error) {
	raw, ok := res.Meta[mcpconv.TaskMetaKey]
	if !ok {
		s.noteTask(ctx, "", false)
		return res, nil
	}
	var tk mcpconv.Task
	if b, err := json.Marshal(raw); err != nil || json.Unmarshal(b, &tk) != nil || tk.TaskID == "" {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError,
			Message: fmt.Sprintf("the server answered with a task lathe cannot read: %v", raw)}
	}
	s.noteTask(ctx, tk.TaskID, false)
	if tasks26(sess.cs) {
		r, err := s.pollTask(ctx, sess, tk.TaskID)
		if err != nil && ctx.Err() != nil {
			s.cancelTask(sess, tk.TaskID)
		}
		return r, err
	}
	r, err := sdk.CallCustomMethod[*taskIDParams, *sdk.CallToolResult](ctx, sess.cs, methodTasksResult,
		&taskIDParams{TaskID: tk.TaskID})
	if err != nil && ctx.Err() != nil {
		// The caller is gone; the task would run on upstream until its TTL.
		s.cancelTask(sess, tk.TaskID)
	}
	return r, err
}

// noteTask notes that the call of ctx became the upstream task id (none
// when id is empty), which the server's requests for the call then name
// (related.go), or, pending, that it may become one; and wakes the
// requests that named a task before lathe knew whose it was.
func (s *server) noteTask(ctx context.Context, id string, pending bool) {
	cid, ok := ctx.Value(inflightKey{}).(uint64)
	if !ok {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if f := s.inflight[cid]; f != nil {
		f.task, f.taskPending = id, pending
		s.nextTurnLocked()
	}
}

// Bounds of the polling of an upstream task (MCP 2026-07-28): the server's
// pollIntervalMs, within these.
const (
	minPoll     = 20 * time.Millisecond
	maxPoll     = 2 * time.Second
	defaultPoll = 200 * time.Millisecond
)

// pollTask follows the upstream task id of the extension until it ends,
// answering its questions on the way, and returns its result. A question
// lathe cannot have answered (no one to ask) ends the poll with that
// error, and the caller cancels the task.
func (s *server) pollTask(ctx context.Context, sess *session, id string) (*sdk.CallToolResult, error) {
	answered := map[string]bool{}
	for {
		t, err := sdk.CallCustomMethod[*taskIDParams, *polledTask](ctx, sess.cs, methodTasksGet, &taskIDParams{TaskID: id})
		if err != nil {
			return nil, err
		}
		switch t.Status {
		case mcpconv.TaskCompleted:
			if t.Result == nil {
				return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "the server's task completed without a result"}
			}
			return t.Result, nil
		case mcpconv.TaskFailed:
			if t.Error != nil {
				return nil, t.Error
			}
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "the server's task failed: " + t.StatusMessage}
		case mcpconv.TaskCancelled:
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "the server cancelled its task: " + t.StatusMessage}
		case mcpconv.TaskInputRequired:
			responses, err := s.answerInputs(ctx, t.InputRequests, answered)
			if err != nil {
				return nil, err
			}
			if len(responses) > 0 {
				if _, err := sdk.CallCustomMethod[*updateTaskParams, *taskState](ctx, sess.cs, methodTasksUpdate,
					&updateTaskParams{TaskID: id, InputResponses: responses}); err != nil {
					return nil, err
				}
				continue
			}
		}
		wait := defaultPoll
		if t.PollIntervalMs > 0 {
			wait = min(max(time.Duration(t.PollIntervalMs)*time.Millisecond, minPoll), maxPoll)
		}
		timer := time.NewTimer(wait)
		select {
		case <-timer.C:
		case <-ctx.Done():
			timer.Stop()
			return nil, ctx.Err()
		}
	}
}

// answerInputs answers the input requests of a task that lathe has not
// answered yet (a key is answered once: the server forgets it with the
// answer), through the call's hooks as a request of the server during the
// call would be (ctx is the call's).
func (s *server) answerInputs(ctx context.Context, raw json.RawMessage, answered map[string]bool) (map[string]any, error) {
	var reqs map[string]struct {
		Method string          `json:"method"`
		Params json.RawMessage `json:"params"`
	}
	if err := json.Unmarshal(raw, &reqs); err != nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "the server's task asks what lathe cannot read: " + err.Error()}
	}
	out := map[string]any{}
	for _, key := range slices.Sorted(maps.Keys(reqs)) {
		if answered[key] {
			continue
		}
		r := reqs[key]
		var (
			res any
			err error
		)
		switch r.Method {
		case "elicitation/create":
			var p sdk.ElicitParams
			if err = json.Unmarshal(r.Params, &p); err == nil {
				res, err = s.elicit(ctx, &sdk.ElicitRequest{Params: &p})
			}
		case "sampling/createMessage":
			var p sdk.CreateMessageParams
			if err = json.Unmarshal(r.Params, &p); err == nil {
				res, err = s.sample(ctx, &sdk.CreateMessageRequest{Params: &p})
			}
		default:
			// roots/list among them: lathe offers no roots (see refuseRoots).
			err = fmt.Errorf("lathe does not answer %q", r.Method)
		}
		if err != nil {
			return nil, fmt.Errorf("the server's task asked %s: %w", key, err)
		}
		answered[key] = true
		out[key] = res
	}
	return out, nil
}

// cancelTask cancels a task upstream, in the background: the call it
// belonged to is over, so the cancel has a deadline of its own.
func (s *server) cancelTask(sess *session, id string) {
	s.mu.Lock()
	cs := sess.cs
	s.mu.Unlock()
	if cs == nil {
		return
	}
	s.wg.Go(func() {
		ctx, cancel := context.WithTimeout(s.ctx, 5*time.Second)
		defer cancel()
		_, _ = sdk.CallCustomMethod[*taskIDParams, *taskState](ctx, cs, methodTasksCancel, &taskIDParams{TaskID: id})
	})
}

// taskTransport rewrites task-augmented calls and their answers (see
// above).
type taskTransport struct{ inner sdk.Transport }

func (t *taskTransport) Connect(ctx context.Context) (sdk.Connection, error) {
	c, err := t.inner.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &taskConn{Connection: c, pending: map[any]bool{}}, nil
}

// taskMetaKey is where lathe asks for a task in a call's _meta (askTask).
var taskMetaKey = []byte(mcpconv.TaskMetaKey)

type taskConn struct {
	sdk.Connection
	mu      sync.Mutex
	pending map[any]bool // ids of task-augmented calls awaiting their answer
}

func (c *taskConn) Write(ctx context.Context, m jsonrpc.Message) error {
	// Only lathe writes the params' top level, and it writes the key as it
	// is: params without it hold nothing to move, and are not decoded.
	if r, ok := m.(*jsonrpc.Request); ok && r.Method == "tools/call" && r.ID.IsValid() &&
		bytes.Contains(r.Params, taskMetaKey) {
		if p, ok := mcpconv.MoveField(r.Params, "task", mcpconv.TaskMetaKey, true); ok {
			cp := *r
			cp.Params = p
			m = &cp
			c.mu.Lock()
			c.pending[idKey(r.ID)] = true
			c.mu.Unlock()
		}
	}
	return c.Connection.Write(ctx, m)
}

func (c *taskConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	m, err := c.Connection.Read(ctx)
	if r, ok := m.(*jsonrpc.Response); ok && r.ID.IsValid() {
		asked := false
		c.mu.Lock()
		if len(c.pending) > 0 {
			// Only then is there an id to look for: the common answer
			// of a call costs no encoding of its id.
			k := idKey(r.ID)
			asked = c.pending[k]
			delete(c.pending, k)
		}
		c.mu.Unlock()
		if r.Error == nil && (asked || mayBeTask26(r.Result)) {
			r.Result = taskAsResult(r.Result)
		}
	}
	return m, err
}

// resultTypeKey marks a result of MCP 2026-07-28, which may be a task's
// handle: only such a result that also holds the string "task" is decoded
// to find out.
var resultTypeKey = []byte(`"resultType"`)

func mayBeTask26(res []byte) bool {
	return bytes.Contains(res, resultTypeKey) && bytes.Contains(res, []byte(`"task"`))
}

// taskAsResult turns a CreateTaskResult into a CallToolResult that carries
// the task in its _meta; any other result is left as it is. The handle of
// 2025-11-25 holds the task under "task"; that of the extension of
// 2026-07-28 is the task itself, with "resultType": "task".
func taskAsResult(res json.RawMessage) json.RawMessage {
	var ct struct {
		Task       json.RawMessage `json:"task"`
		Content    json.RawMessage `json:"content"`
		ResultType string          `json:"resultType"`
		TaskID     string          `json:"taskId"`
	}
	if json.Unmarshal(res, &ct) != nil || len(ct.Content) != 0 {
		return res
	}
	if ct.ResultType == "task" && ct.TaskID != "" {
		ct.Task = res
	}
	if len(ct.Task) == 0 {
		return res
	}
	b, err := json.Marshal(map[string]any{"content": []any{}, "_meta": map[string]json.RawMessage{mcpconv.TaskMetaKey: ct.Task}})
	if err != nil {
		return res
	}
	return b
}

// Over HTTP the SDK's connection cannot be wrapped (it finds optional
// methods on it by type assertion), so the same rewriting happens on the
// bodies: the request body of a task-augmented tools/call, and the response
// to it, whole or as the data lines of an event stream.

// lowerTaskRequest returns req with its body's task-augmented tools/call
// rewritten, and whether it was one.
func lowerTaskRequest(req *http.Request) (*http.Request, bool) {
	if req.Method != http.MethodPost || req.GetBody == nil {
		return req, false
	}
	body, err := req.GetBody()
	if err != nil {
		return req, false
	}
	b, err := io.ReadAll(io.LimitReader(body, maxSniff+1))
	body.Close()
	if err != nil || len(b) > maxSniff {
		return req, false
	}
	if !bytes.Contains(b, []byte(mcpconv.TaskMetaKey)) {
		// A call of 2026-07-28 that declares the extension may be answered
		// with a task's handle: its answer is rewritten, the call is not.
		return req, bytes.Contains(b, []byte(`"method":"tools/call"`)) && bytes.Contains(b, []byte(extTasks))
	}
	m, err := jsonrpc.DecodeMessage(b)
	r, ok := m.(*jsonrpc.Request)
	if err != nil || !ok || r.Method != "tools/call" {
		return req, false
	}
	p, ok := mcpconv.MoveField(r.Params, "task", mcpconv.TaskMetaKey, true)
	if !ok {
		return req, false
	}
	r.Params = p
	if b, err = jsonrpc.EncodeMessage(r); err != nil {
		return req, false
	}
	req.Body = io.NopCloser(bytes.NewReader(b))
	req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil }
	req.ContentLength = int64(len(b))
	return req, true
}

// taskBody passes on the response to a task-augmented call with its
// CreateTaskResult rewritten (see taskAsResult).
type taskBody struct {
	io.ReadCloser
	stream bool
	src    *bufio.Reader
	out    []byte
	err    error
	rest   bool // the body was too large to rewrite; the rest passes as it is
}

func (b *taskBody) Read(p []byte) (int, error) {
	for len(b.out) == 0 {
		if b.err != nil {
			return 0, b.err
		}
		if b.src == nil {
			b.src = bufio.NewReaderSize(b.ReadCloser, 64<<10)
		}
		if b.stream {
			line, err := b.src.ReadBytes('\n')
			body := bytes.TrimRight(line, "\r\n")
			if data, ok := bytes.CutPrefix(body, []byte("data:")); ok {
				line = append(append([]byte("data: "), rewriteTask(bytes.TrimSpace(data))...), line[len(body):]...)
			}
			b.out, b.err = line, err
			continue
		}
		if b.rest {
			return b.src.Read(p)
		}
		body, err := io.ReadAll(io.LimitReader(b.src, maxSniff+1))
		switch {
		case err != nil:
		case len(body) > maxSniff:
			// Too large to be a task's handle: it passes as it is.
			b.rest = true
		default:
			body, err = rewriteTask(body), io.EOF
		}
		b.out, b.err = body, err
	}
	n := copy(p, b.out)
	b.out = b.out[n:]
	return n, nil
}

// rewriteTask rewrites one JSON-RPC response that carries a
// CreateTaskResult.
func rewriteTask(data []byte) []byte {
	if !bytes.Contains(data, []byte(`"task"`)) {
		return data
	}
	m, err := jsonrpc.DecodeMessage(data)
	r, ok := m.(*jsonrpc.Response)
	if err != nil || !ok || r.Error != nil {
		return data
	}
	r.Result = taskAsResult(r.Result)
	out, err := jsonrpc.EncodeMessage(r)
	if err != nil {
		return data
	}
	return out
}
