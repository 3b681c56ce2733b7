package server_test

import (
	"context"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/lathe-tools/lathe"
	"github.com/lathe-tools/lathe/server"
)

// manualClient connects a client of MCP 2026-07-28 to srv in memory that
// does its rounds by hand: a call's input requests come back to the test.
func manualClient(t *testing.T, srv *server.Server) *sdk.ClientSession {
	t.Helper()
	cs := connectVersion(t, srv, "", "2026-07-28", &sdk.ClientOptions{
		// Offered, so that the server asks; never called, as the rounds
		// are done by hand.
		ElicitationHandler: func(context.Context, *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
			t.Error("the client's elicitation handler was called")
			return nil, nil
		},
		MultiRoundTrip: &sdk.MultiRoundTripOptions{Disabled: true},
	})
	if v := cs.InitializeResult().ProtocolVersion; v != "2026-07-28" {
		t.Fatalf("the client was answered with %q, want 2026-07-28", v)
	}
	return cs
}

func callRaw(t *testing.T, cs *sdk.ClientSession, p *sdk.CallToolParams) (*sdk.CallToolResult, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	return cs.CallTool(ctx, p)
}

// TestRoundsBelongToTheirSession is the attack of a second client that
// learnt (or guessed) the request state of another client's call waiting
// for its answer: it must not answer the question for it, and the call
// must go on waiting for its own client, whose answer decides it.
func TestRoundsBelongToTheirSession(t *testing.T) {
	srv := server.New(newEngine(t, testTools()...), server.Options{})
	defer srv.Close()
	victim, attacker := manualClient(t, srv), manualClient(t, srv)

	first, err := callRaw(t, victim, &sdk.CallToolParams{Name: "confirm", Arguments: map[string]any{}})
	if err != nil {
		t.Fatal(err)
	}
	if first.RequestState == "" || len(first.InputRequests) != 1 {
		t.Fatalf("the call did not come back with its question: %+v", first)
	}
	var id string
	for k := range first.InputRequests {
		id = k
	}
	// The attacker answers "no" with the victim's state.
	_, err = callRaw(t, attacker, &sdk.CallToolParams{Name: "confirm", Arguments: map[string]any{},
		RequestState: first.RequestState,
		InputResponses: sdk.InputResponseMap{id: &sdk.ElicitResult{Action: "accept",
			Content: map[string]any{"answer": false}}}})
	if err == nil || !strings.Contains(err.Error(), "requestState") {
		t.Fatalf("another session's call accepted the state: %v", err)
	}
	// The victim's own answer still decides its call.
	res, err := callRaw(t, victim, &sdk.CallToolParams{Name: "confirm", Arguments: map[string]any{},
		RequestState: first.RequestState,
		InputResponses: sdk.InputResponseMap{id: &sdk.ElicitResult{Action: "accept",
			Content: map[string]any{"answer": true}}}})
	if err != nil {
		t.Fatal(err)
	}
	if res.IsError || text(res) != "went on" {
		t.Fatalf("the victim's call, answered yes: %s", text(res))
	}
	// A state is good for one round only.
	if _, err := callRaw(t, victim, &sdk.CallToolParams{Name: "confirm", Arguments: map[string]any{},
		RequestState: first.RequestState}); err == nil {
		t.Fatal("a used request state was accepted again")
	}
}

// TestRoundsEndWithTheCall: a client that never comes back for its
// call's next round does not keep the call: it ends with its deadline,
// and its state names nothing after that.
func TestRoundsEndWithTheCall(t *testing.T) {
	e := lathe.New(lathe.Options{Timeout: 300 * time.Millisecond})
	t.Cleanup(func() { e.Close() })
	openUpstream(t, e)
	srv := server.New(e, server.Options{})
	defer srv.Close()
	cs := manualClient(t, srv)
	first, err := callRaw(t, cs, &sdk.CallToolParams{Name: "ask", Arguments: map[string]any{}})
	if err != nil {
		t.Fatal(err)
	}
	if first.RequestState == "" {
		t.Fatalf("the call did not come back with its question: %+v", first)
	}
	// Well past the deadline; coming back earlier would answer the call.
	time.Sleep(2 * time.Second)
	_, err = callRaw(t, cs, &sdk.CallToolParams{Name: "ask", Arguments: map[string]any{},
		RequestState: first.RequestState, InputResponses: sdk.InputResponseMap{}})
	if err == nil || !strings.Contains(err.Error(), "requestState") {
		t.Fatalf("the call still waits for its client 2s after its deadline of 300ms: %v", err)
	}
}
