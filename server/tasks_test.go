package server_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/lathe-tools/lathe"
	"github.com/lathe-tools/lathe/policy"
	"github.com/lathe-tools/lathe/runtime/builtin"
	"github.com/lathe-tools/lathe/server"
	"github.com/lathe-tools/lathe/tool"
)

// rawClient speaks MCP's streamable HTTP as JSON-RPC by hand: the go-sdk
// client has no tasks, and the test must see the wire as a client of the
// task methods sends and reads it.
type rawClient struct {
	t     *testing.T
	url   string
	token string
	sid   string
	id    int
	// version is the protocol version a request without a session
	// names in its header.
	version string
}

type rpcError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

func (e *rpcError) Error() string { return fmt.Sprintf("%d %s", e.Code, e.Message) }

// dial opens a session, as a 2025-11-25 client.
func dial(t *testing.T, url, token string) *rawClient {
	t.Helper()
	return dialWith(t, url, token, map[string]any{})
}

// dialWith opens a session, as a 2025-11-25 client of capabilities caps.
func dialWith(t *testing.T, url, token string, caps map[string]any) *rawClient {
	t.Helper()
	c := &rawClient{t: t, url: url, token: token}
	res, err := c.rpc("initialize", map[string]any{"protocolVersion": "2025-11-25", "capabilities": caps,
		"clientInfo": map[string]any{"name": "raw", "version": "1"}})
	if err != nil {
		t.Fatalf("initialize: %v", err)
	}
	var ir struct {
		Capabilities struct {
			Tasks *struct {
				Requests struct {
					Tools struct {
						Call *struct{} `json:"call"`
					} `json:"tools"`
				} `json:"requests"`
			} `json:"tasks"`
		} `json:"capabilities"`
	}
	if err := json.Unmarshal(res, &ir); err != nil || ir.Capabilities.Tasks == nil ||
		ir.Capabilities.Tasks.Requests.Tools.Call == nil {
		t.Fatalf("initialize: no tasks capability for tools/call in %s", res)
	}
	c.send("notifications/initialized", nil, false)
	return c
}

func (c *rawClient) rpc(method string, params any) (json.RawMessage, error) {
	c.t.Helper()
	return c.send(method, params, true)
}

func (c *rawClient) send(method string, params any, call bool) (json.RawMessage, error) {
	c.t.Helper()
	msg := map[string]any{"jsonrpc": "2.0", "method": method}
	if params != nil {
		msg["params"] = params
	}
	if call {
		c.id++
		msg["id"] = c.id
	}
	body, _ := json.Marshal(msg)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, c.url, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if c.sid != "" {
		req.Header.Set("Mcp-Session-Id", c.sid)
		req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	} else if c.version != "" {
		req.Header.Set("Mcp-Protocol-Version", c.version)
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatalf("%s: %v (the server did not answer in time)", method, err)
	}
	defer resp.Body.Close()
	if id := resp.Header.Get("Mcp-Session-Id"); id != "" {
		c.sid = id
	}
	if !call {
		if resp.StatusCode/100 != 2 {
			c.t.Fatalf("%s: HTTP %s", method, resp.Status)
		}
		return nil, nil
	}
	var reply struct {
		ID     int             `json:"id"`
		Result json.RawMessage `json:"result"`
		Error  *rpcError       `json:"error"`
	}
	found := false
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(nil, 1<<20)
		for !found && sc.Scan() {
			data, ok := strings.CutPrefix(sc.Text(), "data:")
			if !ok {
				continue
			}
			if json.Unmarshal([]byte(data), &reply) == nil && reply.ID == c.id && (reply.Result != nil || reply.Error != nil) {
				found = true
			}
		}
	} else if json.NewDecoder(resp.Body).Decode(&reply) == nil {
		found = true
	}
	if !found {
		c.t.Fatalf("%s: no answer (HTTP %s)", method, resp.Status)
	}
	if reply.Error != nil {
		return nil, reply.Error
	}
	return reply.Result, nil
}

