package server_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/lathe-tools/lathe"
	"github.com/lathe-tools/lathe/runtime/builtin"
	"github.com/lathe-tools/lathe/server"
	"github.com/lathe-tools/lathe/tool"
)

// samplerTool asks its caller's model, and returns the model's words.
func samplerTool() tool.Tool {
	return builtin.Must(builtin.Func(tool.Definition{Name: "sampler", Summary: "Ask the caller's model."},
		func(ctx context.Context, _ struct{}) (string, error) {
			h := tool.HooksFrom(ctx)
			if h.Sample == nil {
				return "", errors.New("the caller offers no sampling")
			}
			res, err := h.Sample(ctx, &tool.SamplingRequest{MaxTokens: 10, Messages: []tool.SamplingMessage{
				{Role: "user", Content: tool.Content{Type: tool.ContentText, Text: "the answer?"}}}})
			if err != nil {
				return "", err
			}
			return "model said " + res.Content.Text, nil
		}))
}

// sampled is a client's answer to the sampling request id, as a JSON-RPC
// response.
func sampled(id json.RawMessage) map[string]any {
	return map[string]any{"jsonrpc": "2.0", "id": id, "result": map[string]any{"role": "assistant",
		"content": map[string]any{"type": "text", "text": "forty-two"}, "model": "m"}}
}

// post25 POSTs msg in the session sid as a client of MCP 2025-03-26.
func post25(ctx context.Context, t *testing.T, url, sid string, msg any) *http.Response {
	t.Helper()
	body, _ := json.Marshal(msg)
	req, _ := http.NewRequestWithContext(ctx, "POST", url, strings.NewReader(string(body)))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if sid != "" {
		req.Header.Set("Mcp-Session-Id", sid)
		req.Header.Set("Mcp-Protocol-Version", "2025-03-26")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", body, err)
	}
	return resp
}

// events reads the JSON-RPC messages of a response, a JSON body or an
// event stream, as they come.
func events(resp *http.Response) <-chan map[string]json.RawMessage {
	ch := make(chan map[string]json.RawMessage, 16)
	go func() {
		defer close(ch)
		defer resp.Body.Close()
		put := func(data []byte) {
			var one map[string]json.RawMessage
			if json.Unmarshal(data, &one) == nil {
				ch <- one
				return
			}
			var many []map[string]json.RawMessage
			if json.Unmarshal(data, &many) == nil {
				for _, m := range many {
					ch <- m
				}
			}
		}
		if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
			b, _ := io.ReadAll(resp.Body)
			put(b)
			return
		}
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				put([]byte(data))
			}
		}
	}()
	return ch
}

// next is the next message of ch, within ctx.
func next(ctx context.Context, t *testing.T, what string, ch <-chan map[string]json.RawMessage) map[string]json.RawMessage {
	t.Helper()
	select {
	case m, ok := <-ch:
		if !ok {
			t.Fatalf("%s: the response ended", what)
		}
		return m
	case <-ctx.Done():
		t.Fatalf("%s: nothing came in time", what)
	}
	return nil
}

