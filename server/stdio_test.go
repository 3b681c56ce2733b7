package server_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/lathe-tools/lathe/server"
)

// rpcReply is a JSON-RPC response as it arrives on standard output.
type rpcReply struct {
	ID     json.RawMessage `json:"id"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// Lines on standard input that hold no JSON-RPC message get a JSON-RPC
// error each, and the session goes on: the requests after them are served.
func TestServeStdioAnswersGarbage(t *testing.T) {
	srv := server.New(newEngine(t, testTools()...), server.Options{Name: "lathe"})
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- srv.ServeStdio(ctx, inR, outW)
		outW.Close()
	}()
	replies := make(chan rpcReply)
	go func() {
		sc := bufio.NewScanner(outR)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			var r rpcReply
			if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
				t.Errorf("stdout holds a line that is not JSON: %q", sc.Text())
				continue
			}
			replies <- r
		}
		close(replies)
	}()
	send := func(line string) {
		t.Helper()
		if _, err := io.WriteString(inW, line+"\n"); err != nil {
			t.Fatalf("writing %q: %v", line, err)
		}
	}
	next := func(what string) rpcReply {
		t.Helper()
		select {
		case r, ok := <-replies:
			if !ok {
				t.Fatalf("the server closed standard output before answering %s (it exited: %v)", what, <-done)
			}
			return r
		case <-ctx.Done():
			t.Fatalf("no answer to %s", what)
		}
		return rpcReply{}
	}
	expectError := func(line string, code int, id string) {
		t.Helper()
		send(line)
		r := next(line)
		if r.Error == nil || r.Error.Code != code || string(r.ID) != id {
			t.Errorf("%s: got id %s, error %+v; want id %s and code %d", line, r.ID, r.Error, id, code)
		}
	}

	expectError("garbage", -32700, "null")
	expectError(`{"jsonrpc":"2.0","id":1,"method":"initialize"`, -32700, "null")
	expectError(`{"jsonrpc":"1.0","id":3,"method":"tools/list"}`, -32600, "3")
	expectError(`{"jsonrpc":"2.0","id":{"x":1},"method":"tools/list"}`, -32600, "null")
	expectError(`42`, -32600, "null")
	expectError(`[]`, -32600, "null")
	expectError(`[{"x":1}]`, -32600, "null")
	send("") // a blank line is no message and gets no answer

	send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	if r := next("initialize"); r.Error != nil || string(r.ID) != "1" || !strings.Contains(string(r.Result), `"serverInfo"`) {
		t.Fatalf("initialize after garbage: id %s, result %s, error %+v", r.ID, r.Result, r.Error)
	}
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	expectError("\x1b[2J more garbage", -32700, "null")
	send(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
	if r := next("tools/list"); r.Error != nil || string(r.ID) != "2" || !strings.Contains(string(r.Result), `"weather"`) {
		t.Fatalf("tools/list after garbage: id %s, result %.200s, error %+v", r.ID, r.Result, r.Error)
	}

	inW.Close()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("ServeStdio after standard input ended: %v", err)
		}
	case <-ctx.Done():
		t.Fatal("ServeStdio did not return after standard input ended")
	}
}
