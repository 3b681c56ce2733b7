package server_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/lathe-tools/lathe"
	"github.com/lathe-tools/lathe/runtime/builtin"
	"github.com/lathe-tools/lathe/server"
	"github.com/lathe-tools/lathe/tool"
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

// askerTool elicits in the middle of its run, as an upstream server's tool
// does, and ends when it is answered or its call is cancelled.
func askerTool() tool.Tool {
	return builtin.Must(builtin.Func(tool.Definition{Name: "hold", Summary: "Ask, and wait for the answer."},
		func(ctx context.Context, _ struct{}) (string, error) {
			h := tool.HooksFrom(ctx)
			if h.Elicit == nil {
				return "", errors.New("no elicitation")
			}
			res, err := h.Elicit(ctx, &tool.ElicitRequest{Message: "go on?",
				Schema: json.RawMessage(`{"type":"object","properties":{}}`)})
			if err != nil {
				return "", err
			}
			return res.Action, nil
		}))
}

// callOutcomes follows the ends of e's calls: it returns a function that
// waits for n calls to end, within limit, and reports how they ended.
func callOutcomes(t *testing.T, e *lathe.Engine) func(n int, limit time.Duration) map[string]int {
	finished := make(chan string, 4096)
	unsub := e.Subscribe(func(ev lathe.Event) { finished <- ev.Outcome }, lathe.EventCallFinished)
	t.Cleanup(unsub)
	return func(n int, limit time.Duration) map[string]int {
		t.Helper()
		deadline := time.After(limit)
		got := map[string]int{}
		for ; n > 0; n-- {
			select {
			case o := <-finished:
				got[o]++
			case <-deadline:
				t.Fatalf("only %v of the calls ended within %s, %d more still run", got, limit, n)
			}
		}
		return got
	}
}

// TestRoundsBounded is the attack of a client of MCP 2026-07-28 over
// streamable HTTP that opens calls which ask it something and never comes
// back for their next round: each would hold a goroutine and its call
// until the call's deadline. Past its own bound its calls are refused with
// an error that names the bound, another client is still served, and a
// client that declares ever new names is stopped by the bound of all
// clients. Closing the server ends every waiting call, its record complete.
func TestRoundsBounded(t *testing.T) {
	e := newEngine(t, askerTool())
	ended := callOutcomes(t, e)
	const perClient, total = 8, 20
	// Long enough that no call is given up while the test counts.
	srv := server.New(e, server.Options{Rounds: server.RoundOptions{Wait: time.Minute, MaxPerClient: perClient, MaxWaiting: total}})
	ts := httptest.NewServer(srv.Handler(server.HTTPOptions{}))
	t.Cleanup(func() { ts.Close(); srv.Close() })
	caps := map[string]any{"elicitation": map[string]any{}}
	before := runtime.NumGoroutine()
	// One client opens many calls, in parallel, and answers none.
	const calls = 500
	attacker := &client26{t: t, url: ts.URL + server.Path, caps: caps}
	var mu sync.Mutex
	outcomes := map[string]int{}
	var wg sync.WaitGroup
	sem := make(chan struct{}, 16)
	for i := range calls {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			_, msgs := attacker.call(i, "hold", map[string]any{}, nil)
			r := decode26(t, msgs[len(msgs)-1])
			key := r.Result.ResultType
			if r.Error != nil {
				key = r.Error.Message
				if r.Error.Code != -32050 || !strings.Contains(key, "at most 8 waiting") {
					t.Errorf("a call past the client's bound: %d %s", r.Error.Code, key)
				}
				key = "refused"
			}
			mu.Lock()
			outcomes[key]++
			mu.Unlock()
		}()
	}
	wg.Wait()
	if outcomes["input_required"] != perClient || outcomes["refused"] != calls-perClient {
		t.Fatalf("%d calls of one client that answers none: %v, want %d waiting and the rest refused", calls, outcomes, perClient)
	}
	if n := runtime.NumGoroutine() - before; n > 200 {
		t.Errorf("%d goroutines more than before the %d calls", n, calls)
	}

	// Another client is still served, and its call waits for it.
	other := &client26{t: t, url: ts.URL + server.Path, caps: caps}
	other.name = "other"
	_, msgs := other.call(1, "hold", map[string]any{}, nil)
	if r := decode26(t, msgs[len(msgs)-1]); r.Result.ResultType != "input_required" {
		t.Fatalf("another client's call while the first holds its bound: %s", msgs[len(msgs)-1])
	}

	// A client that declares a new name for each call meets the bound of
	// all clients.
	refused := 0
	for i := range 2 * total {
		c := &client26{t: t, url: ts.URL + server.Path, caps: caps, name: fmt.Sprintf("sybil-%d", i)}
		_, msgs := c.call(i, "hold", map[string]any{}, nil)
		if r := decode26(t, msgs[len(msgs)-1]); r.Error != nil {
			if !strings.Contains(r.Error.Message, "at most 20 (RoundOptions.MaxWaiting)") {
				t.Errorf("a call past the bound of all clients: %s", r.Error.Message)
			}
			refused++
		}
	}
	if refused != 2*total-(total-perClient-1) {
		t.Errorf("%d of %d calls under new names refused, want %d", refused, 2*total, 2*total-(total-perClient-1))
	}

	// Every call refused was cancelled, and closing the server ends every
	// waiting call, cancelled too: every record is complete.
	srv.Close()
	all := calls + 1 + 2*total
	if got := ended(all, 10*time.Second); got["cancelled"] != all {
		t.Errorf("the %d calls ended %v, want all cancelled", all, got)
	}
}

// TestRoundsAbandoned: a call whose client does not come back for its next
// round within RoundOptions.Wait is cancelled then, not at its deadline,
// its record complete, and its request state names nothing after.
func TestRoundsAbandoned(t *testing.T) {
	e := newEngine(t, askerTool()) // the calls' deadline is 20 s
	ended := callOutcomes(t, e)
	wait := time.Second
	srv := server.New(e, server.Options{Rounds: server.RoundOptions{Wait: wait}})
	ts := httptest.NewServer(srv.Handler(server.HTTPOptions{}))
	t.Cleanup(func() { ts.Close(); srv.Close() })
	c := &client26{t: t, url: ts.URL + server.Path, caps: map[string]any{"elicitation": map[string]any{}}}
	start := time.Now()
	var states []string
	for i := range 10 {
		_, msgs := c.call(i, "hold", map[string]any{}, nil)
		r := decode26(t, msgs[len(msgs)-1])
		if r.Result.ResultType != "input_required" {
			t.Fatalf("call %d: %s", i, msgs[len(msgs)-1])
		}
		states = append(states, r.Result.RequestState)
	}
	got := ended(10, wait+10*time.Second)
	if took := time.Since(start); got["cancelled"] != 10 || took < wait {
		t.Errorf("the abandoned calls ended %v after %s, want 10 cancelled after their wait of %s", got, took, wait)
	}
	_, msgs := c.call(11, "hold", map[string]any{}, map[string]any{"requestState": states[0],
		"inputResponses": map[string]any{"lathe-1": map[string]any{"action": "accept", "content": map[string]any{}}}})
	if r := decode26(t, msgs[len(msgs)-1]); r.Error == nil || !strings.Contains(r.Error.Message, "requestState") {
		t.Errorf("the state of an abandoned call, after its wait: %s", msgs[len(msgs)-1])
	}
}
