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
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/lathe-tools/lathe/runtime/builtin"
	"github.com/lathe-tools/lathe/server"
	"github.com/lathe-tools/lathe/tool"
)

// stdioClient speaks MCP over a pair of pipes to Server.ServeStdio, line by
// line, as a client of either protocol version writes it: the task methods
// are not in the go-sdk's client, and the test must see the wire.
type stdioClient struct {
	t         *testing.T
	in        *io.PipeWriter
	v2026     bool
	caps      map[string]any // the client's capabilities, sent with each request under 2026-07-28
	done      chan error
	mu        sync.Mutex
	closeOnce sync.Once
	id        int
	waiting   map[int]chan map[string]json.RawMessage
	notes     chan map[string]json.RawMessage // notifications, and requests of the server
}

// openStdio serves a new session of srv over pipes. v2026 makes it a
// client of MCP 2026-07-28 (server/discover, and _meta on each request);
// else it initializes with 2025-11-25. caps are its capabilities.
func openStdio(t *testing.T, srv *server.Server, v2026 bool, caps map[string]any) *stdioClient {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	c := &stdioClient{t: t, in: inW, v2026: v2026, caps: caps, done: make(chan error, 1),
		waiting: map[int]chan map[string]json.RawMessage{}, notes: make(chan map[string]json.RawMessage, 256)}
	go func() {
		c.done <- srv.ServeStdio(ctx, inR, outW)
		outW.Close()
	}()
	go func() {
		sc := bufio.NewScanner(outR)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			var m map[string]json.RawMessage
			if json.Unmarshal(sc.Bytes(), &m) != nil {
				continue
			}
			_, isReq := m["method"]
			var id int
			if raw, ok := m["id"]; ok && !isReq && json.Unmarshal(raw, &id) == nil {
				c.mu.Lock()
				ch := c.waiting[id]
				c.mu.Unlock()
				if ch != nil {
					ch <- m
				}
				continue
			}
			select {
			case c.notes <- m:
			default:
			}
		}
	}()
	t.Cleanup(func() {
		c.close()
		cancel()
	})
	if v2026 {
		if _, err := c.call("server/discover", map[string]any{}); err != nil {
			t.Fatalf("server/discover: %v", err)
		}
	} else {
		if _, err := c.call("initialize", map[string]any{"protocolVersion": "2025-11-25", "capabilities": caps,
			"clientInfo": map[string]any{"name": "raw", "version": "1"}}); err != nil {
			t.Fatalf("initialize: %v", err)
		}
		c.write(map[string]any{"jsonrpc": "2.0", "method": "notifications/initialized"})
	}
	return c
}

// close ends the session, as a client that goes away does, and waits for
// the server to end it.
func (c *stdioClient) close() {
	c.closeOnce.Do(func() {
		c.in.Close()
		select {
		case <-c.done:
		case <-time.After(10 * time.Second):
			c.t.Error("ServeStdio did not return within 10s after its input ended")
		}
	})
}

func (c *stdioClient) write(msg map[string]any) {
	b, _ := json.Marshal(msg)
	if _, err := c.in.Write(append(b, '\n')); err != nil {
		c.t.Fatalf("writing to the server: %v", err)
	}
}

// meta is the _meta a client of 2026-07-28 sends with a request; withTasks
// declares the tasks extension.
func (c *stdioClient) meta(withTasks bool) map[string]any {
	caps := map[string]any{}
	for k, v := range c.caps {
		caps[k] = v
	}
	if withTasks {
		caps["extensions"] = map[string]any{"io.modelcontextprotocol/tasks": map[string]any{}}
	}
	return map[string]any{"io.modelcontextprotocol/protocolVersion": "2026-07-28",
		"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "raw", "version": "1"},
		"io.modelcontextprotocol/clientCapabilities": caps}
}

