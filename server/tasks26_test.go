package server_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	_ "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/lathe-tools/lathe/runtime/builtin"
	"github.com/lathe-tools/lathe/server"
	"github.com/lathe-tools/lathe/tool"
)

// stdioClient speaks MCP over a pair of pipes to Server.ServeStdio, line by
// line, as a client of either protocol version writes it: the task methods
// are not in the go-sdk's client, and the test must see the wire.
type stdioClient struct {
	t       *testing.T
	in      *io.PipeWriter
	v2026   bool
	caps    map[string]any // the client's capabilities, sent with each request under 2026-07-28
	done    chan error
	mu      sync.Mutex
	id      int
	waiting map[int]chan map[string]json.RawMessage
	notes   chan map[string]json.RawMessage // notifications, and requests of the server
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
	c.in.Close()
	select {
	case <-c.done:
	case <-time.After(10 * time.Second):
		c.t.Error("ServeStdio did not return within 10s after its input ended")
	}
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
