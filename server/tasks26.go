package server

import (
	"context"
	"encoding/json"
	"maps"
	"slices"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/lathe-tools/lathe/internal/mcpconv"
)

// Tasks in MCP 2026-07-28: the extension io.modelcontextprotocol/tasks.
// The client declares it in the capabilities each request carries in its
// _meta; the server advertises it in the capabilities of server/discover
// (and of initialize, for a client that initializes with 2026-07-28). The
// server, not the client, decides which call becomes a task: lathe makes
// one of a call that has not ended after [TaskOptions.Promote], or that
// asks its client something before then, and answers the call with a
// CreateTaskResult (resultType "task", the task's fields flat beside it).
// The client polls tasks/get, which carries the task's status and, as they
// come, its open questions (inputRequests), its result or its error; it
// answers the questions with tasks/update and cancels with tasks/cancel.
// The extension has no tasks/list and no tasks/result; lathe answers them
// all the same, outside it, for a task made with _meta["lathe/task"]. The
// store, the IDs and their binding to a principal, the TTL and the bounds
// are those of tasks.go.

// extTasks names the tasks extension.
const extTasks = "io.modelcontextprotocol/tasks"

// methodTasksUpdate answers a task's questions (the extension only).
const methodTasksUpdate = "tasks/update"

// codeMissingCapability is MCP's error for a request that needs a
// capability its client did not declare.
const codeMissingCapability = -32021

// errMissingTasks answers a task method of a client of 2026-07-28 that did
// not declare the extension on the request, as the extension asks.
var errMissingTasks = &jsonrpc.Error{Code: codeMissingCapability,
	Message: "Missing required client capability: declare the tasks extension (" + extTasks +
		") in the request's _meta clientCapabilities",
	Data: json.RawMessage(`{"requiredCapabilities":{"extensions":{"` + extTasks + `":{}}}}`)}

func errNot2025(method string) error {
	return &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: method +
		" belongs to the tasks extension of MCP 2026-07-28; under 2025-11-25 a task's questions come as requests while tasks/result waits"}
}

// declaresTasks reports whether a request's _meta declares the tasks
// extension among the client's capabilities.
func declaresTasks(meta map[string]any) bool {
	v, ok := meta[sdk.MetaKeyClientCapabilities]
	if !ok {
		return false
	}
	// As decoded from JSON, without encoding it again; a value a program
	// put there itself is read through JSON.
	if m, ok := v.(map[string]any); ok {
		ext, _ := m["extensions"].(map[string]any)
		_, ok := ext[extTasks]
		return ok
	}
	b, err := json.Marshal(v)
	if err != nil {
		return false
	}
	var caps struct {
		Extensions map[string]json.RawMessage `json:"extensions"`
	}
	if json.Unmarshal(b, &caps) != nil {
		return false
	}
	_, ok = caps.Extensions[extTasks]
	return ok
}

// complete is the empty acknowledgement of tasks/update and tasks/cancel.
type complete struct {
	ResultType string `json:"resultType"`
}

type updateTaskParams struct {
	sdk.ParamsBase
	TaskID         string               `json:"taskId"`
	InputResponses sdk.InputResponseMap `json:"inputResponses"`
}

// detailedTask is a task as the extension sends it: the result of tasks/get
// (resultType "complete"), a CreateTaskResult (resultType "task"), and the
// params of notifications/tasks (no resultType).
type detailedTask struct {
	ResultType     string              `json:"resultType,omitempty"`
	TaskID         string              `json:"taskId"`
	Status         string              `json:"status"`
	StatusMessage  string              `json:"statusMessage,omitempty"`
	CreatedAt      string              `json:"createdAt"`
	LastUpdatedAt  string              `json:"lastUpdatedAt"`
	TTLMs          *int64              `json:"ttlMs"`
	PollIntervalMs int64               `json:"pollIntervalMs,omitempty"`
	InputRequests  sdk.InputRequestMap `json:"inputRequests,omitempty"`
	Result         *sdk.CallToolResult `json:"result,omitempty"`
	Error          *jsonrpc.Error      `json:"error,omitempty"`
	Meta           map[string]any      `json:"_meta,omitempty"`
}