// close ends the session, as a client that goes away does.
func (c *rawClient) close() {
	req, _ := http.NewRequest(http.MethodDelete, c.url, nil)
	req.Header.Set("Mcp-Session-Id", c.sid)
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	if resp, err := http.DefaultClient.Do(req); err == nil {
		resp.Body.Close()
	}
}

type wireTask struct {
	TaskID        string `json:"taskId"`
	Status        string `json:"status"`
	StatusMessage string `json:"statusMessage"`
	TTL           *int64 `json:"ttl"`
	CreatedAt     string `json:"createdAt"`
	LastUpdatedAt string `json:"lastUpdatedAt"`
}

// startTask calls a tool as a task, with the "task" field of MCP 2025-11-25.
func (c *rawClient) startTask(name string, args any, ttlMs int) wireTask {
	c.t.Helper()
	res, err := c.rpc("tools/call", map[string]any{"name": name, "arguments": args, "task": map[string]any{"ttl": ttlMs}})
	if err != nil {
		c.t.Fatalf("tools/call %s as a task: %v", name, err)
	}
	var ct struct {
		Task    wireTask `json:"task"`
		Content any      `json:"content"`
	}
	if err := json.Unmarshal(res, &ct); err != nil || ct.Task.TaskID == "" || ct.Content != nil {
		c.t.Fatalf("tools/call %s as a task: want a CreateTaskResult, got %s", name, res)
	}
	if _, err := time.Parse(time.RFC3339Nano, ct.Task.CreatedAt); err != nil {
		c.t.Errorf("createdAt %q: %v", ct.Task.CreatedAt, err)
	}
	return ct.Task
}

func (c *rawClient) task(method, id string) (wireTask, error) {
	c.t.Helper()
	res, err := c.rpc(method, map[string]any{"taskId": id})
	if err != nil {
		return wireTask{}, err
	}
	var w wireTask
	if err := json.Unmarshal(res, &w); err != nil {
		c.t.Fatalf("%s: %v in %s", method, err, res)
	}
	return w, nil
}

