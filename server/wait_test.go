package server_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/lathe-tools/lathe"
	"github.com/lathe-tools/lathe/policy"
	"github.com/lathe-tools/lathe/server"
	"github.com/lathe-tools/lathe/tool"
)

// waitingEngine is an engine behind a policy that asks the client about
// "fail" (it says nothing of its effects) and allows "confirm" (which asks
// a question) and "slow" (which runs until it is cancelled); it reports
// how each call finished on finished.
func waitingEngine(t *testing.T, timeout time.Duration) (*lathe.Engine, <-chan string) {
	t.Helper()
	e := lathe.New(lathe.Options{Timeout: timeout, Middleware: []lathe.Middleware{policy.Middleware(
		&policy.Policy{Rules: []policy.Rule{{Tool: "slow", Approval: policy.Allow}, {Tool: "confirm", Approval: policy.Allow}}},
		policy.Options{})}})
	t.Cleanup(func() { e.Close() })
	slow := tool.Tool{Definition: tool.Definition{Name: "slow", Summary: "Wait until cancelled."},
		Runtime: tool.RuntimeFunc(func(ctx context.Context, _ *tool.Definition, _ *tool.Call) (*tool.Outcome, error) {
			<-ctx.Done()
			return nil, ctx.Err()
		})}
	if err := e.Register(append(testTools(), slow)...); err != nil {
		t.Fatal(err)
	}
	finished := make(chan string, 16)
	stop := e.Subscribe(func(ev lathe.Event) { finished <- ev.Tool + " " + ev.Outcome }, lathe.EventCallFinished)
	t.Cleanup(stop)
	return e, finished
}

// silentClient connects over HTTP a client whose person never answers:
// its elicitation handler reports that it was asked and waits until the
// test ends.
func silentClient(t *testing.T, url string) (*sdk.ClientSession, <-chan struct{}) {
	t.Helper()
	asked := make(chan struct{}, 4)
	release := make(chan struct{})
	c := sdk.NewClient(&sdk.Implementation{Name: "silent"}, &sdk.ClientOptions{
		ElicitationHandler: func(ctx context.Context, _ *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
			asked <- struct{}{}
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-release:
				return &sdk.ElicitResult{Action: "cancel"}, nil
			}
		},
	})
	// A session of 2025-11-25, asked while its call runs: a client of
	// 2026-07-28 over HTTP has no session, and is asked between rounds.
	cs, err := c.Connect(context.Background(), &sdk.StreamableClientTransport{Endpoint: url, MaxRetries: -1,
		HTTPClient: &http.Client{Transport: bearerRT("t")}}, &sdk.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		close(release)
		bounded(t, "closing the client", func() { cs.Close() })
	})
	return cs, asked
}

// closeBounded closes srv, and reports a Close that hangs rather than
// hanging the test with it.
func closeBounded(t *testing.T, srv *server.Server) {
	bounded(t, "Server.Close", func() { srv.Close() })
}

// bounded runs f, for a cleanup, and reports an f that does not return
// within 10s (what names it) rather than hanging the test with it.
func bounded(t *testing.T, what string, f func()) {
	done := make(chan struct{})
	go func() { f(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Errorf("%s did not return within 10s", what)
	}
}

type bearerRT string

func (b bearerRT) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+string(b))
	return http.DefaultTransport.RoundTrip(r)
}

// within fails the test unless f returns within d; what names what hung.
func within(t *testing.T, d time.Duration, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); f() }()
	select {
	case <-done:
	case <-time.After(d):
		t.Fatalf("%s did not return within %s", what, d)
	}
}

func outcome(t *testing.T, finished <-chan string, what string) string {
	t.Helper()
	select {
	case o := <-finished:
		return o
	case <-time.After(10 * time.Second):
		t.Fatalf("%s: no call finished within 10s", what)
	}
	return ""
}

// TestUnansweredApprovalEndsWithTheCall: a client whose person never
// answers an approval holds its call no longer than the call's timeout.
func TestUnansweredApprovalEndsWithTheCall(t *testing.T) {
	e, finished := waitingEngine(t, 300*time.Millisecond)
	srv := server.New(e, server.Options{})
	ts := httptest.NewServer(srv.Handler(server.HTTPOptions{Token: "t"}))
	t.Cleanup(func() { within(t, 10*time.Second, "closing the test server", ts.Close) })
	t.Cleanup(func() { closeBounded(t, srv) })
	cs, asked := silentClient(t, ts.URL+server.Path)
	var r *sdk.CallToolResult
	within(t, 10*time.Second, "a call whose approval nobody answers (timeout 300ms)", func() {
		r, _ = cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "fail", Arguments: map[string]any{}})
	})
	select {
	case <-asked:
	default:
		t.Fatal("the client was never asked")
	}
	if r == nil || !r.IsError || r.Meta["lathe/errorKind"] != "timeout" {
		t.Errorf("want a timeout result, got %+v", r)
	}
	if o := outcome(t, finished, "fail"); o != "fail timeout" {
		t.Errorf("call finished as %q, want fail timeout", o)
	}
}