// TestBatchedAnswer: a client of MCP 2025-03-26 over streamable HTTP
// answers lathe's sampling request inside a JSON-RPC batch, alone or beside
// a request of its own; the call takes that answer (before, it waited for
// its timeout), and the batch's request is answered. An answer batched by
// another session, which learnt the request's id, is not taken; a
// cancellation in a batch cancels the call.
func TestBatchedAnswer(t *testing.T) {
	for _, with := range []string{"alone", "with a ping", "after another session's", "cancelled in a batch"} {
		t.Run(with, func(t *testing.T) {
			e := lathe.New(lathe.Options{Timeout: 8 * time.Second})
			if err := e.Register(samplerTool()); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { e.Close() })
			srv := server.New(e, server.Options{})
			ts := httptest.NewServer(srv.Handler(server.HTTPOptions{}))
			t.Cleanup(func() { ts.Close(); srv.Close() })
			url := ts.URL + server.Path
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()

			resp := post25(ctx, t, url, "", map[string]any{"jsonrpc": "2.0", "id": 1, "method": "initialize",
				"params": map[string]any{"protocolVersion": "2025-03-26", "capabilities": map[string]any{"sampling": map[string]any{}},
					"clientInfo": map[string]any{"name": "old", "version": "1"}}})
			sid := resp.Header.Get("Mcp-Session-Id")
			init := next(ctx, t, "initialize", events(resp))
			if !strings.Contains(string(init["result"]), `"2025-03-26"`) || sid == "" {
				t.Fatalf("initialize: %s (session %q)", init["result"], sid)
			}
			post25(ctx, t, url, sid, map[string]any{"jsonrpc": "2.0", "method": "notifications/initialized"}).Body.Close()
			open := func() string {
				resp := post25(ctx, t, url, "", map[string]any{"jsonrpc": "2.0", "id": 1, "method": "initialize",
					"params": map[string]any{"protocolVersion": "2025-03-26", "capabilities": map[string]any{"sampling": map[string]any{}},
						"clientInfo": map[string]any{"name": "other", "version": "1"}}})
				resp.Body.Close()
				other := resp.Header.Get("Mcp-Session-Id")
				post25(ctx, t, url, other, map[string]any{"jsonrpc": "2.0", "method": "notifications/initialized"}).Body.Close()
				return other
			}

			call := events(post25(ctx, t, url, sid, map[string]any{"jsonrpc": "2.0", "id": 2, "method": "tools/call",
				"params": map[string]any{"name": "sampler", "arguments": map[string]any{}}}))
			ask := next(ctx, t, "the sampling request", call)
			if m := string(ask["method"]); m != `"sampling/createMessage"` {
				t.Fatalf("the call sent %s first, want a sampling request", m)
			}
			if with == "cancelled in a batch" {
				post25(ctx, t, url, sid, []any{map[string]any{"jsonrpc": "2.0", "method": "notifications/cancelled",
					"params": map[string]any{"requestId": 2, "reason": "enough"}}}).Body.Close()
				start := time.Now()
				for {
					select {
					case m, ok := <-call:
						if ok && m["result"] == nil && m["error"] == nil {
							continue
						}
						if ok && !strings.Contains(string(m["result"]), `"cancelled"`) {
							t.Fatalf("the call cancelled in a batch answered %s %s", m["result"], m["error"])
						}
						// Ended as a cancelled call, long before its 8 s
						// timeout.
						if d := time.Since(start); d > 4*time.Second {
							t.Errorf("the call ended %s after its cancellation", d)
						}
						return
					case <-ctx.Done():
						t.Fatal("the call cancelled in a batch did not end")
					}
				}
			}
			if with == "after another session's" {
				forged := sampled(ask["id"])
				forged["result"].(map[string]any)["content"] = map[string]any{"type": "text", "text": "forged"}
				// The SDK accepts a response it was not waiting for, and drops it.
				post25(ctx, t, url, open(), []any{forged}).Body.Close()
			}
			batch := []any{sampled(ask["id"])}
			if with == "with a ping" {
				batch = append(batch, map[string]any{"jsonrpc": "2.0", "id": 3, "method": "ping"})
			}
			resp = post25(ctx, t, url, sid, batch)
			if with != "with a ping" {
				if resp.StatusCode != http.StatusAccepted {
					t.Errorf("a batch of one answer: %s, want 202", resp.Status)
				}
				resp.Body.Close()
			} else {
				pong := next(ctx, t, "the answer to the batch's ping", events(resp))
				if string(pong["id"]) != "3" || pong["result"] == nil {
					t.Errorf("the batch's ping was answered %v", pong)
				}
			}
			res := next(ctx, t, "the call's answer (it did not take the batched answer)", call)
			if !strings.Contains(string(res["result"]), "model said forty-two") {
				t.Fatalf("the call's answer: %s %s", res["result"], res["error"])
			}
		})
	}
}

// TestBatchedAnswerStdio: the same over standard input and output, where
// the SDK itself sends the request and reads the batch.
func TestBatchedAnswerStdio(t *testing.T) {
	e := lathe.New(lathe.Options{Timeout: 8 * time.Second})
	if err := e.Register(samplerTool()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	srv := server.New(e, server.Options{})
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	served := make(chan error, 1)
	go func() {
		served <- srv.ServeStdio(ctx, inR, outW)
		outW.Close()
	}()
	defer func() {
		inW.Close()
		select {
		case <-served:
		case <-time.After(5 * time.Second):
			t.Error("ServeStdio did not end within 5s of its input")
		}
	}()
	lines := make(chan map[string]json.RawMessage, 16)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(outR)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			var m map[string]json.RawMessage
			if json.Unmarshal(sc.Bytes(), &m) == nil {
				lines <- m
				continue
			}
			// A batch's answers come as a batch.
			var many []map[string]json.RawMessage
			if json.Unmarshal(sc.Bytes(), &many) == nil {
				for _, m := range many {
					lines <- m
				}
			}
		}
	}()
	write := func(v any) {
		b, _ := json.Marshal(v)
		if _, err := inW.Write(append(b, '\n')); err != nil {
			t.Fatal(err)
		}
	}
	write(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "initialize",
		"params": map[string]any{"protocolVersion": "2025-03-26", "capabilities": map[string]any{"sampling": map[string]any{}},
			"clientInfo": map[string]any{"name": "old", "version": "1"}}})
	if init := next(ctx, t, "initialize", lines); !strings.Contains(string(init["result"]), `"2025-03-26"`) {
		t.Fatalf("initialize: %s", init["result"])
	}
	write(map[string]any{"jsonrpc": "2.0", "method": "notifications/initialized"})
	write(map[string]any{"jsonrpc": "2.0", "id": 2, "method": "tools/call",
		"params": map[string]any{"name": "sampler", "arguments": map[string]any{}}})
	ask := next(ctx, t, "the sampling request", lines)
	if m := string(ask["method"]); m != `"sampling/createMessage"` {
		t.Fatalf("the call sent %s first, want a sampling request", m)
	}
	write([]any{sampled(ask["id"]), map[string]any{"jsonrpc": "2.0", "id": 3, "method": "ping"}})
	got := map[string]string{}
	for len(got) < 2 {
		m := next(ctx, t, fmt.Sprintf("the call's answer and the ping's (so far %v)", got), lines)
		got[string(m["id"])] = string(m["result"])
	}
	if !strings.Contains(got["2"], "model said forty-two") || got["3"] == "" {
		t.Fatalf("answers: %v", got)
	}
}