// start sends a request and returns its ID and the channel its answer comes on.
func (c *stdioClient) start(method string, params map[string]any) (int, chan map[string]json.RawMessage) {
	c.t.Helper()
	if c.v2026 {
		if _, ok := params["_meta"]; !ok {
			params["_meta"] = c.meta(true)
		}
	}
	c.mu.Lock()
	c.id++
	id := c.id
	ch := make(chan map[string]json.RawMessage, 1)
	c.waiting[id] = ch
	c.mu.Unlock()
	c.write(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
	return id, ch
}

func (c *stdioClient) await(method string, ch chan map[string]json.RawMessage) (json.RawMessage, error) {
	c.t.Helper()
	select {
	case m := <-ch:
		if e, ok := m["error"]; ok {
			var re rpcError
			json.Unmarshal(e, &re)
			return nil, &re
		}
		return m["result"], nil
	case <-time.After(10 * time.Second):
		c.t.Fatalf("%s: no answer within 10s", method)
		return nil, nil
	}
}

// call sends a request (with the tasks extension declared, under
// 2026-07-28, unless params carry a _meta of their own) and waits for its
// answer.
func (c *stdioClient) call(method string, params map[string]any) (json.RawMessage, error) {
	c.t.Helper()
	_, ch := c.start(method, params)
	return c.await(method, ch)
}

// note waits for a notification or request of the server with method.
func (c *stdioClient) note(method string) map[string]json.RawMessage {
	c.t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case m := <-c.notes:
			var got string
			json.Unmarshal(m["method"], &got)
			if got == method {
				return m
			}
		case <-deadline:
			c.t.Fatalf("no %s within 10s", method)
			return nil
		}
	}
}

// task2026 is a task as the extension of 2026-07-28 sends it.
type task2026 struct {
	ResultType     string                     `json:"resultType"`
	TaskID         string                     `json:"taskId"`
	Status         string                     `json:"status"`
	StatusMessage  string                     `json:"statusMessage"`
	CreatedAt      string                     `json:"createdAt"`
	LastUpdatedAt  string                     `json:"lastUpdatedAt"`
	TTLMs          *int64                     `json:"ttlMs"`
	PollIntervalMs int64                      `json:"pollIntervalMs"`
	InputRequests  map[string]json.RawMessage `json:"inputRequests"`
	Result         *callText                  `json:"result"`
	Error          *rpcError                  `json:"error"`
	Meta           map[string]any             `json:"_meta"`
	Content        any                        `json:"content"`
}

func decodeTask(t *testing.T, what string, raw json.RawMessage) task2026 {
	t.Helper()
	var tk task2026
	if err := json.Unmarshal(raw, &tk); err != nil {
		t.Fatalf("%s: %v in %s", what, err, raw)
	}
	return tk
}

func (c *stdioClient) get(id string) task2026 {
	c.t.Helper()
	res, err := c.call("tasks/get", map[string]any{"taskId": id})
	if err != nil {
		c.t.Fatalf("tasks/get: %v", err)
	}
	tk := decodeTask(c.t, "tasks/get", res)
	if tk.ResultType != "complete" || tk.TaskID != id {
		c.t.Fatalf("tasks/get: want resultType complete and the task, got %s", res)
	}
	return tk
}

