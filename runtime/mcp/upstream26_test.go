package mcp_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/lathe-tools/lathe"
	"github.com/lathe-tools/lathe/runtime/builtin"
	"github.com/lathe-tools/lathe/runtime/mcp"
	"github.com/lathe-tools/lathe/server"
	"github.com/lathe-tools/lathe/tool"
)

// upstream26 is a go-sdk server over streamable HTTP as go-sdk serves MCP
// 2026-07-28: without sessions (a client that asks for 2025-11-25 gets
// it, but then no request of the server's can reach it), a call's handler
// cancelled when its request closes. Its tools ask their client the only
// way that version lets a server ask during a call: by answering the call
// with input requests, which the client's next round answers (an
// elicitation in "ask", a sampling request in "sample", both in "both");
// "tell" reports progress and logs a message. Its tool "block" says on
// blocking that it runs, waits until its call is cancelled, and then says
// so on cancelled.
type upstream26 struct {
	url       string
	versions  chan string // the version of each call's session
	blocking  chan string
	cancelled chan string
}

func newUpstream26(t *testing.T) *upstream26 {
	t.Helper()
	u := &upstream26{versions: make(chan string, 64), blocking: make(chan string, 4), cancelled: make(chan string, 4)}
	srv := sdk.NewServer(&sdk.Implementation{Name: "up26", Version: "1"}, nil)
	note := func(req *sdk.CallToolRequest) {
		v := "none"
		if ip := req.Session.InitializeParams(); ip != nil {
			v = ip.ProtocolVersion
		}
		select {
		case u.versions <- v:
		default:
		}
	}
	text := func(s string) *sdk.CallToolResult {
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: s}}}
	}
	type in struct {
		Who string `json:"who"`
	}
	elicit := func(who string) *sdk.ElicitParams {
		return &sdk.ElicitParams{Message: "Who asks about the secret of " + who + "?",
			RequestedSchema: json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"}}}`)}
	}
	sample := func(who string) *sdk.CreateMessageParams {
		return &sdk.CreateMessageParams{MaxTokens: 10, Messages: []*sdk.SamplingMessage{{Role: "user",
			Content: &sdk.TextContent{Text: "summarize the secret of " + who}}}}
	}
	answer := func(r any) string {
		switch r := r.(type) {
		case *sdk.ElicitResult:
			return fmt.Sprintf("%s %v", r.Action, r.Content["name"])
		case *sdk.CreateMessageResult:
			return "model " + r.Model
		case *sdk.CreateMessageWithToolsResult:
			return "model " + r.Model
		}
		return fmt.Sprintf("no answer (%T)", r)
	}
	sdk.AddTool(srv, &sdk.Tool{Name: "ask"}, func(ctx context.Context, req *sdk.CallToolRequest, a in) (*sdk.CallToolResult, any, error) {
		note(req)
		r, ok := req.Params.InputResponses["name"]
		if !ok {
			return &sdk.CallToolResult{InputRequests: sdk.InputRequestMap{"name": elicit(a.Who)}}, nil, nil
		}
		return text("secret of " + a.Who + ": " + answer(r)), nil, nil
	})
	sdk.AddTool(srv, &sdk.Tool{Name: "sample"}, func(ctx context.Context, req *sdk.CallToolRequest, a in) (*sdk.CallToolResult, any, error) {
		note(req)
		r, ok := req.Params.InputResponses["model"]
		if !ok {
			return &sdk.CallToolResult{InputRequests: sdk.InputRequestMap{"model": sample(a.Who)}}, nil, nil
		}
		return text("secret of " + a.Who + ": " + answer(r)), nil, nil
	})
	sdk.AddTool(srv, &sdk.Tool{Name: "both"}, func(ctx context.Context, req *sdk.CallToolRequest, a in) (*sdk.CallToolResult, any, error) {
		note(req)
		name, ok1 := req.Params.InputResponses["name"]
		model, ok2 := req.Params.InputResponses["model"]
		if !ok1 || !ok2 {
			return &sdk.CallToolResult{InputRequests: sdk.InputRequestMap{"name": elicit(a.Who), "model": sample(a.Who)}}, nil, nil
		}
		return text("secret of " + a.Who + ": " + answer(name) + ", " + answer(model)), nil, nil
	})
	sdk.AddTool(srv, &sdk.Tool{Name: "tell"}, func(ctx context.Context, req *sdk.CallToolRequest, a in) (*sdk.CallToolResult, any, error) {
		note(req)
		if tok := req.Params.GetProgressToken(); tok != nil {
			req.Session.NotifyProgress(ctx, &sdk.ProgressNotificationParams{ProgressToken: tok, Progress: 1, Message: "working for " + a.Who})
		}
		req.Session.Log(ctx, &sdk.LoggingMessageParams{Level: "info", Data: "log about " + a.Who})
		return text("told " + a.Who), nil, nil
	})
	sdk.AddTool(srv, &sdk.Tool{Name: "block"}, func(ctx context.Context, req *sdk.CallToolRequest, a in) (*sdk.CallToolResult, any, error) {
		note(req)
		u.blocking <- a.Who
		select {
		case <-ctx.Done():
			u.cancelled <- a.Who
			return nil, nil, ctx.Err()
		case <-time.After(20 * time.Second):
			return text("never cancelled"), nil, nil
		}
	})
	ts := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv },
		&sdk.StreamableHTTPOptions{Stateless: true, PropagateRequestCancellation: true}))
	t.Cleanup(ts.Close)
	u.url = ts.URL
	return u
}