// await polls tasks/get until the task ends.
func (c *rawClient) await(id string) wireTask {
	c.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		w, err := c.task("tasks/get", id)
		if err != nil {
			c.t.Fatalf("tasks/get: %v", err)
		}
		if w.Status == "completed" || w.Status == "failed" || w.Status == "cancelled" {
			return w
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("task %s still %s after 10s", id, w.Status)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (c *rawClient) list() []wireTask {
	c.t.Helper()
	res, err := c.rpc("tasks/list", map[string]any{})
	if err != nil {
		c.t.Fatalf("tasks/list: %v", err)
	}
	var l struct {
		Tasks []wireTask `json:"tasks"`
	}
	if err := json.Unmarshal(res, &l); err != nil {
		c.t.Fatalf("tasks/list: %v in %s", err, res)
	}
	return l.Tasks
}

type callText struct {
	Content []struct {
		Text string `json:"text"`
	} `json:"content"`
	IsError bool           `json:"isError"`
	Meta    map[string]any `json:"_meta"`
}

// gate is a tool that runs until it is released or cancelled.
type gate struct {
	release   chan struct{}
	entered   chan struct{}
	cancelled chan struct{}
	calls     atomic.Int32
}

func newGate() *gate {
	return &gate{release: make(chan struct{}), entered: make(chan struct{}, 16), cancelled: make(chan struct{}, 16)}
}

func (g *gate) tool() tool.Tool {
	type in struct {
		Word string `json:"word"`
	}
	return builtin.Must(builtin.Func(tool.Definition{Name: "gate", Summary: "Wait to be let through."},
		func(ctx context.Context, a in) (string, error) {
			g.calls.Add(1)
			g.entered <- struct{}{}
			select {
			case <-g.release:
				return "through: " + a.Word, nil
			case <-ctx.Done():
				g.cancelled <- struct{}{}
				return "", ctx.Err()
			}
		}))
}

func wait(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(10 * time.Second):
		t.Fatalf("%s did not happen within 10s", what)
	}
}

func serveTasks(t *testing.T, srv *server.Server, wrap func(http.Handler) http.Handler) string {
	t.Helper()
	h := srv.Handler(server.HTTPOptions{})
	if wrap != nil {
		h = wrap(h)
	}
	ts := httptest.NewServer(h)
	t.Cleanup(func() {
		srv.Close()
		ts.Close()
	})
	return ts.URL + server.Path
}

func TestTaskSurvivesReconnect(t *testing.T) {
	g := newGate()
	srv := server.New(newEngine(t, g.tool()), server.Options{})
	url := serveTasks(t, srv, nil)

	a := dial(t, url, "")
	res, err := a.rpc("tools/list", map[string]any{})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(res), `"execution":{"taskSupport":"optional"}`) {
		t.Errorf("tools/list does not offer tasks: %s", res)
	}
	tk := a.startTask("gate", map[string]any{"word": "hello"}, 60000)
	if tk.Status != "working" || tk.TTL == nil || *tk.TTL != 60000 {
		t.Errorf("new task: %+v", tk)
	}
	wait(t, g.entered, "the task's call starting")
	// The client goes away while its call runs; the call must go on.
	a.close()

	b := dial(t, url, "")
	if got := b.list(); len(got) != 0 {
		t.Errorf("a new session lists tasks it never held: %+v", got)
	}
	if w, err := b.task("tasks/get", tk.TaskID); err != nil || w.Status != "working" {
		t.Fatalf("tasks/get after reconnecting: %+v %v", w, err)
	}
	if got := b.list(); len(got) != 1 || got[0].TaskID != tk.TaskID {
		t.Errorf("tasks/list after presenting the ID: %+v", got)
	}
	close(g.release)
	if w := b.await(tk.TaskID); w.Status != "completed" {
		t.Fatalf("task ended %s: %s", w.Status, w.StatusMessage)
	}
	res, err = b.rpc("tasks/result", map[string]any{"taskId": tk.TaskID})
	if err != nil {
		t.Fatal(err)
	}
	var ct callText
	if err := json.Unmarshal(res, &ct); err != nil || ct.IsError || len(ct.Content) != 1 || ct.Content[0].Text != "through: hello" {
		t.Fatalf("tasks/result: %s", res)
	}
	if rel, _ := ct.Meta["io.modelcontextprotocol/related-task"].(map[string]any); rel["taskId"] != tk.TaskID {
		t.Errorf("tasks/result does not name its task: %s", res)
	}
	if n := g.calls.Load(); n != 1 {
		t.Errorf("the tool ran %d times, want once", n)
	}
	select {
	case <-g.cancelled:
		t.Error("closing the session cancelled the task's call")
	default:
	}
}

func TestTaskCancel(t *testing.T) {
	g := newGate()
	srv := server.New(newEngine(t, g.tool()), server.Options{})
	c := dial(t, serveTasks(t, srv, nil), "")
	tk := c.startTask("gate", map[string]any{"word": "x"}, 60000)
	wait(t, g.entered, "the task's call starting")
	w, err := c.task("tasks/cancel", tk.TaskID)
	if err != nil || w.Status != "cancelled" {
		t.Fatalf("tasks/cancel: %+v %v", w, err)
	}
	wait(t, g.cancelled, "the cancelled task's call ending")
	if w := c.await(tk.TaskID); w.Status != "cancelled" {
		t.Errorf("after cancelling, the task is %s", w.Status)
	}
	var re *rpcError
	if _, err := c.task("tasks/cancel", tk.TaskID); !errors.As(err, &re) || re.Code != -32602 {
		t.Errorf("cancelling an ended task: %v, want -32602", err)
	}
	res, err := c.rpc("tasks/result", map[string]any{"taskId": tk.TaskID})
	var ct callText
	if err != nil || json.Unmarshal(res, &ct) != nil || !ct.IsError {
		t.Errorf("tasks/result of a cancelled task: %s %v, want an error result", res, err)
	}
}