// poll polls tasks/get until the task's status is one of want.
func (c *stdioClient) poll(id string, want ...string) task2026 {
	c.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		tk := c.get(id)
		for _, w := range want {
			if tk.Status == w {
				return tk
			}
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("task %s still %s after 10s, want %v", id, tk.Status, want)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

var v2026Tasks = server.Options{Tasks: server.TaskOptions{Promote: 20 * time.Millisecond}}

// A client of MCP 2026-07-28 that declares the tasks extension: the server
// advertises the extension, a long call becomes a task (resultType "task"),
// tasks/get follows it to its result, and a short call is answered as a
// plain call.
func TestTask2026RoundTrip(t *testing.T) {
	g := newGate()
	srv := server.New(newEngine(t, append(testTools(), g.tool())...), v2026Tasks)
	t.Cleanup(func() { srv.Close() })
	c := openStdio(t, srv, true, map[string]any{})

	disc, err := c.call("server/discover", map[string]any{})
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Capabilities struct {
			Extensions map[string]any `json:"extensions"`
			Tasks      any            `json:"tasks"`
		} `json:"capabilities"`
	}
	if json.Unmarshal(disc, &d) != nil || d.Capabilities.Extensions["io.modelcontextprotocol/tasks"] == nil ||
		d.Capabilities.Tasks != nil {
		t.Errorf("server/discover: want the tasks extension, and no tasks of 2025-11-25, in %s", disc)
	}
	list, err := c.call("tools/list", map[string]any{})
	if err != nil || strings.Contains(string(list), "taskSupport") {
		t.Errorf("tools/list of 2026-07-28 marks taskSupport, which the extension has not: %s %v", list, err)
	}

	res, err := c.call("tools/call", map[string]any{"name": "gate", "arguments": map[string]any{"word": "in"}})
	if err != nil {
		t.Fatal(err)
	}
	tk := decodeTask(t, "tools/call", res)
	if tk.ResultType != "task" || tk.TaskID == "" || tk.Status != "working" || tk.Content != nil ||
		tk.TTLMs == nil || *tk.TTLMs != time.Hour.Milliseconds() || tk.PollIntervalMs <= 0 {
		t.Fatalf("a long call of a client of the extension: want a CreateTaskResult, got %s", res)
	}
	if _, err := time.Parse(time.RFC3339Nano, tk.CreatedAt); err != nil {
		t.Errorf("createdAt %q: %v", tk.CreatedAt, err)
	}
	wait(t, g.entered, "the task's call starting")
	if got := c.get(tk.TaskID); got.Status != "working" || got.Result != nil {
		t.Errorf("a running task: %+v", got)
	}
	close(g.release)
	done := c.poll(tk.TaskID, "completed", "failed", "cancelled")
	if done.Status != "completed" || done.Result == nil || len(done.Result.Content) != 1 ||
		done.Result.Content[0].Text != "through: in" || done.Error != nil {
		t.Errorf("the finished task: %+v", done)
	}

	// A call that ends at once is answered with its result, no task.
	res, err = c.call("tools/call", map[string]any{"name": "weather", "arguments": map[string]any{"city": "Oslo"}})
	if err != nil {
		t.Fatal(err)
	}
	if tk := decodeTask(t, "tools/call", res); tk.ResultType == "task" || tk.TaskID != "" || tk.Content == nil {
		t.Errorf("a short call: want its plain result, got %s", res)
	}
	if g.calls.Load() != 1 {
		t.Errorf("the gate ran %d times, want 1", g.calls.Load())
	}
}

// The extension's rules for a client that breaks them: a task method
// without the extension declared is -32021, a tool error completes its task
// (the extension keeps "failed" for JSON-RPC errors), and a client that
// does not declare the extension never gets a task.
func TestTask2026Rules(t *testing.T) {
	g := newGate()
	srv := server.New(newEngine(t, append(testTools(), g.tool(), slowFail())...), v2026Tasks)
	t.Cleanup(func() { srv.Close() })
	c := openStdio(t, srv, true, map[string]any{})

	res, err := c.call("tools/call", map[string]any{"name": "gate", "arguments": map[string]any{"word": "x"}})
	if err != nil {
		t.Fatal(err)
	}
	tk := decodeTask(t, "tools/call", res)
	for _, m := range []string{"tasks/get", "tasks/cancel", "tasks/update"} {
		_, err := c.call(m, map[string]any{"taskId": tk.TaskID, "inputResponses": map[string]any{},
			"_meta": c.meta(false)})
		var re *rpcError
		if !errors.As(err, &re) || re.Code != -32021 || !strings.Contains(re.Message, "io.modelcontextprotocol/tasks") {
			t.Errorf("%s without the extension declared: %v, want -32021 naming the extension", m, err)
		}
	}
	// Without the extension, the same call is a plain call: the client
	// waits for its result.
	id, ch := c.start("tools/call", map[string]any{"name": "gate", "arguments": map[string]any{"word": "y"},
		"_meta": c.meta(false)})
	wait(t, g.entered, "the first call starting")
	wait(t, g.entered, "the plain call starting")
	close(g.release)
	res, err = c.await(fmt.Sprintf("tools/call %d", id), ch)
	if err != nil || !strings.Contains(string(res), "through: y") || strings.Contains(string(res), `"task"`) {
		t.Errorf("a call of a client without the extension: %s %v", res, err)
	}
	c.poll(tk.TaskID, "completed")

	// A tool's error result completes its task, the error in the result.
	res, err = c.call("tools/call", map[string]any{"name": "slowfail", "arguments": map[string]any{}})
	if err != nil {
		t.Fatal(err)
	}
	tk = decodeTask(t, "tools/call", res)
	if tk.ResultType != "task" {
		t.Fatalf("slowfail: want a task, got %s", res)
	}
	if done := c.poll(tk.TaskID, "completed", "failed"); done.Status != "completed" || done.Result == nil ||
		!done.Result.IsError || done.Error != nil {
		t.Errorf("a task whose tool failed: %+v", done)
	}
}

// slowFail is a tool that fails after a while, long enough to become a
// task.
func slowFail() tool.Tool {
	return builtin.Must(builtin.Func(tool.Definition{Name: "slowfail", Summary: "Fail, slowly."},
		func(ctx context.Context, _ struct{}) (string, error) {
			select {
			case <-time.After(200 * time.Millisecond):
			case <-ctx.Done():
			}
			return "", errors.New("it broke")
		}))
}

// tasks/cancel cancels the task's call, the extension's way: an empty
// acknowledgement, and the task cancelled.
func TestTask2026Cancel(t *testing.T) {
	g := newGate()
	srv := server.New(newEngine(t, g.tool()), v2026Tasks)
	t.Cleanup(func() { srv.Close() })
	c := openStdio(t, srv, true, map[string]any{})
	res, err := c.call("tools/call", map[string]any{"name": "gate", "arguments": map[string]any{"word": "x"}})
	if err != nil {
		t.Fatal(err)
	}
	tk := decodeTask(t, "tools/call", res)
	wait(t, g.entered, "the task's call starting")
	res, err = c.call("tasks/cancel", map[string]any{"taskId": tk.TaskID})
	if err != nil || strings.TrimSpace(string(res)) != `{"resultType":"complete"}` {
		t.Errorf("tasks/cancel: %s %v, want the empty acknowledgement", res, err)
	}
	wait(t, g.cancelled, "the cancelled task's call ending")
	if got := c.poll(tk.TaskID, "cancelled", "completed", "failed"); got.Status != "cancelled" || got.Result != nil {
		t.Errorf("the cancelled task: %+v", got)
	}
	// Cancelling again is acknowledged as well: cancelling is cooperative.
	if _, err := c.call("tasks/cancel", map[string]any{"taskId": tk.TaskID}); err != nil {
		t.Errorf("tasks/cancel of an ended task: %v", err)
	}
}

// A task's question waits for its client across a reconnect (MCP
// 2026-07-28): the client that made the task goes away while the task asks
// something; a new session that presents the task's ID sees it
// input_required, with the question as an input request, and answers it
// with tasks/update; a session that presents another ID gets nothing.
func TestTask2026QuestionAfterReconnect(t *testing.T) {
	srv := server.New(newEngine(t, testTools()...), v2026Tasks)
	t.Cleanup(func() { srv.Close() })
	elicit := map[string]any{"elicitation": map[string]any{}}
	a := openStdio(t, srv, true, elicit)
	res, err := a.call("tools/call", map[string]any{"name": "confirm", "arguments": map[string]any{}})
	if err != nil {
		t.Fatal(err)
	}
	tk := decodeTask(t, "tools/call", res)
	if tk.ResultType != "task" || tk.Status != "input_required" {
		t.Fatalf("a call that asks at once: want a task waiting for input, got %s", res)
	}
	a.close()

	b := openStdio(t, srv, true, elicit)
	// Another ID — a guess, or a task that is not there — gets the answer
	// for no task at all, and answers nothing.
	for _, m := range []string{"tasks/get", "tasks/update", "tasks/cancel"} {
		_, err := b.call(m, map[string]any{"taskId": "AAAAAAAAAAAAAAAAAAAAAA", "inputResponses": map[string]any{}})
		var re *rpcError
		if !errors.As(err, &re) || re.Code != -32602 {
			t.Errorf("%s of an unknown task: %v, want -32602", m, err)
		}
	}
	got := b.poll(tk.TaskID, "input_required")
	if len(got.InputRequests) != 1 {
		t.Fatalf("the waiting task: want one input request, got %+v", got)
	}
	var key string
	var ir struct {
		Method string `json:"method"`
		Params struct {
			Message string `json:"message"`
		} `json:"params"`
	}
	for k, v := range got.InputRequests {
		key = k
		json.Unmarshal(v, &ir)
	}
	if ir.Method != "elicitation/create" || ir.Params.Message != "Go on?" {
		t.Errorf("the input request: %s %+v", got.InputRequests[key], ir)
	}
	// An answer to a key that is not open is ignored, and the task waits on.
	if _, err := b.call("tasks/update", map[string]any{"taskId": tk.TaskID,
		"inputResponses": map[string]any{"nope": map[string]any{"action": "accept", "content": map[string]any{"answer": false}}}}); err != nil {
		t.Errorf("tasks/update of an unknown key: %v", err)
	}
	if got := b.get(tk.TaskID); got.Status != "input_required" {
		t.Errorf("after an answer to no question: %+v", got)
	}
	res, err = b.call("tasks/update", map[string]any{"taskId": tk.TaskID,
		"inputResponses": map[string]any{key: map[string]any{"action": "accept", "content": map[string]any{"answer": true}}}})
	if err != nil || strings.TrimSpace(string(res)) != `{"resultType":"complete"}` {
		t.Errorf("tasks/update: %s %v", res, err)
	}
	done := b.poll(tk.TaskID, "completed", "failed", "cancelled")
	if done.Status != "completed" || done.Result == nil || done.Result.IsError || done.Result.Content[0].Text != "went on" {
		t.Errorf("the answered task: %+v", done)
	}
}

// Task status notifications: a client of 2026-07-28 that listens for its
// task (subscriptions/listen with taskIds) gets notifications/tasks, the
// task whole, marked with its listen; one of 2025-11-25 gets
// notifications/tasks/status for the tasks it holds.
func TestTaskStatusNotifications(t *testing.T) {
	g := newGate()
	srv := server.New(newEngine(t, g.tool()), v2026Tasks)
	t.Cleanup(func() { srv.Close() })

	c := openStdio(t, srv, true, map[string]any{})
	res, err := c.call("tools/call", map[string]any{"name": "gate", "arguments": map[string]any{"word": "n"}})
	if err != nil {
		t.Fatal(err)
	}
	tk := decodeTask(t, "tools/call", res)
	// Task notifications need the extension declared.
	_, err = c.call("subscriptions/listen", map[string]any{"_meta": c.meta(false),
		"notifications": map[string]any{"taskIds": []string{tk.TaskID}}})
	var re *rpcError
	if !errors.As(err, &re) || re.Code != -32021 {
		t.Errorf("subscriptions/listen for a task without the extension declared: %v, want -32021", err)
	}
	listenID, _ := c.start("subscriptions/listen", map[string]any{"notifications": map[string]any{
		"taskIds": []string{tk.TaskID, "AAAAAAAAAAAAAAAAAAAAAA"}}})
	ack := c.note("notifications/subscriptions/acknowledged")
	var ap struct {
		Notifications struct {
			TaskIDs []string `json:"taskIds"`
		} `json:"notifications"`
		Meta map[string]any `json:"_meta"`
	}
	if json.Unmarshal(ack["params"], &ap) != nil || len(ap.Notifications.TaskIDs) != 1 ||
		ap.Notifications.TaskIDs[0] != tk.TaskID || ap.Meta["io.modelcontextprotocol/subscriptionId"] != float64(listenID) {
		t.Errorf("the acknowledgement: want the one task that exists, for listen %d, got %s", listenID, ack["params"])
	}
	wait(t, g.entered, "the task's call starting")
	close(g.release)
	n := c.note("notifications/tasks")
	got := decodeTask(t, "notifications/tasks", n["params"])
	if got.TaskID != tk.TaskID || got.Status != "completed" || got.Result == nil ||
		got.Result.Content[0].Text != "through: n" || got.Meta["io.modelcontextprotocol/subscriptionId"] != float64(listenID) {
		t.Errorf("notifications/tasks: %s", n["params"])
	}

	// A client of 2025-11-25, over standard input too.
	g = newGate()
	srv2 := server.New(newEngine(t, g.tool()), server.Options{})
	t.Cleanup(func() { srv2.Close() })
	old := openStdio(t, srv2, false, map[string]any{})
	res, err = old.call("tools/call", map[string]any{"name": "gate", "arguments": map[string]any{"word": "o"},
		"task": map[string]any{"ttl": 60000}})
	if err != nil {
		t.Fatal(err)
	}
	var ct struct {
		Task wireTask `json:"task"`
	}
	if json.Unmarshal(res, &ct) != nil || ct.Task.TaskID == "" {
		t.Fatalf("tools/call with a task: %s", res)
	}
	wait(t, g.entered, "the task's call starting")
	close(g.release)
	n = old.note("notifications/tasks/status")
	var st wireTask
	if json.Unmarshal(n["params"], &st) != nil || st.TaskID != ct.Task.TaskID || st.Status != "completed" {
		t.Errorf("notifications/tasks/status: %s", n["params"])
	}
}

// withToken sends a bearer token with every request.
type withToken string

func (tk withToken) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+string(tk))
	return http.DefaultTransport.RoundTrip(r)
}