// TestUpstream2026HTTP: an upstream that serves MCP 2026-07-28 over
// streamable HTTP, as go-sdk does, asks during a call by answering it with
// input requests (elicitation, sampling, both at once), and a lathe
// server upstream asks inside a task (input_required). Through lathe serve,
// each question reaches the client whose call it is, a client of
// 2025-11-25 (asked during its call) as well as one of 2026-07-28 (asked
// by rounds of its own), and the answers reach the upstream; a client
// that cancels its call has the upstream's call cancelled.
func TestUpstream2026HTTP(t *testing.T) {
	u := newUpstream26(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	taskURL, taskMethods := taskUpstream26(t)
	// The upstream's log level is configured: a client of 2026-07-28
	// names a level in each request's _meta, which reaches lathe's face
	// but not the level lathe asks of its upstreams.
	e, pool := open(t, mcp.Options{}, mcp.Config{Name: "up", URL: u.url, LogLevel: "info"}, mcp.Config{Name: "tk", URL: taskURL})
	ts := serveFace(t, e, pool)

	for _, version := range []string{"2025-11-25", "2026-07-28"} {
		t.Run(version, func(t *testing.T) {
			var mu sync.Mutex
			var shown []string
			show := func(s string) {
				mu.Lock()
				shown = append(shown, s)
				mu.Unlock()
			}
			c := sdk.NewClient(&sdk.Implementation{Name: "client-" + version}, &sdk.ClientOptions{
				ElicitationHandler: func(_ context.Context, r *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
					show(r.Params.Message)
					return &sdk.ElicitResult{Action: "accept", Content: map[string]any{"name": "person-" + version, "answer": true}}, nil
				},
				ProgressNotificationHandler: func(_ context.Context, r *sdk.ProgressNotificationClientRequest) {
					show(r.Params.Message)
				},
				LoggingMessageHandler: func(_ context.Context, r *sdk.LoggingMessageRequest) {
					show(fmt.Sprint(r.Params.Data))
				},
				CreateMessageHandler: func(_ context.Context, r *sdk.CreateMessageRequest) (*sdk.CreateMessageResult, error) {
					for _, m := range r.Params.Messages {
						if tc, ok := m.Content.(*sdk.TextContent); ok {
							show(tc.Text)
						}
					}
					return &sdk.CreateMessageResult{Role: "assistant", Model: "model-" + version, Content: &sdk.TextContent{Text: "ok"}}, nil
				},
			})
			cs, err := c.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: ts.URL + server.Path, MaxRetries: -1},
				&sdk.ClientSessionOptions{ProtocolVersion: version})
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			if got := cs.InitializeResult().ProtocolVersion; got != version {
				t.Fatalf("the client asked for %s and was answered with %s", version, got)
			}
			for _, c := range []struct{ tool, want string }{
				{"ask", "secret of ada: accept person-" + version},
				{"sample", "secret of ada: model model-" + version},
				{"both", "secret of ada: accept person-" + version + ", model model-" + version},
				// Inside an upstream task (input_required, tasks/update).
				{"tk__confirm", "went on for ada: true"},
				{"tk__muse", "mused for ada by model-" + version},
			} {
				name := c.tool
				if !strings.Contains(name, "__") {
					name = "up__" + name
				}
				r, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: name, Arguments: map[string]any{"who": "ada"}})
				if err != nil {
					t.Errorf("%s: %v", c.tool, err)
					continue
				}
				if got := callText(r); r.IsError || got != c.want {
					t.Errorf("%s: %q (error %v), want %q", c.tool, got, r.IsError, c.want)
				}
			}
			// Progress and a log message of the call reach its client.
			if version < "2026-07-28" {
				if err := cs.SetLoggingLevel(ctx, &sdk.SetLoggingLevelParams{Level: "debug"}); err != nil {
					t.Fatal(err)
				}
			}
			meta := sdk.Meta{"progressToken": "p1"}
			if version >= "2026-07-28" {
				meta[sdk.MetaKeyLogLevel] = "debug"
			}
			r, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "up__tell", Arguments: map[string]any{"who": "ada"}, Meta: meta})
			if err != nil || r.IsError || callText(r) != "told ada" {
				t.Errorf("tell: %v %v", err, r)
			}
			select {
			case v := <-u.versions:
				if v != "2026-07-28" {
					t.Errorf("the upstream's session is of %s, want 2026-07-28", v)
				}
			default:
				t.Error("the upstream saw no call")
			}
			if m := taskMethods(); !slices.Contains(m, "tasks/get") || !slices.Contains(m, "tasks/update") {
				t.Errorf("the task upstream's questions were not answered inside a task; it was sent %v", m)
			}
			// A notification may be handled by the client after the
			// result that followed it.
			for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
				mu.Lock()
				got := strings.Join(shown, "\n")
				mu.Unlock()
				if strings.Contains(got, "working for ada") && strings.Contains(got, "log about ada") {
					break
				}
			}
			mu.Lock()
			if got := strings.Join(shown, "\n"); !strings.Contains(got, "Who asks about the secret of ada?") ||
				!strings.Contains(got, "summarize the secret of ada") || !strings.Contains(got, "Go on for ada?") ||
				!strings.Contains(got, "muse on ada") || !strings.Contains(got, "working for ada") || !strings.Contains(got, "log about ada") {
				t.Errorf("the client was shown:\n%s", got)
			}
			mu.Unlock()

			// The client cancels its call: the upstream's call is cancelled.
			// It offers no tasks, so no task's handle can be in flight:
			// the cancellation reaches it at once, not after the wait
			// for a handle (createGrace, 5 s).
			cctx, ccancel := context.WithCancel(ctx)
			done := make(chan error, 1)
			go func() {
				_, err := cs.CallTool(cctx, &sdk.CallToolParams{Name: "up__block", Arguments: map[string]any{"who": version}})
				done <- err
			}()
			select {
			case <-u.blocking:
			case <-time.After(10 * time.Second):
				t.Fatal("the call did not reach the upstream within 10s")
			}
			ccancel()
			select {
			case who := <-u.cancelled:
				if who != version {
					t.Errorf("the upstream cancelled the call of %s", who)
				}
			case <-time.After(4 * time.Second):
				t.Error("the client's cancellation did not reach the upstream within 4s")
			}
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				t.Error("the cancelled call did not end within 10s")
			}
		})
	}
}

