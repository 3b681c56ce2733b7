package server_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/lathe-tools/lathe/server"
)

// listen26 opens a subscriptions/listen of MCP 2026-07-28 over streamable
// HTTP for the tasks ids, and returns the messages of its response as they
// come; the listen lasts as long as ctx.
func listen26(ctx context.Context, t *testing.T, c *client26, id int, ids []string) <-chan map[string]json.RawMessage {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": "subscriptions/listen",
		"params": map[string]any{"_meta": c.meta(), "notifications": map[string]any{"taskIds": ids}}})
	req, _ := http.NewRequestWithContext(ctx, "POST", c.url, strings.NewReader(string(body)))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", "subscriptions/listen")
	req.Header.Set("Authorization", "Bearer "+c.token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("subscriptions/listen: %v", err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("subscriptions/listen: %s", resp.Status)
	}
	return events(resp)
}

// taskNote is a task as notifications/tasks and tasks/get carry it, with
// the messages lathe keeps with it.
type taskNote struct {
	TaskID        string `json:"taskId"`
	Status        string `json:"status"`
	StatusMessage string `json:"statusMessage"`
	Meta          struct {
		Subscription json.RawMessage `json:"io.modelcontextprotocol/subscriptionId"`
		Notes        []struct {
			Seq    int    `json:"seq"`
			Method string `json:"method"`
			Params struct {
				Message string          `json:"message"`
				Level   string          `json:"level"`
				Data    json.RawMessage `json:"data"`
			} `json:"params"`
		} `json:"lathe/notes"`
	} `json:"_meta"`
}

// said lists a task's kept messages as "progress word" and "log word".
func (n taskNote) said() []string {
	var out []string
	for _, m := range n.Meta.Notes {
		if m.Method == "notifications/progress" {
			out = append(out, "progress "+m.Params.Message)
		} else {
			var word string
			_ = json.Unmarshal(m.Params.Data, &word)
			out = append(out, "log "+word)
		}
	}
	return out
}

// TestTaskNotes2026: a client of MCP 2026-07-28 over streamable HTTP whose
// call became a task follows its progress and log messages: the tasks
// extension sends no notifications/progress or notifications/message for
// a task, so they come in the task itself — its status message, and the
// messages kept with it in its _meta — on the notifications/tasks of its
// subscriptions/listen, each once, and in tasks/get. Bob, another user
// who presents Alice's task ID, in a listen of his own and in tasks/get,
// is told of no task, and his listen carries nothing of it.
func TestTaskNotes2026(t *testing.T) {
	step, finish := make(chan struct{}), make(chan struct{})
	srv := server.New(newEngine(t, dripTool(step, finish)), v2026Tasks)
	url := serveTasks(t, srv, users)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	caps := map[string]any{"extensions": map[string]any{"io.modelcontextprotocol/tasks": map[string]any{}}}
	alice := &client26{t: t, url: url, token: "alice-token", caps: caps, level: "info"}
	bob := &client26{t: t, url: url, token: "bob-token", caps: caps, level: "debug"}

	_, msgs := alice.call(1, "drip", map[string]any{}, nil)
	var made struct {
		Result struct {
			ResultType string `json:"resultType"`
			TaskID     string `json:"taskId"`
		} `json:"result"`
	}
	if len(msgs) == 0 || json.Unmarshal(msgs[len(msgs)-1], &made) != nil || made.Result.ResultType != "task" {
		t.Fatalf("the call did not become a task: %s", msgs)
	}
	id := made.Result.TaskID

	aliceCtx, aliceEnd := context.WithCancel(ctx)
	defer aliceEnd()
	heard := listen26(aliceCtx, t, alice, 7, []string{id})
	if ack := next(ctx, t, "Alice's acknowledgement", heard); !strings.Contains(string(ack["params"]), id) {
		t.Fatalf("Alice's listen was not agreed to her task: %s", ack["params"])
	}
	bobCtx, bobEnd := context.WithCancel(ctx)
	bobHeard := listen26(bobCtx, t, bob, 8, []string{id})
	if ack := next(ctx, t, "Bob's acknowledgement", bobHeard); strings.Contains(string(ack["params"]), id) {
		t.Fatalf("Bob's listen was agreed to Alice's task: %s", ack["params"])
	}
	if _, msgs := bob.send(9, "tasks/get", id, map[string]any{"taskId": id, "_meta": bob.meta()}); len(msgs) != 1 ||
		!strings.Contains(string(msgs[0]), "unknown task") {
		t.Fatalf("Bob's tasks/get of Alice's task: %s", msgs)
	}

	// What the task says reaches Alice's listen as it comes, each message
	// once, until the task completes.
	wantSaid := []string{"progress before", "log before", "progress meanwhile", "log meanwhile", "progress live", "log live"}
	var said []string
	var last taskNote
	close(step)
	for last.Status != "completed" {
		m := next(ctx, t, "a notification of Alice's task (heard "+strings.Join(said, ", ")+")", heard)
		if string(m["method"]) != `"notifications/tasks"` {
			continue
		}
		last = taskNote{}
		if err := json.Unmarshal(m["params"], &last); err != nil {
			t.Fatal(err)
		}
		if last.TaskID != id || string(last.Meta.Subscription) != "7" {
			t.Errorf("a notification of another task or listen: %s", m["params"])
		}
		said = append(said, last.said()...)
		if last.StatusMessage == "meanwhile" && len(said) == 4 {
			close(finish)
		}
	}
	if strings.Join(said, ", ") != strings.Join(wantSaid, ", ") {
		t.Errorf("Alice's listen heard %q, want %q", said, wantSaid)
	}

	// tasks/get carries the kept messages too, after the number asked, and
	// log messages at the level named.
	meta := alice.meta()
	meta["lathe/notesAfter"] = 2
	meta["io.modelcontextprotocol/logLevel"] = "warning"
	_, msgs = alice.send(10, "tasks/get", id, map[string]any{"taskId": id, "_meta": meta})
	var got struct {
		Result taskNote `json:"result"`
	}
	if len(msgs) != 1 || json.Unmarshal(msgs[0], &got) != nil {
		t.Fatalf("Alice's tasks/get: %s", msgs)
	}
	if s := strings.Join(got.Result.said(), ", "); got.Result.Status != "completed" || s != "progress meanwhile, progress live" {
		t.Errorf("Alice's tasks/get after message 2, no info logs: %s, %q", got.Result.Status, s)
	}

	// Bob's listen heard nothing of it.
	bobEnd()
	for m := range bobHeard {
		if strings.Contains(string(m["params"]), id) || strings.Contains(string(m["params"]), "meanwhile") {
			t.Errorf("Bob's listen carried Alice's task: %s %s", m["method"], m["params"])
		}
	}
}