// A task's question follows its client across a reconnect (MCP 2025-11-25,
// over streamable HTTP): Alice's session, asked on its stream, goes away
// without answering; in her new session tasks/get says input_required, and
// the question comes on the stream of her tasks/result, where she answers
// it. Bob, who presents her task's ID, gets the answer for no task, and
// never sees the question.
func TestTaskQuestionFollowsReconnect(t *testing.T) {
	srv := server.New(newEngine(t, testTools()...), server.Options{})
	url := serveTasks(t, srv, users)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	type asked struct {
		who string
		req *sdk.ElicitRequest
	}
	questions := make(chan asked, 4)
	connect := func(who, token string) *sdk.ClientSession {
		c := sdk.NewClient(&sdk.Implementation{Name: who}, &sdk.ClientOptions{
			ElicitationHandler: func(_ context.Context, r *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
				questions <- asked{who, r}
				return &sdk.ElicitResult{Action: "accept", Content: map[string]any{"answer": true}}, nil
			},
		})
		addTaskMethods(t, c)
		cs, err := c.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: url,
			HTTPClient: &http.Client{Transport: withToken(token)}}, &sdk.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
		if err != nil {
			t.Fatalf("%s connecting: %v", who, err)
		}
		return cs
	}

	alice := dialWith(t, url, "alice-token", map[string]any{"elicitation": map[string]any{}})
	_, msgs := alice.openStream(ctx, "alice-token")
	tk := alice.startTask("confirm", map[string]any{}, 60000)
	for asked := false; !asked; {
		select {
		case m := <-msgs:
			asked = string(m["method"]) == `"elicitation/create"`
		case <-ctx.Done():
			t.Fatal("the task's question did not reach the session that made it")
		}
	}
	// Alice goes away without answering.
	alice.close()

	bob := connect("bob", "bob-token")
	defer bob.Close()
	for _, m := range []string{"tasks/get", "tasks/result"} {
		if _, err := sdk.CallCustomMethod[*taskIDIn, *taskOut](ctx, bob, m, &taskIDIn{TaskID: tk.TaskID}); err == nil ||
			!strings.Contains(err.Error(), "unknown task") {
			t.Errorf("bob's %s of alice's task: %v, want unknown task", m, err)
		}
	}

	alice2 := connect("alice", "alice-token")
	defer alice2.Close()
	g, err := sdk.CallCustomMethod[*taskIDIn, *taskOut](ctx, alice2, "tasks/get", &taskIDIn{TaskID: tk.TaskID})
	if err != nil || g.Status != "input_required" {
		t.Fatalf("the waiting task, from alice's new session: %+v %v", g, err)
	}
	res, err := sdk.CallCustomMethod[*taskIDIn, *sdk.CallToolResult](ctx, alice2, "tasks/result", &taskIDIn{TaskID: tk.TaskID})
	if err != nil || res.IsError || text(res) != "went on" {
		t.Fatalf("tasks/result in alice's new session: %+v %v", res, err)
	}
	var q asked
	select {
	case q = <-questions:
	default:
		t.Fatal("the question did not reach alice's new session")
	}
	if rel, _ := q.req.Params.Meta["io.modelcontextprotocol/related-task"].(map[string]any); q.who != "alice" ||
		rel["taskId"] != tk.TaskID || q.req.Params.Message != "Go on?" {
		t.Errorf("the question: to %s, meta %v, %q", q.who, q.req.Params.Meta, q.req.Params.Message)
	}
	select {
	case q := <-questions:
		t.Errorf("a question went to %s as well", q.who)
	default:
	}
}

