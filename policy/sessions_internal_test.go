package policy

import (
	"context"
	"encoding/json"
	"strconv"
	"testing"
	"time"

	"github.com/lathe-tools/lathe"
	"github.com/lathe-tools/lathe/runtime/builtin"
	"github.com/lathe-tools/lathe/tool"
)

// TestSessionApprovalsEndWithTheirSession: a client that reconnects again
// and again, answering "allow for the session" each time, must not make
// the policy's memory grow for as long as the server lives: a session's
// approvals are dropped when the session ends.
func TestSessionApprovalsEndWithTheirSession(t *testing.T) {
	approver := ApproverFunc(func(context.Context, *Request) (Answer, error) { return Answer{Verdict: AllowSession}, nil })
	mw, sessions := middleware(&Policy{}, Options{Approver: approver})
	e := lathe.New(lathe.Options{Middleware: []lathe.Middleware{mw}})
	t.Cleanup(func() { e.Close() })
	e.Register(builtin.Must(builtin.Func(tool.Definition{Name: "wipe", Annotations: tool.Annotations{DestructiveHint: tool.Bool(true)}},
		func(context.Context, struct{}) (string, error) { return "wiped", nil })))

	const clients = 50
	var ends []chan struct{}
	for i := range clients {
		end := make(chan struct{})
		ends = append(ends, end)
		ctx := lathe.WithSessionEnd(lathe.WithSession(context.Background(), "s"+strconv.Itoa(i)), end)
		if out := e.Call(ctx, &tool.Call{Name: "wipe", Arguments: json.RawMessage(`{}`)}); out.Result.IsError {
			t.Fatalf("client %d: %s", i, out.Result.Text())
		}
	}
	if n := sessions.len(); n != clients {
		t.Fatalf("%d sessions hold approvals, want %d", n, clients)
	}
	for _, end := range ends {
		close(end)
	}
	deadline := time.Now().Add(10 * time.Second)
	for sessions.len() != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("10s after every session ended, %d still hold approvals", sessions.len())
		}
		time.Sleep(5 * time.Millisecond)
	}

	// A session that ended before its approval came keeps nothing.
	ctx := lathe.WithSessionEnd(lathe.WithSession(context.Background(), "late"), ends[0])
	e.Call(ctx, &tool.Call{Name: "wipe", Arguments: json.RawMessage(`{}`)})
	if n := sessions.len(); n != 0 {
		t.Fatalf("a session that had ended was kept (%d sessions)", n)
	}
}