// TestClosingASessionEndsItsCalls: a client that closes its session
// (DELETE) while a call waits for its approval, or while a tool runs, is
// answered at once, and its calls end cancelled; so are those of every
// session when the server closes.
func TestClosingASessionEndsItsCalls(t *testing.T) {
	for _, c := range []struct{ name, tool string }{{"pending approval", "fail"}, {"long call", "slow"}} {
		t.Run(c.name, func(t *testing.T) {
			e, finished := waitingEngine(t, time.Hour)
			srv := server.New(e, server.Options{})
			ts := httptest.NewServer(srv.Handler(server.HTTPOptions{Token: "t"}))
			t.Cleanup(func() { within(t, 10*time.Second, "closing the test server", ts.Close) })
			t.Cleanup(func() { closeBounded(t, srv) })

			// One client closes its session.
			cs, asked := silentClient(t, ts.URL+server.Path)
			started, unsub := callStarted(e)
			go cs.CallTool(context.Background(), &sdk.CallToolParams{Name: c.tool, Arguments: map[string]any{}})
			waitCall(t, c.tool, started, asked)
			unsub()
			req, _ := http.NewRequest(http.MethodDelete, ts.URL+server.Path, nil)
			req.Header.Set("Authorization", "Bearer t")
			req.Header.Set("Mcp-Session-Id", cs.ID())
			within(t, 10*time.Second, "DELETE of a session with a "+c.name, func() {
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Errorf("DELETE: %v", err)
					return
				}
				resp.Body.Close()
			})
			if o := outcome(t, finished, c.tool); o != c.tool+" cancelled" {
				t.Errorf("after DELETE the call finished as %q, want %s cancelled", o, c.tool)
			}

			// Another client's call ends as the server closes.
			cs2, asked2 := silentClient(t, ts.URL+server.Path)
			started, unsub = callStarted(e)
			go cs2.CallTool(context.Background(), &sdk.CallToolParams{Name: c.tool, Arguments: map[string]any{}})
			waitCall(t, c.tool, started, asked2)
			unsub()
			within(t, 10*time.Second, "Server.Close with a "+c.name, func() { srv.Close() })
			if o := outcome(t, finished, c.tool); o != c.tool+" cancelled" {
				t.Errorf("after Close the call finished as %q, want %s cancelled", o, c.tool)
			}
		})
	}
}

// callStarted returns a channel closed at the next call's start.
func callStarted(e *lathe.Engine) (<-chan struct{}, func()) {
	started := make(chan struct{})
	var once sync.Once
	unsub := e.Subscribe(func(lathe.Event) { once.Do(func() { close(started) }) }, lathe.EventCallStarted)
	return started, unsub
}

// waitCall waits until a call of name is under way: asked for its approval
// ("fail"), or started ("slow", which the policy allows).
func waitCall(t *testing.T, name string, started, asked <-chan struct{}) {
	t.Helper()
	wait := asked
	if name == "slow" {
		wait = started
	}
	select {
	case <-wait:
	case <-time.After(10 * time.Second):
		t.Fatalf("the call of %s was not under way within 10s", name)
	}
}

// TestUnansweredQuestionEndsWithTheCall: a tool's question put to a client
// whose person never answers holds the call no longer than the tool's
// timeout.
func TestUnansweredQuestionEndsWithTheCall(t *testing.T) {
	e, _ := waitingEngine(t, 300*time.Millisecond)
	srv := server.New(e, server.Options{})
	ts := httptest.NewServer(srv.Handler(server.HTTPOptions{Token: "t"}))
	t.Cleanup(func() { within(t, 10*time.Second, "closing the test server", ts.Close) })
	t.Cleanup(func() { closeBounded(t, srv) })
	cs, asked := silentClient(t, ts.URL+server.Path)
	var r *sdk.CallToolResult
	within(t, 10*time.Second, "a call whose question nobody answers (timeout 300ms)", func() {
		r, _ = cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "confirm", Arguments: map[string]any{}})
	})
	if len(asked) == 0 {
		t.Fatal("the client was never asked")
	}
	if r == nil || !r.IsError || r.Meta["lathe/errorKind"] != "timeout" || !strings.Contains(text(r), "Go on?") {
		t.Errorf("want a timeout result naming the question, got %+v", r)
	}
}

// TestClosedInputEndsItsCalls: over stdio, a client whose connection goes
// (its end of the pipe closed) while its call waits for an approval nobody
// will give ends the call, and ServeStdio returns.
func TestClosedInputEndsItsCalls(t *testing.T) {
	e, finished := waitingEngine(t, time.Hour)
	srv := server.New(e, server.Options{})
	t.Cleanup(func() { closeBounded(t, srv) })
	cin, sout := io.Pipe()
	sin, cout := io.Pipe()
	served := make(chan error, 1)
	go func() { served <- srv.ServeStdio(context.Background(), sin, sout) }()
	asked := make(chan struct{}, 1)
	release := make(chan struct{})
	defer close(release)
	c := sdk.NewClient(&sdk.Implementation{Name: "leaving"}, &sdk.ClientOptions{
		ElicitationHandler: func(ctx context.Context, _ *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
			asked <- struct{}{}
			select {
			case <-ctx.Done():
			case <-release:
			}
			return nil, errors.New("gone")
		},
	})
	cs, err := c.Connect(context.Background(), &sdk.IOTransport{Reader: cin, Writer: cout}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { bounded(t, "closing the client", func() { cs.Close() }) })
	go cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "fail", Arguments: map[string]any{}})
	select {
	case <-asked:
	case <-time.After(10 * time.Second):
		t.Fatal("the approval was not asked within 10s")
	}
	// The client's connection goes: lathe's input ends.
	cout.Close()
	select {
	case <-served:
	case <-time.After(10 * time.Second):
		t.Fatal("ServeStdio did not return within 10s of its input's end, with a call waiting for an approval")
	}
	if o := outcome(t, finished, "fail"); o != "fail cancelled" {
		t.Errorf("the call finished as %q, want fail cancelled", o)
	}
	sout.Close()
}