// A client that refuses a task's question (it cannot be asked) has
// answered it: the call goes on as a call whose question was refused, and
// does not wait for another client.
func TestTaskQuestionRefused(t *testing.T) {
	srv := server.New(newEngine(t, testTools()...), server.Options{})
	url := serveTasks(t, srv, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	c := sdk.NewClient(&sdk.Implementation{Name: "refuser"}, &sdk.ClientOptions{
		ElicitationHandler: func(context.Context, *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
			return nil, errors.New("no one here to ask")
		},
	})
	if err := sdk.AddSendingCustomMethod[*taskIDIn, *sdk.CallToolResult](c, "tasks/result"); err != nil {
		t.Fatal(err)
	}
	if err := sdk.AddSendingCustomMethod[*listIn, *listOut](c, "tasks/list"); err != nil {
		t.Fatal(err)
	}
	cs, err := c.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: url}, &sdk.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	res, err := sdk.CallCustomMethod[*taskIDIn, *sdk.CallToolResult](ctx, cs, "tasks/result", &taskIDIn{TaskID: confirmTask(t, ctx, cs)})
	if err != nil || !res.IsError || !strings.Contains(text(res), "no one here to ask") {
		t.Errorf("a task whose question was refused: %+v %v", res, err)
	}
}

// openStream opens the standalone stream (GET) of c's session with token,
// and returns its HTTP status and the messages that come on it.
func (c *rawClient) openStream(ctx context.Context, token string) (int, <-chan map[string]json.RawMessage) {
	c.t.Helper()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, c.url, nil)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Mcp-Session-Id", c.sid)
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatalf("GET: %v", err)
	}
	msgs := make(chan map[string]json.RawMessage, 16)
	go func() {
		defer resp.Body.Close()
		defer close(msgs)
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			data, ok := strings.CutPrefix(sc.Text(), "data:")
			var m map[string]json.RawMessage
			if ok && json.Unmarshal([]byte(data), &m) == nil {
				msgs <- m
			}
		}
	}()
	return resp.StatusCode, msgs
}

