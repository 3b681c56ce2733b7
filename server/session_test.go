package server_test

import (
	"context"
	"runtime"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/lathe-tools/lathe"
	"github.com/lathe-tools/lathe/policy"
	"github.com/lathe-tools/lathe/server"
)

// A client's "allow for the session" must die with its session. Clients
// connect one after another; each answers "session" for a tool that asks,
// then leaves. The next client is a new session, and must be asked again:
// were sessions named by something a later session can share (the address
// of a freed session, which Go reuses), it would find the earlier client's
// approval and run the tool without anyone asking it.
func TestSessionApprovalDiesWithItsSession(t *testing.T) {
	e := lathe.New(lathe.Options{Middleware: []lathe.Middleware{policy.Middleware(&policy.Policy{}, policy.Options{})}})
	t.Cleanup(func() { e.Close() })
	if err := e.Register(testTools()...); err != nil {
		t.Fatal(err)
	}
	srv := server.New(e, server.Options{})
	t.Cleanup(func() { srv.Close() })
	sessions := map[string]bool{}
	cancel := e.Subscribe(func(ev lathe.Event) {
		if ev.Session == "" {
			t.Errorf("call %d of an MCP client carries no session", ev.Call)
		}
	}, lathe.EventCallStarted)
	defer cancel()

	for i := range 40 {
		asked := 0
		ct, st := sdk.NewInMemoryTransports()
		ss, err := srv.MCP().Connect(context.Background(), st, nil)
		if err != nil {
			t.Fatal(err)
		}
		cs, err := sdk.NewClient(&sdk.Implementation{Name: "test"}, &sdk.ClientOptions{
			ElicitationHandler: func(context.Context, *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
				asked++
				return &sdk.ElicitResult{Action: "accept", Content: map[string]any{"decision": "session"}}, nil
			},
		}).Connect(context.Background(), ct, nil)
		if err != nil {
			t.Fatal(err)
		}
		r := callTool(t, cs, "fail", map[string]any{})
		if !strings.Contains(text(r), "it broke") {
			t.Fatalf("client %d: %s", i, text(r))
		}
		if asked != 1 {
			t.Fatalf("client %d, a new session, was asked %d times, want once: it inherited an earlier session's approval", i, asked)
		}
		sessions[srvSessionOf(t, e, cs)] = true
		cs.Close()
		done := make(chan struct{})
		go func() { ss.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatalf("session %d did not end within 10s", i)
		}
		runtime.GC() // free the session, so that its memory may serve the next
	}
	if len(sessions) != 40 {
		t.Errorf("40 sessions were named %d ways", len(sessions))
	}
}

// srvSessionOf makes one more call on cs and returns the session the
// engine's events give it.
func srvSessionOf(t *testing.T, e *lathe.Engine, cs *sdk.ClientSession) string {
	t.Helper()
	got := make(chan string, 1)
	cancel := e.Subscribe(func(ev lathe.Event) {
		select {
		case got <- ev.Session:
		default:
		}
	}, lathe.EventCallStarted)
	defer cancel()
	callTool(t, cs, "weather", map[string]any{"city": "Oslo"})
	select {
	case s := <-got:
		return s
	case <-time.After(10 * time.Second):
		t.Fatal("no call_started event within 10s")
	}
	return ""
}
