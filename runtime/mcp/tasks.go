package mcp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
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

type taskIDParams struct {
	sdk.ParamsBase
	TaskID string `json:"taskId"`
}

type taskState struct {
	sdk.ResultBase
	mcpconv.Task
}

// The task methods lathe sends.
const (
	methodTasksResult = "tasks/result"
	methodTasksCancel = "tasks/cancel"
)

// addTaskMethods lets c send the task methods.
func addTaskMethods(c *sdk.Client) {
	for _, err := range []error{
		sdk.AddSendingCustomMethod[*taskIDParams, *sdk.CallToolResult](c, methodTasksResult),
		sdk.AddSendingCustomMethod[*taskIDParams, *taskState](c, methodTasksCancel),
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

// createContext is the context of a task-augmented tools/call: it ends
// createGrace after ctx does. The call that created the task then finds ctx
// over, and cancels the task.
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
		return res, nil
	}
	var tk mcpconv.Task
	if b, err := json.Marshal(raw); err != nil || json.Unmarshal(b, &tk) != nil || tk.TaskID == "" {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError,
			Message: fmt.Sprintf("the server answered with a task lathe cannot read: %v", raw)}
	}
	r, err := sdk.CallCustomMethod[*taskIDParams, *sdk.CallToolResult](ctx, sess.cs, methodTasksResult,
		&taskIDParams{TaskID: tk.TaskID})
	if err != nil && ctx.Err() != nil {
		// The caller is gone; the task would run on upstream until its TTL.
		s.cancelTask(sess, tk.TaskID)
	}
	return r, err
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

type taskConn struct {
	sdk.Connection
	mu      sync.Mutex
	pending map[any]bool // ids of task-augmented calls awaiting their answer
}

func (c *taskConn) Write(ctx context.Context, m jsonrpc.Message) error {
	if r, ok := m.(*jsonrpc.Request); ok && r.Method == "tools/call" && r.ID.IsValid() {
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
		c.mu.Lock()
		k := idKey(r.ID)
		asked := c.pending[k]
		delete(c.pending, k)
		c.mu.Unlock()
		if asked && r.Error == nil {
			r.Result = taskAsResult(r.Result)
		}
	}
	return m, err
}

// taskAsResult turns a CreateTaskResult into a CallToolResult that carries
// the task in its _meta; any other result is left as it is.
func taskAsResult(res json.RawMessage) json.RawMessage {
	var ct struct {
		Task    json.RawMessage `json:"task"`
		Content json.RawMessage `json:"content"`
	}
	if json.Unmarshal(res, &ct) != nil || len(ct.Task) == 0 || len(ct.Content) != 0 {
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
	if err != nil || len(b) > maxSniff || !bytes.Contains(b, []byte(mcpconv.TaskMetaKey)) {
		return req, false
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