// Over streamable HTTP, a client of 2025-11-25 is told of its task's status
// on its session's standalone stream; another user who opens a stream on
// that session is refused, and takes none of the session's notifications.
func TestTaskStatusOnStream(t *testing.T) {
	g := newGate()
	srv := server.New(newEngine(t, g.tool()), server.Options{})
	url := serveTasks(t, srv, users)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()

	alice := dial(t, url, "alice-token")
	code, msgs := alice.openStream(ctx, "alice-token")
	if code != http.StatusOK {
		t.Fatalf("alice's stream: HTTP %d", code)
	}
	tk := alice.startTask("gate", map[string]any{"word": "s"}, 60000)
	wait(t, g.entered, "the task's call starting")
	bobsView := &rawClient{t: t, url: url, sid: alice.sid}
	if code, bobMsgs := bobsView.openStream(ctx, "bob-token"); code == http.StatusOK {
		t.Errorf("bob opened a stream on alice's session")
	} else {
		for m := range bobMsgs {
			t.Errorf("bob's refused stream carried %s", m["method"])
		}
	}
	close(g.release)
	for {
		select {
		case m, ok := <-msgs:
			if !ok {
				t.Fatal("alice's stream ended before the task's status came")
			}
			if string(m["method"]) != `"notifications/tasks/status"` {
				continue
			}
			var w wireTask
			if json.Unmarshal(m["params"], &w) != nil || w.TaskID != tk.TaskID {
				t.Fatalf("notifications/tasks/status: %s", m["params"])
			}
			if w.Status == "completed" {
				return
			}
		case <-ctx.Done():
			t.Fatal("no notifications/tasks/status saying completed on alice's stream")
		}
	}
}

