package mcp

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/lathe-tools/lathe/internal/mcpconv"
)

// TestTaskHandle26OverHTTP: over streamable HTTP, a tools/call of MCP
// 2026-07-28 that declares the tasks extension has its answer read by
// taskBody, and the extension's handle (the task's fields flat, beside
// "resultType": "task") becomes a result whose _meta holds the task, as a
// handle of 2025-11-25 does; a plain result passes as it is.
func TestTaskHandle26OverHTTP(t *testing.T) {
	call := `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"long","arguments":{},` +
		`"_meta":{"io.modelcontextprotocol/clientCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}}}}}`
	req, _ := http.NewRequest(http.MethodPost, "http://127.0.0.1/mcp", strings.NewReader(call))
	if _, asTask := lowerTaskRequest(req); !asTask {
		t.Fatal("a call that declares the tasks extension is not read for a task's handle")
	}
	plainCall := strings.Replace(call, extTasks, "io.example/other", 1)
	req, _ = http.NewRequest(http.MethodPost, "http://127.0.0.1/mcp", strings.NewReader(plainCall))
	if _, asTask := lowerTaskRequest(req); asTask {
		t.Error("a call that does not declare the tasks extension is read for a task's handle")
	}

	handle := `{"jsonrpc":"2.0","id":4,"result":{"resultType":"task","taskId":"t-1","status":"working",` +
		`"createdAt":"2026-01-01T00:00:00Z","lastUpdatedAt":"2026-01-01T00:00:00Z","ttlMs":60000,"pollIntervalMs":100}}`
	plain := `{"jsonrpc":"2.0","id":5,"result":{"resultType":"complete","content":[{"type":"text","text":"a \"task\""}]}}`
	for _, stream := range []bool{false, true} {
		for _, c := range []struct {
			body string
			task bool
		}{{handle, true}, {plain, false}} {
			body := c.body
			if stream {
				body = "event: message\ndata: " + body + "\n\n"
			}
			out, err := io.ReadAll(&taskBody{ReadCloser: io.NopCloser(strings.NewReader(body)), stream: stream})
			if err != nil {
				t.Fatal(err)
			}
			if !c.task {
				if string(out) != body {
					t.Errorf("stream %v: a plain result was changed: %s", stream, out)
				}
				continue
			}
			data := bytes.TrimSpace(bytes.TrimPrefix(bytes.TrimSpace(bytes.TrimPrefix(out, []byte("event: message"))), []byte("data:")))
			var m struct {
				Result struct {
					Content []any                      `json:"content"`
					Meta    map[string]json.RawMessage `json:"_meta"`
				} `json:"result"`
			}
			if err := json.Unmarshal(data, &m); err != nil {
				t.Fatalf("stream %v: %v: %s", stream, err, out)
			}
			var tk mcpconv.Task
			if json.Unmarshal(m.Result.Meta[mcpconv.TaskMetaKey], &tk) != nil || tk.TaskID != "t-1" || m.Result.Content == nil {
				t.Errorf("stream %v: the handle became %s", stream, out)
			}
		}
	}
}