func TestTaskTTL(t *testing.T) {
	g := newGate()
	srv := server.New(newEngine(t, g.tool()), server.Options{Tasks: server.TaskOptions{MaxTTL: 10 * time.Second}})
	c := dial(t, serveTasks(t, srv, nil), "")
	tk := c.startTask("gate", map[string]any{"word": "x"}, 300)
	wait(t, g.entered, "the task's call starting")
	// The call still runs at the end of its TTL: it is cancelled, and the
	// task forgotten.
	wait(t, g.cancelled, "the call of an expired task ending")
	var re *rpcError
	if _, err := c.task("tasks/get", tk.TaskID); !errors.As(err, &re) || re.Code != -32602 {
		t.Errorf("tasks/get of an expired task: %v, want -32602", err)
	}
	if got := c.list(); len(got) != 0 {
		t.Errorf("expired tasks listed: %+v", got)
	}
	// A client cannot keep a task longer than the server allows.
	long := c.startTask("gate", map[string]any{"word": "y"}, 3600_000)
	if long.TTL == nil || *long.TTL != 10000 {
		t.Errorf("asked for an hour with MaxTTL 10s, got ttl %v", long.TTL)
	}
	for _, bad := range []any{-5, 1.5, "soon"} {
		if _, err := c.rpc("tools/call", map[string]any{"name": "gate", "arguments": map[string]any{},
			"task": map[string]any{"ttl": bad}}); !errors.As(err, &re) || !strings.Contains(re.Message, "/params/task/ttl") {
			t.Errorf("ttl %v: %v, want an error naming /params/task/ttl", bad, err)
		}
	}
}

// users authenticates two users by their tokens, as an authentication
// layer in front of the handler does.
func users(h http.Handler) http.Handler {
	return auth.RequireBearerToken(func(_ context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
		user, ok := map[string]string{"alice-token": "alice", "bob-token": "bob"}[token]
		if !ok {
			return nil, auth.ErrInvalidToken
		}
		return &auth.TokenInfo{UserID: user, Expiration: time.Now().Add(time.Hour)}, nil
	}, nil)(h)
}

func TestTaskOfAnotherClient(t *testing.T) {
	g := newGate()
	srv := server.New(newEngine(t, g.tool()), server.Options{})
	url := serveTasks(t, srv, users)

	alice := dial(t, url, "alice-token")
	tk := alice.startTask("gate", map[string]any{"word": "secret"}, 60000)
	wait(t, g.entered, "the task's call starting")

	// Bob holds Alice's task ID (it leaked, say): it gets him nothing, and
	// the answer is the one for an ID that names no task at all.
	bob := dial(t, url, "bob-token")
	_, unknown := bob.task("tasks/get", "AAAAAAAAAAAAAAAAAAAAAA")
	for _, m := range []string{"tasks/get", "tasks/cancel", "tasks/result"} {
		_, err := bob.rpc(m, map[string]any{"taskId": tk.TaskID})
		var re *rpcError
		if !errors.As(err, &re) || re.Code != -32602 || err.Error() != unknown.Error() {
			t.Errorf("%s of another user's task: %v, want %v", m, err, unknown)
		}
	}
	if got := bob.list(); len(got) != 0 {
		t.Errorf("bob lists alice's tasks: %+v", got)
	}
	// An unauthenticated caller is refused by the authentication layer
	// before it reaches a task.
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tasks/list"}`))
	if resp, err := http.DefaultClient.Do(req); err == nil {
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("no token: HTTP %s", resp.Status)
		}
	}

	// Alice, in a new session, sees the task as she left it: Bob's cancel
	// did not reach it. Her user lists it without presenting the ID.
	alice.close()
	alice2 := dial(t, url, "alice-token")
	if got := alice2.list(); len(got) != 1 || got[0].TaskID != tk.TaskID {
		t.Errorf("alice's tasks in her new session: %+v", got)
	}
	close(g.release)
	if w := alice2.await(tk.TaskID); w.Status != "completed" {
		t.Errorf("alice's task: %s %s", w.Status, w.StatusMessage)
	}
}

