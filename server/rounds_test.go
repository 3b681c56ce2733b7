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

// TestRoundsBounded is the attack of a client of MCP 2026-07-28 over
// streamable HTTP that opens calls which ask it something and never comes
// back for their next round: each would hold a goroutine and its call
// until the call's deadline. Past its own bound its calls are refused with
// an error that names the bound, another client is still served, a client
// that declares ever new names is stopped by the bound of all clients, and
// every abandoned call is cancelled once its wait is over, its record
// complete.
func TestRoundsBounded(t *testing.T) {
	e := newEngine(t, askerTool())
	finished := make(chan string, 4096)
	started := make(chan struct{}, 4096)
	unsub := e.Subscribe(func(ev lathe.Event) {
		switch ev.Kind {
		case lathe.EventCallStarted:
			started <- struct{}{}
		case lathe.EventCallFinished:
			finished <- ev.Outcome
		}
	}, lathe.EventCallStarted, lathe.EventCallFinished)
	defer unsub()
	const perClient, total = 8, 20
	wait := 6 * time.Second
	srv := server.New(e, server.Options{Rounds: server.RoundOptions{Wait: wait, MaxPerClient: perClient, MaxWaiting: total}})
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

	// Every call started ends, those abandoned cancelled after their wait:
	// none waits for its deadline (20s), and every record is complete.
	deadline := time.After(wait + 10*time.Second)
	got := map[string]int{}
	for n := len(started); n > 0; n-- {
		select {
		case o := <-finished:
			got[o]++
		case <-deadline:
			t.Fatalf("only %v of %d calls ended within %s; the abandoned ones still wait", got, len(started), wait+10*time.Second)
		}
	}
	if got["cancelled"] != len(started)-got["ok"] || got["cancelled"] < total {
		t.Errorf("the calls ended %v; want every abandoned one cancelled", got)
	}
}
