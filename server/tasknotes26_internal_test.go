package server

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestTaskPollsBindNothing: a client of MCP 2026-07-28 over streamable
// HTTP polls its task with tasks/get, each request a session of its own
// that ends with it. Were each bound to the task, a client polling every
// second for the task's hour would grow the task by thousands of sessions,
// each visited at every change of the task; a listen binds its session
// while it lasts, and no longer.
func TestTaskPollsBindNothing(t *testing.T) {
	s, url, _ := listenServer(t, HTTPOptions{})
	meta := map[string]any{"io.modelcontextprotocol/protocolVersion": "2026-07-28",
		"io.modelcontextprotocol/clientInfo": map[string]any{"name": "poller", "version": "1"},
		"io.modelcontextprotocol/clientCapabilities": map[string]any{
			"extensions": map[string]any{"io.modelcontextprotocol/tasks": map[string]any{}}}}
	post := func(ctx context.Context, method, name string, params map[string]any) *http.Response {
		params["_meta"] = meta
		body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
		return post26(ctx, t, url, method, string(body), http.Header{"Mcp-Name": {name}})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	resp := post(ctx, "tools/call", "wait", map[string]any{"name": "wait", "arguments": map[string]any{}})
	var b strings.Builder
	buf := make([]byte, 4096)
	for {
		n, err := resp.Body.Read(buf)
		b.Write(buf[:n])
		if err != nil {
			break
		}
	}
	resp.Body.Close()
	_, data, _ := strings.Cut(b.String(), `"taskId":"`)
	id, _, ok := strings.Cut(data, `"`)
	if !ok {
		t.Fatalf("the call did not become a task: %s", b.String())
	}
	holders := func() int {
		s.tasks.mu.Lock()
		defer s.tasks.mu.Unlock()
		return len(s.tasks.tasks[id].holders)
	}
	before := holders()
	for range 100 {
		resp := post(ctx, "tasks/get", id, map[string]any{"taskId": id})
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("tasks/get: %s", resp.Status)
		}
	}
	if n := holders(); n != before {
		t.Errorf("100 polls bound the task to %d sessions more", n-before)
	}
	// A listen binds its session while it lasts.
	lctx, end := context.WithCancel(ctx)
	resp = post(lctx, "subscriptions/listen", "", map[string]any{"notifications": map[string]any{"taskIds": []string{id}}})
	if _, err := resp.Body.Read(buf); err != nil {
		t.Fatalf("the listen's acknowledgement: %v", err)
	}
	if n := holders(); n != before+1 {
		t.Errorf("a listen bound the task to %d sessions, want 1", n-before)
	}
	end()
	resp.Body.Close()
	deadline := time.Now().Add(5 * time.Second)
	for holders() != before {
		if time.Now().After(deadline) {
			t.Fatalf("the listen ended, and its session stays bound to the task (%d)", holders()-before)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