// TestTaskNotes2026BeforeTheHandle: a call of a client of the tasks
// extension that ends before it becomes a task is a plain call: its
// progress reaches the client on the call's own response, as it comes.
func TestTaskNotes2026BeforeTheHandle(t *testing.T) {
	p := newProbe()
	srv := server.New(newEngine(t, p.tools()...), server.Options{Tasks: server.TaskOptions{Promote: time.Minute}})
	url := serveTasks(t, srv, nil)
	c := &client26{t: t, url: url,
		caps: map[string]any{"extensions": map[string]any{"io.modelcontextprotocol/tasks": map[string]any{}}}}
	meta := c.meta()
	meta["progressToken"] = "p"
	_, msgs := c.call(1, "steps", map[string]any{}, map[string]any{"_meta": meta})
	progress := 0
	for _, m := range msgs {
		if decode26(t, m).Method == "notifications/progress" {
			progress++
		}
	}
	if last := decode26(t, msgs[len(msgs)-1]); progress != 3 || last.Result.ResultType != "complete" {
		t.Errorf("steps, a call that did not become a task: %d progress messages: %s", progress, msgs)
	}
}

// TestListensBounded: listens of clients of MCP 2026-07-28 over HTTP each
// hold a stream for as long as the client keeps it; past the server's
// bound one more is refused with an error that names it, and once one
// ends another is taken.
func TestListensBounded(t *testing.T) {
	srv := server.New(newEngine(t, testTools()...), server.Options{})
	ts := httptest.NewServer(srv.Handler(server.HTTPOptions{MaxSessions: 2}))
	t.Cleanup(func() { ts.Close(); srv.Close() })
	c := &client26{t: t, url: ts.URL + server.Path, caps: map[string]any{}}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	open := func(ctx context.Context, id int) *http.Response {
		body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": "subscriptions/listen",
			"params": map[string]any{"_meta": c.meta(), "notifications": map[string]any{"toolsListChanged": true}}})
		req, _ := http.NewRequestWithContext(ctx, "POST", c.url, strings.NewReader(string(body)))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
		req.Header.Set("Mcp-Method", "subscriptions/listen")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("subscriptions/listen: %v", err)
		}
		return resp
	}
	first, end := context.WithCancel(ctx)
	for i := range 2 {
		c := ctx
		if i == 0 {
			c = first
		}
		resp := open(c, i)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("listen %d of 2: %s", i+1, resp.Status)
		}
		next(ctx, t, "the acknowledgement of a listen", events(resp))
	}
	resp := open(ctx, 3)
	body := readAll(t, resp)
	if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(body, "at most 2 subscriptions/listen") ||
		!strings.Contains(body, `"id":3`) {
		t.Fatalf("a third listen: %s %s", resp.Status, body)
	}
	end()
	for {
		resp := open(ctx, 4)
		if resp.StatusCode == http.StatusOK {
			resp.Body.Close()
			break
		}
		resp.Body.Close()
		select {
		case <-ctx.Done():
			t.Fatal("no listen was taken after one ended")
		case <-time.After(20 * time.Millisecond):
		}
	}
}