func TestTaskLimits(t *testing.T) {
	g := newGate()
	big := builtin.Must(builtin.Func(tool.Definition{Name: "big", Summary: "A long answer."},
		func(context.Context, struct{}) (string, error) { return strings.Repeat("x", 4096), nil }))
	srv := server.New(newEngine(t, g.tool(), big), server.Options{Tasks: server.TaskOptions{MaxPerClient: 2, MaxResultBytes: 1024}})
	c := dial(t, serveTasks(t, srv, nil), "")

	tk := c.startTask("big", map[string]any{}, 60000)
	if w := c.await(tk.TaskID); w.Status != "failed" || !strings.Contains(w.StatusMessage, "more than the 1024") {
		t.Errorf("a result over MaxResultBytes: %+v", w)
	}
	c.startTask("gate", map[string]any{}, 60000)
	_, err := c.rpc("tools/call", map[string]any{"name": "gate", "arguments": map[string]any{}, "task": map[string]any{}})
	if err == nil || !strings.Contains(err.Error(), "at most 2") {
		t.Errorf("a third task with MaxPerClient 2: %v", err)
	}
	if _, err := c.rpc("tools/call", map[string]any{"name": "nope", "arguments": map[string]any{},
		"task": map[string]any{}}); err == nil || !strings.Contains(err.Error(), `unknown tool "nope"`) {
		t.Errorf("a task of an unknown tool: %v", err)
	}
	close(g.release)
}

// Over standard input too, a tools/call with "task" runs as a task.
func TestTaskOverStdio(t *testing.T) {
	g := newGate()
	srv := server.New(newEngine(t, g.tool()), server.Options{})
	defer srv.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- srv.ServeStdio(ctx, inR, outW)
		outW.Close()
	}()
	sc := bufio.NewScanner(outR)
	sc.Buffer(nil, 1<<20)
	// next skips notifications (of the task's status, among others).
	next := func(what string) map[string]json.RawMessage {
		t.Helper()
		for {
			if !sc.Scan() {
				t.Fatalf("no answer to %s", what)
			}
			var m map[string]json.RawMessage
			if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
				t.Fatalf("%s: %v", what, err)
			}
			if _, ok := m["id"]; ok {
				return m
			}
		}
	}
	send := func(line string) {
		if _, err := io.WriteString(inW, line+"\n"); err != nil {
			t.Fatal(err)
		}
	}
	send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}`)
	next("initialize")
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"gate","arguments":{"word":"in"},"task":{"ttl":60000}}}`)
	var ct struct {
		Task wireTask `json:"task"`
	}
	if m := next("tools/call"); json.Unmarshal(m["result"], &ct) != nil || ct.Task.TaskID == "" {
		t.Fatalf("tools/call with a task over stdio: %s", m["result"])
	}
	wait(t, g.entered, "the task's call starting")
	close(g.release)
	send(`{"jsonrpc":"2.0","id":3,"method":"tasks/result","params":{"taskId":"` + ct.Task.TaskID + `"}}`)
	if m := next("tasks/result"); !strings.Contains(string(m["result"]), "through: in") {
		t.Errorf("tasks/result over stdio: %s", m["result"])
	}
	inW.Close()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("ServeStdio did not return after its input ended")
	}
}

type taskIDIn struct {
	sdk.ParamsBase
	TaskID string `json:"taskId"`
}

type taskOut struct {
	sdk.ResultBase
	wireTask
}

type listIn struct{ sdk.ParamsBase }

type listOut struct {
	sdk.ResultBase
	Tasks []wireTask `json:"tasks"`
}

