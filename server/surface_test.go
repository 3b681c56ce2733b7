package server_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/lathe-tools/lathe"
	"github.com/lathe-tools/lathe/internal/mcptest"
	"github.com/lathe-tools/lathe/runtime/mcp"
	"github.com/lathe-tools/lathe/server"
)

// upstreamEnv names the variable that makes the test binary the upstream
// server mcptest.Surface of that name.
const upstreamEnv = "LATHE_SERVER_TEST_UPSTREAM"

// surfaceUpstream is the config of the test binary run as
// mcptest.Surface(name) over stdio.
func surfaceUpstream(t *testing.T, name string) mcp.Config {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return mcp.Config{Name: name, Command: []string{exe, "-test.run=^$"}, Env: map[string]string{upstreamEnv: name}}
}

// openPool opens a pool of cfgs in e; the engine closes it.
func openPool(t *testing.T, e *lathe.Engine, cfgs ...mcp.Config) *mcp.Pool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	p, err := mcp.Open(ctx, e, cfgs, mcp.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// clientLog collects the log messages a client receives.
type clientLog struct {
	mu   sync.Mutex
	msgs []*sdk.LoggingMessageParams
}

func (l *clientLog) handler(_ context.Context, req *sdk.LoggingMessageRequest) {
	l.mu.Lock()
	l.msgs = append(l.msgs, req.Params)
	l.mu.Unlock()
}

// waitFor waits until n messages came, or fails naming what is missing.
func (l *clientLog) waitFor(t *testing.T, n int, what string) []*sdk.LoggingMessageParams {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		l.mu.Lock()
		got := slices.Clone(l.msgs)
		l.mu.Unlock()
		if len(got) >= n {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %d of %d log messages reached the client", what, len(got), n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func (l *clientLog) reset() {
	l.mu.Lock()
	l.msgs = nil
	l.mu.Unlock()
}

// TestCapabilitiesFollowUpstreams: resources, prompts, completions and
// logging are declared only when an upstream server declares them; a
// server with an upstream of tools alone declares tools only.
func TestCapabilitiesFollowUpstreams(t *testing.T) {
	e := newEngine(t, testTools()...)
	srv := server.New(e, server.Options{Upstream: openPool(t, e, surfaceUpstream(t, "a"))})
	defer srv.Close()
	caps := connect(t, srv, nil).InitializeResult().Capabilities
	if caps.Resources == nil || !caps.Resources.Subscribe || !caps.Resources.ListChanged || caps.Prompts == nil ||
		caps.Completions == nil || caps.Logging == nil || caps.Tools == nil {
		t.Errorf("with an upstream that offers everything: %+v", caps)
	}

	bare := sdk.NewServer(&sdk.Implementation{Name: "bare"}, &sdk.ServerOptions{Capabilities: &sdk.ServerCapabilities{}})
	bare.AddTool(&sdk.Tool{Name: "noop", InputSchema: map[string]any{"type": "object"}},
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return &sdk.CallToolResult{}, nil
		})
	ts := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return bare }, nil))
	defer ts.Close()
	e2 := newEngine(t)
	srv2 := server.New(e2, server.Options{Upstream: openPool(t, e2, mcp.Config{Name: "bare", URL: ts.URL})})
	defer srv2.Close()
	cs := connect(t, srv2, nil)
	caps = cs.InitializeResult().Capabilities
	if caps.Resources != nil || caps.Prompts != nil || caps.Completions != nil || caps.Logging != nil || caps.Tools == nil {
		t.Errorf("with an upstream of tools alone: %+v", caps)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := cs.ListResources(ctx, nil); err == nil {
		t.Error("resources/list was served, though nothing backs it")
	}
	e2.Close() // before the HTTP server closes: its session ends first
}