func callText(r *sdk.CallToolResult) string {
	var parts []string
	for _, c := range r.Content {
		if tc, ok := c.(*sdk.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// taskUpstream26 is a lathe server over streamable HTTP, which speaks MCP
// 2026-07-28 to lathe's client and makes a task of any call of the tasks
// extension that asks its client something: "confirm" asks a question
// (elicitation), "muse" asks the client's model (sampling). methods
// records the methods it was sent.
func taskUpstream26(t *testing.T) (url string, methods func() []string) {
	t.Helper()
	ue := lathe.New(lathe.Options{Timeout: 20 * time.Second})
	err := ue.Register(
		builtin.Must(builtin.Func(tool.Definition{Name: "confirm", Summary: "Ask first."},
			func(ctx context.Context, a struct {
				Who string `json:"who"`
			}) (string, error) {
				v, err := builtin.Ask(ctx, tool.Question{ID: "sure", Text: "Go on for " + a.Who + "?", Kind: tool.QuestionBoolean})
				if err != nil {
					return "", err
				}
				return fmt.Sprintf("went on for %s: %v", a.Who, builtin.AnswerBool(v)), nil
			})),
		builtin.Must(builtin.Func(tool.Definition{Name: "muse", Summary: "Ask the caller's model."},
			func(ctx context.Context, a struct {
				Who string `json:"who"`
			}) (string, error) {
				h := tool.HooksFrom(ctx)
				if h.Sample == nil {
					return "", fmt.Errorf("no model to ask")
				}
				r, err := h.Sample(ctx, &tool.SamplingRequest{MaxTokens: 10, Messages: []tool.SamplingMessage{{Role: "user",
					Content: tool.Content{Type: tool.ContentText, Text: "muse on " + a.Who}}}})
				if err != nil {
					return "", err
				}
				return "mused for " + a.Who + " by " + r.Model, nil
			})))
	if err != nil {
		t.Fatal(err)
	}
	srv := server.New(ue, server.Options{Tasks: server.TaskOptions{Promote: 100 * time.Millisecond}})
	h := srv.Handler(server.HTTPOptions{})
	var mu sync.Mutex
	var seen []string
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var m struct {
			Method string `json:"method"`
		}
		if json.Unmarshal(body, &m) == nil && m.Method != "" {
			mu.Lock()
			seen = append(seen, m.Method)
			mu.Unlock()
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(func() {
		ts.Close()
		srv.Close()
		ue.Close()
	})
	return ts.URL + server.Path, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(seen)
	}
}

// TestUpstream2026HTTPTwoClients: a client of 2025-11-25 and one of
// 2026-07-28 call the same upstream of 2026-07-28 at once, and it asks
// each about its caller's secret: each question reaches its own client,
// and each answer decides its own call.
func TestUpstream2026HTTPTwoClients(t *testing.T) {
	u := newUpstream26(t)
	e, pool := open(t, mcp.Options{}, mcp.Config{Name: "up", URL: u.url})
	ts := serveFace(t, e, pool)
	seen := &shown{}
	clients := map[string]string{"alice": "2025-11-25", "bob": "2026-07-28"}
	names := []string{"alice", "bob"}
	results := meetAt(t, func(cctx context.Context, i int) string {
		name := names[i]
		c := sdk.NewClient(&sdk.Implementation{Name: name}, &sdk.ClientOptions{
			ElicitationHandler: func(_ context.Context, r *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
				seen.add(name, r.Params.Message)
				return &sdk.ElicitResult{Action: "accept", Content: map[string]any{"name": name}}, nil
			}})
		cs, err := c.Connect(cctx, &sdk.StreamableClientTransport{Endpoint: ts.URL + server.Path, MaxRetries: -1},
			&sdk.ClientSessionOptions{ProtocolVersion: clients[name]})
		if err != nil {
			return "error: " + err.Error()
		}
		defer cs.Close()
		r, err := cs.CallTool(cctx, &sdk.CallToolParams{Name: "up__ask", Arguments: map[string]any{"who": name}})
		if err != nil {
			return "error: " + err.Error()
		}
		return callText(r)
	}, 2)
	for i, name := range names {
		if want := "secret of " + name + ": accept " + name; results[i] != want {
			t.Errorf("%s's call: %q, want %q", name, results[i], want)
		}
		if got := seen.of(name); got != "Who asks about the secret of "+name+"?" {
			t.Errorf("%s was shown %q", name, got)
		}
	}
}