// A go-sdk client over streamable HTTP, asking for a task through _meta: the
// task's question reaches it, with the task named, and the task says
// input_required until the answer comes.
func TestTaskAsksItsClient(t *testing.T) {
	srv := server.New(newEngine(t, testTools()...), server.Options{})
	url := serveTasks(t, srv, nil)
	asked := make(chan *sdk.ElicitRequest, 1)
	answer := make(chan struct{})
	c := sdk.NewClient(&sdk.Implementation{Name: "test"}, &sdk.ClientOptions{
		ElicitationHandler: func(_ context.Context, r *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
			asked <- r
			<-answer
			return &sdk.ElicitResult{Action: "accept", Content: map[string]any{"answer": true}}, nil
		},
	})
	addTaskMethods(t, c)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	// The tasks of 2025-11-25, which a client of 2026-07-28 does not get.
	cs, err := c.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: url},
		&sdk.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	id := confirmTask(t, ctx, cs)
	var r *sdk.ElicitRequest
	select {
	case r = <-asked:
	case <-ctx.Done():
		t.Fatal("the task's question did not reach its client")
	}
	if rel, _ := r.Params.Meta["io.modelcontextprotocol/related-task"].(map[string]any); rel["taskId"] != id {
		t.Errorf("the question does not name its task: %v", r.Params.Meta)
	}
	g, err := sdk.CallCustomMethod[*taskIDIn, *taskOut](ctx, cs, "tasks/get", &taskIDIn{TaskID: id})
	if err != nil || g.Status != "input_required" {
		t.Errorf("a task waiting for an answer: %+v %v", g, err)
	}
	close(answer)
	res, err := sdk.CallCustomMethod[*taskIDIn, *sdk.CallToolResult](ctx, cs, "tasks/result", &taskIDIn{TaskID: id})
	if err != nil || res.IsError || text(res) != "went on" {
		t.Fatalf("tasks/result: %+v %v", res, err)
	}
	g, err = sdk.CallCustomMethod[*taskIDIn, *taskOut](ctx, cs, "tasks/get", &taskIDIn{TaskID: id})
	if err != nil || g.Status != "completed" {
		t.Errorf("the answered task: %+v %v", g, err)
	}
}

// A task's call goes through the engine's pipeline: behind a policy, a tool
// that needs approval does not run for a client that cannot be asked, task
// or not.
func TestTaskKeepsThePolicy(t *testing.T) {
	e := lathe.New(lathe.Options{Middleware: []lathe.Middleware{policy.Middleware(&policy.Policy{}, policy.Options{})}})
	t.Cleanup(func() { e.Close() })
	if err := e.Register(testTools()...); err != nil {
		t.Fatal(err)
	}
	c := dial(t, serveTasks(t, server.New(e, server.Options{}), nil), "")
	tk := c.startTask("fail", map[string]any{}, 60000)
	w := c.await(tk.TaskID)
	res, err := c.rpc("tasks/result", map[string]any{"taskId": tk.TaskID})
	if err != nil {
		t.Fatal(err)
	}
	if w.Status != "failed" || !strings.Contains(string(res), "no one to ask") || strings.Contains(string(res), "it broke") {
		t.Errorf("a task of a tool that needs approval, for a client that cannot be asked: %s %s", w.Status, res)
	}
	// The read-only tool runs without a question.
	tk = c.startTask("weather", map[string]any{"city": "Oslo"}, 60000)
	if w := c.await(tk.TaskID); w.Status != "completed" {
		t.Errorf("weather as a task: %s %s", w.Status, w.StatusMessage)
	}
}

// addTaskMethods lets the go-sdk client c send the task methods of MCP
// 2025-11-25, which it does not know.
// confirmTask calls the confirm tool as a task (lathe's "lathe/task") and
// returns the id of the one task the session then lists.
func confirmTask(t *testing.T, ctx context.Context, cs *sdk.ClientSession) string {
	t.Helper()
	if _, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "confirm", Arguments: map[string]any{},
		Meta: sdk.Meta{"lathe/task": map[string]any{"ttl": 60000}}}); err != nil {
		t.Fatal(err)
	}
	l, err := sdk.CallCustomMethod[*listIn, *listOut](ctx, cs, "tasks/list", &listIn{})
	if err != nil || len(l.Tasks) != 1 {
		t.Fatalf("tasks/list: %+v %v", l, err)
	}
	return l.Tasks[0].TaskID
}

func addTaskMethods(t *testing.T, c *sdk.Client) {
	t.Helper()
	for _, err := range []error{
		sdk.AddSendingCustomMethod[*taskIDIn, *taskOut](c, "tasks/get"),
		sdk.AddSendingCustomMethod[*taskIDIn, *sdk.CallToolResult](c, "tasks/result"),
		sdk.AddSendingCustomMethod[*listIn, *listOut](c, "tasks/list"),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
}