// TestResourcesThroughServer: a client of lathe lists and reads two
// upstream servers' resources, templates and prompts, completes an
// argument, subscribes and gets the update, and hears of changed lists of
// resources and prompts.
func TestResourcesThroughServer(t *testing.T) {
	e := newEngine(t)
	srv := server.New(e, server.Options{Upstream: openPool(t, e, surfaceUpstream(t, "a"), surfaceUpstream(t, "b"))})
	defer srv.Close()
	updated := make(chan string, 10)
	changed := make(chan struct{}, 10)
	promptsChanged := make(chan struct{}, 10)
	cs := connect(t, srv, &sdk.ClientOptions{
		ResourceUpdatedHandler: func(_ context.Context, req *sdk.ResourceUpdatedNotificationRequest) {
			updated <- req.Params.URI
		},
		ResourceListChangedHandler: func(context.Context, *sdk.ResourceListChangedRequest) { changed <- struct{}{} },
		PromptListChangedHandler:   func(context.Context, *sdk.PromptListChangedRequest) { promptsChanged <- struct{}{} },
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	var uris []string
	for r, err := range cs.Resources(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		uris = append(uris, r.URI)
	}
	slices.Sort(uris)
	// Both list surface://shared: neither serves it.
	if want := []string{"surface://a/readme", "surface://b/readme"}; !slices.Equal(uris, want) {
		t.Errorf("resources %q, want %q", uris, want)
	}
	var tmpls []string
	for r, err := range cs.ResourceTemplates(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		tmpls = append(tmpls, r.URITemplate)
	}
	slices.Sort(tmpls)
	if want := []string{"surface://a/items/{id}", "surface://b/items/{id}"}; !slices.Equal(tmpls, want) {
		t.Errorf("templates %q, want %q", tmpls, want)
	}
	for uri, want := range map[string]string{
		"surface://b/readme":  "readme of b",
		"surface://b/items/4": "item 4 of b",
	} {
		res, err := cs.ReadResource(ctx, &sdk.ReadResourceParams{URI: uri})
		if err != nil {
			t.Fatalf("read %s: %v", uri, err)
		}
		if got := res.Contents[0].Text; got != want {
			t.Errorf("read %s: %q, want %q", uri, got, want)
		}
	}
	for _, uri := range []string{"surface://nobody/x", "surface://shared"} {
		if _, err := cs.ReadResource(ctx, &sdk.ReadResourceParams{URI: uri}); err == nil {
			t.Errorf("%s was read", uri)
		}
	}

	var prompts []string
	for p, err := range cs.Prompts(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		prompts = append(prompts, p.Name)
	}
	slices.Sort(prompts)
	if want := []string{"a__greet", "b__greet"}; !slices.Equal(prompts, want) {
		t.Errorf("prompts %q, want %q", prompts, want)
	}
	pr, err := cs.GetPrompt(ctx, &sdk.GetPromptParams{Name: "b__greet", Arguments: map[string]string{"who": "ann"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := pr.Messages[0].Content.(*sdk.TextContent).Text; got != "hello ann from b" {
		t.Errorf("prompt: %q", got)
	}
	comp, err := cs.Complete(ctx, &sdk.CompleteParams{Ref: &sdk.CompleteReference{Type: "ref/prompt", Name: "a__greet"},
		Argument: sdk.CompleteParamsArgument{Name: "who", Value: "a-"}})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"a-ann", "a-bob"}; !slices.Equal(comp.Completion.Values, want) {
		t.Errorf("completion %q, want %q", comp.Completion.Values, want)
	}

	if err := cs.Subscribe(ctx, &sdk.SubscribeParams{URI: "surface://b/readme"}); err != nil {
		t.Fatal(err)
	}
	// Under MCP 2026-07-28 the client's Subscribe may return before the
	// server has acknowledged the subscription (subscriptions/listen), so
	// the resource is touched until an update arrives: one that never
	// does is the failure.
	deadline := time.After(10 * time.Second)
	for got := false; !got; {
		callTool(t, cs, "b__touch", map[string]any{"uri": "surface://b/readme"})
		select {
		case uri := <-updated:
			if uri != "surface://b/readme" {
				t.Errorf("updated: %q", uri)
			}
			got = true
		case <-time.After(500 * time.Millisecond):
		case <-deadline:
			t.Fatal("the update of a subscribed resource never reached the client")
		}
	}

	callTool(t, cs, "a__add", map[string]any{})
	select {
	case <-changed:
	case <-time.After(10 * time.Second):
		t.Fatal("resources/list_changed never reached the client")
	}
	res, err := cs.ReadResource(ctx, &sdk.ReadResourceParams{URI: "surface://a/added"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Contents[0].Text != "added to a" {
		t.Errorf("added: %q", res.Contents[0].Text)
	}
	select {
	case <-promptsChanged:
	case <-time.After(10 * time.Second):
		t.Fatal("prompts/list_changed never reached the client")
	}
	pr, err = cs.GetPrompt(ctx, &sdk.GetPromptParams{Name: "a__added"})
	if err != nil {
		t.Fatal(err)
	}
	if got := pr.Messages[0].Content.(*sdk.TextContent).Text; got != "added to a" {
		t.Errorf("added prompt: %q", got)
	}
}

// TestLogsThroughServer: a client that sets its log level has it reach the
// upstream server, and receives every message of its call, 10 of 10 (many
// times over) and 1000 of 1000, in order, over stdio-like pipes and over
// streamable HTTP; a message an upstream sends outside any call reaches it
// too, under a logger that names the server.
func TestLogsThroughServer(t *testing.T) {
	for _, via := range []string{"memory", "http"} {
		// A server of its own for each client: a message that comes just
		// after another client's call ended may be about that call, and
		// reaches no one else.
		e := newEngine(t)
		srv := server.New(e, server.Options{Upstream: openPool(t, e, surfaceUpstream(t, "a"))})
		defer srv.Close()
		ts := httptest.NewServer(srv.Handler(server.HTTPOptions{}))
		// A client still connected would hold ts.Close forever: a failure
		// below must end the test, not hang it.
		defer func() {
			ts.CloseClientConnections()
			ts.Close()
		}()
		var l clientLog
		opts := &sdk.ClientOptions{LoggingMessageHandler: l.handler}
		var cs *sdk.ClientSession
		if via == "memory" {
			cs = connect(t, srv, opts)
		} else {
			var err error
			cs, err = sdk.NewClient(&sdk.Implementation{Name: "test"}, opts).Connect(context.Background(),
				&sdk.StreamableClientTransport{Endpoint: ts.URL + server.Path},
				&sdk.ClientSessionOptions{ProtocolVersion: "2025-11-25"}) // logging/setLevel is of the versions before 2026-07-28
			if err != nil {
				t.Fatal(err)
			}
		}
		defer cs.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		if err := cs.SetLoggingLevel(ctx, &sdk.SetLoggingLevelParams{Level: "info"}); err != nil {
			t.Fatal(err)
		}
		check := func(n int) {
			t.Helper()
			l.reset()
			if got := text(callTool(t, cs, "a__chatter", map[string]any{"n": n})); got != fmt.Sprintf("sent %d", n) {
				t.Fatalf("%s: chatter: %q", via, got)
			}
			msgs := l.waitFor(t, n, via)
			if len(msgs) != n {
				t.Fatalf("%s: %d messages, want %d", via, len(msgs), n)
			}
			for i, m := range msgs {
				if want := fmt.Sprintf("a %d", i); m.Data != want {
					t.Fatalf("%s: message %d is %v, want %q", via, i, m.Data, want)
				}
			}
		}
		for range 20 {
			check(10)
		}
		check(1000)

		l.reset()
		callTool(t, cs, "a__later", map[string]any{})
		msgs := l.waitFor(t, 1, via+": the message after the call")
		if msgs[0].Data != "a later" || msgs[0].Logger != "a" || msgs[0].Level != "warning" {
			t.Errorf("%s: background message: %+v", via, msgs[0])
		}
	}
}

// TestEverythingSurface: the reference server-everything's resources,
// templates, prompts, completion, subscriptions and logging, through
// lathe's server face to a go-sdk client.
func TestEverythingSurface(t *testing.T) {
	e := newEngine(t)
	srv := server.New(e, server.Options{Upstream: openPool(t, e, mcp.Config{Name: "ev", Command: mcptest.Everything(t)})})
	defer srv.Close()
	var l clientLog
	updated := make(chan string, 100)
	cs := connect(t, srv, &sdk.ClientOptions{LoggingMessageHandler: l.handler,
		ResourceUpdatedHandler: func(_ context.Context, req *sdk.ResourceUpdatedNotificationRequest) {
			select {
			case updated <- req.Params.URI:
			default:
			}
		}})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	caps := cs.InitializeResult().Capabilities
	if caps.Resources == nil || !caps.Resources.Subscribe || caps.Prompts == nil || caps.Logging == nil {
		t.Errorf("capabilities: %+v", caps)
	}

	var static string
	for r, err := range cs.Resources(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		if static == "" && strings.HasPrefix(r.URI, "demo://resource/static/document/") {
			static = r.URI
		}
	}
	if static == "" {
		t.Fatal("no static document among the resources")
	}
	if res, err := cs.ReadResource(ctx, &sdk.ReadResourceParams{URI: static}); err != nil || len(res.Contents) == 0 {
		t.Fatalf("read %s: %v", static, err)
	}
	var tmpls []string
	for r, err := range cs.ResourceTemplates(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		tmpls = append(tmpls, r.URITemplate)
	}
	if !slices.Contains(tmpls, "demo://resource/dynamic/text/{resourceId}") {
		t.Fatalf("templates: %q", tmpls)
	}
	res, err := cs.ReadResource(ctx, &sdk.ReadResourceParams{URI: "demo://resource/dynamic/text/7"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(res.Contents[0].Text, "7") {
		t.Errorf("dynamic resource 7: %q", res.Contents[0].Text)
	}

	pr, err := cs.GetPrompt(ctx, &sdk.GetPromptParams{Name: "ev__args-prompt", Arguments: map[string]string{"city": "Oslo"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := pr.Messages[0].Content.(*sdk.TextContent).Text; !strings.Contains(got, "Oslo") {
		t.Errorf("args-prompt: %q", got)
	}
	comp, err := cs.Complete(ctx, &sdk.CompleteParams{Ref: &sdk.CompleteReference{Type: "ref/prompt", Name: "ev__completable-prompt"},
		Argument: sdk.CompleteParamsArgument{Name: "department", Value: "Eng"}})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(comp.Completion.Values, []string{"Engineering"}) {
		t.Errorf("completion: %q", comp.Completion.Values)
	}

	// The server sends one message at once when its simulated logging is
	// turned on, at a random level: at "debug", every level passes.
	if err := cs.SetLoggingLevel(ctx, &sdk.SetLoggingLevelParams{Level: "debug"}); err != nil {
		t.Fatal(err)
	}
	callTool(t, cs, "ev__toggle-simulated-logging", map[string]any{})
	l.waitFor(t, 1, "server-everything's simulated logging")
	callTool(t, cs, "ev__toggle-simulated-logging", map[string]any{})

	if err := cs.Subscribe(ctx, &sdk.SubscribeParams{URI: static}); err != nil {
		t.Fatal(err)
	}
	callTool(t, cs, "ev__toggle-subscriber-updates", map[string]any{})
	select {
	case uri := <-updated:
		if uri != static {
			t.Errorf("updated %q, subscribed to %q", uri, static)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("no update of the subscribed resource reached the client")
	}
	callTool(t, cs, "ev__toggle-subscriber-updates", map[string]any{})
}