// recordDiscover keeps the body of the answer to server/discover.
type recordDiscover struct {
	mu   sync.Mutex
	body []byte
}

func (r *recordDiscover) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil || req.Header.Get("Mcp-Method") != "server/discover" {
		return resp, err
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	r.mu.Lock()
	r.body = b
	r.mu.Unlock()
	resp.Body = io.NopCloser(bytes.NewReader(b))
	return resp, err
}

// Over streamable HTTP, server/discover offers 2026-07-28 and advertises
// its tasks extension: a go-sdk client of 2026-07-28 speaks it there (see
// TestHTTP2026Task for a task over HTTP).
func TestTask2026OverHTTP(t *testing.T) {
	srv := server.New(newEngine(t, testTools()...), server.Options{})
	url := serveTasks(t, srv, nil)
	rec := &recordDiscover{}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "new"}, nil).Connect(ctx,
		&sdk.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: rec}},
		&sdk.ClientSessionOptions{ProtocolVersion: "2026-07-28"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	rec.mu.Lock()
	body := string(rec.body)
	rec.mu.Unlock()
	if !strings.Contains(body, "supportedVersions") || !strings.Contains(body, "2026-07-28") ||
		!strings.Contains(body, "io.modelcontextprotocol/tasks") {
		t.Errorf("server/discover over HTTP: %s", body)
	}
	if ir := cs.InitializeResult(); ir == nil || ir.ProtocolVersion != "2026-07-28" {
		t.Fatalf("the session's version: %+v", ir)
	}
}