// detailed is t in the extension's shape, with resultType rt.
func (ts *taskStore) detailed(t *task, rt string) *detailedTask {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	w := t.wire()
	d := &detailedTask{ResultType: rt, TaskID: w.TaskID, Status: w.Status, StatusMessage: w.StatusMessage,
		CreatedAt: w.CreatedAt, LastUpdatedAt: w.LastUpdatedAt, TTLMs: w.TTL, PollIntervalMs: w.PollInterval}
	switch {
	case t.status == mcpconv.TaskInputRequired:
		d.InputRequests = t.inputRequests()
	case t.result != nil && t.status != mcpconv.TaskCancelled:
		// The extension keeps "failed" for a call that ended with a
		// JSON-RPC error; a tool's error result completes its task.
		if t.callErr != "" {
			d.Status = mcpconv.TaskFailed
			d.Error = &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: t.callErr}
		} else {
			d.Status = mcpconv.TaskCompleted
			d.Result = t.result
		}
	}
	return d
}

// withTasksExtension adds the tasks extension to the capabilities of a
// result of server/discover or initialize whose versions include
// 2026-07-28. Over streamable HTTP, where lathe offers only the versions
// before it, server/discover is left as it is.
func withTasksExtension(res sdk.Result) sdk.Result {
	var caps **sdk.ServerCapabilities
	switch r := res.(type) {
	case *sdk.DiscoverResult:
		if !slices.ContainsFunc(r.SupportedVersions, func(v string) bool { return v >= "2026-07-28" }) {
			return res
		}
		caps = &r.Capabilities
	case *sdk.InitializeResult:
		caps = &r.Capabilities
	default:
		return res
	}
	// A copy: the SDK may hand out the server's own capabilities.
	var c sdk.ServerCapabilities
	if *caps != nil {
		c = **caps
	}
	c.Extensions = maps.Clone(c.Extensions)
	if c.Extensions == nil {
		c.Extensions = map[string]any{}
	}
	c.Extensions[extTasks] = map[string]any{}
	*caps = &c
	return res
}

// startTask2026 runs a call of a client that declared the tasks extension.
// ok is false when no task can be made (the bounds of [TaskOptions] are
// reached): the call then runs as a plain call.
func (s *Server) startTask2026(ctx context.Context, req *sdk.CallToolRequest) (res sdk.Result, ok bool, err error) {
	ttl, err := s.taskTool(req.Params.Name, map[string]any{})
	if err != nil {
		return nil, true, err
	}
	// Its questions are sent to no session: they wait to be fetched with
	// tasks/get and answered with tasks/update.
	t, err := s.launch(ctx, req, ttl)
	if err != nil {
		return nil, false, nil
	}
	var promote <-chan time.Time
	if d := s.tasks.opts.Promote; d > 0 {
		timer := time.NewTimer(d)
		defer timer.Stop()
		promote = timer.C
	} else {
		c := make(chan time.Time)
		close(c)
		promote = c
	}
	select {
	case <-t.done:
		// Done before it became a task: the plain result, and no task.
		select {
		case <-t.asked:
		default:
			s.tasks.discard(t)
			s.tasks.mu.Lock()
			r := *t.result
			s.tasks.mu.Unlock()
			// The SDK sends a result as it is, and 2026-07-28 asks for
			// its resultType.
			b, err := json.Marshal(&r)
			if err != nil || len(b) < 2 || b[0] != '{' {
				return &r, true, nil
			}
			sep := ","
			if string(b) == "{}" {
				sep = ""
			}
			return &rawResult{raw: append([]byte(`{"resultType":"complete"`+sep), b[1:]...)}, true, nil
		}
	case <-t.asked:
	case <-promote:
	case <-ctx.Done():
		// The client gave up on its call before it became a task.
		t.cancel()
		<-t.done
		s.tasks.discard(t)
		return nil, true, ctx.Err()
	}
	t.handed.Store(true)
	r, err := encode(s.tasks.detailed(t, "task"))
	return r, true, err
}