// A task's question that nobody answers waits no longer than the task
// lives: at its TTL the question is given up — its request cancelled — and
// the task is cancelled and forgotten.
func TestTaskQuestionEndsWithTTL(t *testing.T) {
	srv := server.New(newEngine(t, testTools()...), server.Options{Tasks: server.TaskOptions{
		Promote: 20 * time.Millisecond, DefaultTTL: 300 * time.Millisecond}})
	t.Cleanup(func() { srv.Close() })
	elicit := map[string]any{"elicitation": map[string]any{}}

	// Under 2025-11-25 the session that made the task is asked, and does
	// not answer.
	a := openStdio(t, srv, false, elicit)
	res, err := a.call("tools/call", map[string]any{"name": "confirm", "arguments": map[string]any{},
		"task": map[string]any{"ttl": 300}})
	if err != nil {
		t.Fatal(err)
	}
	var ct struct {
		Task wireTask `json:"task"`
	}
	if json.Unmarshal(res, &ct) != nil || ct.Task.TaskID == "" {
		t.Fatalf("tools/call with a task: %s", res)
	}
	q := a.note("elicitation/create")
	cancelled := a.note("notifications/cancelled")
	var cp struct {
		RequestID json.RawMessage `json:"requestId"`
	}
	if json.Unmarshal(cancelled["params"], &cp) != nil || string(cp.RequestID) != string(q["id"]) {
		t.Errorf("at the task's TTL: cancelled %s, want the question's request %s", cancelled["params"], q["id"])
	}

	// Under 2026-07-28 the question waits in the task, whose client went
	// away; after the TTL the task is gone.
	c := openStdio(t, srv, true, elicit)
	res, err = c.call("tools/call", map[string]any{"name": "confirm", "arguments": map[string]any{}})
	if err != nil {
		t.Fatal(err)
	}
	tk := decodeTask(t, "tools/call", res)
	if tk.Status != "input_required" {
		t.Fatalf("want a task waiting for its answer, got %s", res)
	}
	c.close()
	d := openStdio(t, srv, true, map[string]any{})
	deadline := time.Now().Add(5 * time.Second)
	for {
		if _, err := d.call("tasks/get", map[string]any{"taskId": tk.TaskID}); err != nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the task waiting for an answer is still there 5s after its TTL of 300ms")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Under 2025-11-25, a task's question goes to every session there to take
// it — the one that made the task, one waiting in tasks/result — and the
// first answer counts: the request still open on the other is cancelled.
func TestTaskQuestionFirstAnswerCounts(t *testing.T) {
	srv := server.New(newEngine(t, testTools()...), server.Options{})
	t.Cleanup(func() { srv.Close() })
	elicit := map[string]any{"elicitation": map[string]any{}}
	a := openStdio(t, srv, false, elicit)
	res, err := a.call("tools/call", map[string]any{"name": "confirm", "arguments": map[string]any{},
		"task": map[string]any{"ttl": 60000}})
	if err != nil {
		t.Fatal(err)
	}
	var ct struct {
		Task wireTask `json:"task"`
	}
	if json.Unmarshal(res, &ct) != nil || ct.Task.TaskID == "" {
		t.Fatalf("tools/call with a task: %s", res)
	}
	toA := a.note("elicitation/create")

	b := openStdio(t, srv, false, elicit)
	_, result := b.start("tasks/result", map[string]any{"taskId": ct.Task.TaskID})
	toB := b.note("elicitation/create")
	var meta struct {
		Meta map[string]map[string]string `json:"_meta"`
	}
	if json.Unmarshal(toB["params"], &meta) != nil || meta.Meta["io.modelcontextprotocol/related-task"]["taskId"] != ct.Task.TaskID {
		t.Errorf("the question on tasks/result does not name its task: %s", toB["params"])
	}
	var reqID any
	json.Unmarshal(toB["id"], &reqID)
	b.write(map[string]any{"jsonrpc": "2.0", "id": reqID,
		"result": map[string]any{"action": "accept", "content": map[string]any{"answer": true}}})
	out, err := b.await("tasks/result", result)
	if err != nil || !strings.Contains(string(out), "went on") {
		t.Fatalf("tasks/result after b's answer: %s %v", out, err)
	}
	cancelled := a.note("notifications/cancelled")
	var cp struct {
		RequestID json.RawMessage `json:"requestId"`
	}
	if json.Unmarshal(cancelled["params"], &cp) != nil || string(cp.RequestID) != string(toA["id"]) {
		t.Errorf("the question left open on a's session: cancelled %s, want request %s", cancelled["params"], toA["id"])
	}
}
