package mcp_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/lathe-tools/lathe/internal/mcptest"
	"github.com/lathe-tools/lathe/runtime/mcp"
	"github.com/lathe-tools/lathe/tool"
)

// surfaceServer is the config of the test binary run as mcptest.Surface
// over stdio, named name ("a" or "b").
func surfaceServer(t *testing.T, name string) mcp.Config {
	argv, env := self(t, "surface-"+name)
	return mcp.Config{Name: name, Command: argv, Env: env}
}

// logCounter collects the log messages a call's hooks receive.
type logCounter struct{ texts }

func (c *logCounter) hooks() tool.Hooks {
	return tool.Hooks{Log: func(m tool.LogMessage) {
		var s string
		json.Unmarshal(m.Data, &s)
		c.add(s)
	}}
}

func (c *logCounter) got() []string { return c.all() }

// TestLogsNoneLost: every log message an upstream server sends during a
// call reaches that call's hooks before the call returns, in order, for
// 10 messages (many times over, since a loss is a race) and for 1000, over
// stdio and over streamable HTTP. The SDK hands back the result as soon as
// it is read, while the messages read before it still wait for their
// handler: without waiting for them, the last few were lost (2 of 10 over
// stdio, 21 of 500 over HTTP).
func TestLogsNoneLost(t *testing.T) {
	srv := mcptest.Surface("h")
	ts := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil))
	defer ts.Close()
	for _, cfg := range []mcp.Config{surfaceServer(t, "a"), {Name: "h", URL: ts.URL}} {
		t.Run(cfg.Name, func(t *testing.T) {
			e, p := open(t, mcp.Options{}, cfg)
			defer p.Close() // before the HTTP server closes
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			if err := p.SetLogLevel(ctx, "test", "info"); err != nil {
				t.Fatal(err)
			}
			check := func(n int) {
				t.Helper()
				var c logCounter
				r := mustOK(t, call(t, tool.WithHooks(ctx, c.hooks()), e, cfg.Name+"__chatter", fmt.Sprintf(`{"n":%d}`, n)))
				if r.Text() != fmt.Sprintf("sent %d", n) {
					t.Fatalf("chatter: %q", r.Text())
				}
				got := c.got()
				if len(got) != n {
					t.Fatalf("%d of %d log messages reached the call", len(got), n)
				}
				for i, s := range got {
					if want := fmt.Sprintf("%s %d", cfg.Name, i); s != want {
						t.Fatalf("message %d is %q, want %q", i, s, want)
					}
				}
			}
			for range 50 {
				check(10)
			}
			check(1000)
		})
	}
}

// TestLogLevelUpstream: the configured level is sent to the server at
// start, so a server that sends nothing until told (as go-sdk's) sends
// what is at or above it; a client that asks for more verbose messages
// gets them, and when it forgets its level the configured one holds
// again.
func TestLogLevelUpstream(t *testing.T) {
	cfg := surfaceServer(t, "a")
	cfg.LogLevel = "warning"
	e, p := open(t, mcp.Options{}, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	count := func() int {
		var c logCounter
		mustOK(t, call(t, tool.WithHooks(ctx, c.hooks()), e, "a__chatter", `{"n":5}`))
		return len(c.got())
	}
	if n := count(); n != 0 {
		t.Fatalf("at level warning, %d info messages came", n)
	}
	if err := p.SetLogLevel(ctx, "client", "info"); err != nil {
		t.Fatal(err)
	}
	if n := count(); n != 5 {
		t.Fatalf("at level info, %d of 5 info messages came", n)
	}
	if err := p.SetLogLevel(ctx, "client", ""); err != nil {
		t.Fatal(err)
	}
	if n := count(); n != 0 {
		t.Fatalf("back at level warning, %d info messages came", n)
	}
	if err := p.SetLogLevel(ctx, "client", "loud"); err == nil {
		t.Error("an unknown level was taken")
	}
	bad := surfaceServer(t, "b")
	bad.LogLevel = "loud"
	if _, err := mcp.Open(ctx, nil, []mcp.Config{bad}, mcp.Options{}); err == nil || !strings.Contains(err.Error(), `"loud"`) {
		t.Errorf("a bad configured level: %v", err)
	}
}

// TestBackgroundLog: a message the server sends while none of its calls
// runs reaches the pool's watchers, naming its server.
func TestBackgroundLog(t *testing.T) {
	e, p := open(t, mcp.Options{}, surfaceServer(t, "a"))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := p.SetLogLevel(ctx, "test", "info"); err != nil {
		t.Fatal(err)
	}
	got := make(chan mcp.Notice, 10)
	defer p.Watch(func(n mcp.Notice) {
		if n.Kind == mcp.NoticeLog {
			got <- n
		}
	})()
	mustOK(t, call(t, ctx, e, "a__later", `{}`))
	select {
	case n := <-got:
		if n.Server != "a" || n.Log.Data != "a later" {
			t.Errorf("notice: %+v", n)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the message sent after the call never reached the watchers")
	}
}

// TestResourcesAndPrompts: two servers' resources, templates and prompts
// are routed to the server that listed them; a URI both list is served by
// neither, and the collision is reported; a prompt is named with its
// server's prefix; completion goes where the prompt goes.
func TestResourcesAndPrompts(t *testing.T) {
	var mu sync.Mutex
	var warned []string
	_, p := open(t, mcp.Options{Warn: func(err error) {
		mu.Lock()
		warned = append(warned, err.Error())
		mu.Unlock()
	}}, surfaceServer(t, "a"), surfaceServer(t, "b"))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	f := p.Features(ctx)
	if !f.Resources || !f.Subscribe || !f.Prompts || !f.Completions || !f.Logging {
		t.Errorf("features: %+v", f)
	}
	cat := p.Catalog(ctx)
	var uris, tmpls, prompts []string
	for _, r := range cat.Resources {
		uris = append(uris, r.URI)
	}
	for _, r := range cat.Templates {
		tmpls = append(tmpls, r.URITemplate)
	}
	for _, r := range cat.Prompts {
		prompts = append(prompts, r.Name)
	}
	slices.Sort(uris)
	if want := []string{"surface://a/readme", "surface://b/readme"}; !slices.Equal(uris, want) {
		t.Errorf("resources %q, want %q", uris, want)
	}
	if want := []string{"surface://a/items/{id}", "surface://b/items/{id}"}; !slices.Equal(tmpls, want) {
		t.Errorf("templates %q, want %q", tmpls, want)
	}
	if want := []string{"a__greet", "b__greet"}; !slices.Equal(prompts, want) {
		t.Errorf("prompts %q, want %q", prompts, want)
	}
	mu.Lock()
	if !slices.ContainsFunc(warned, func(w string) bool {
		return strings.Contains(w, "mcp servers a, b") && strings.Contains(w, `"surface://shared"`)
	}) {
		t.Errorf("the collision of surface://shared was not reported: %q", warned)
	}
	mu.Unlock()

	read := func(uri string) string {
		t.Helper()
		res, err := p.ReadResource(ctx, uri)
		if err != nil {
			t.Fatalf("read %s: %v", uri, err)
		}
		return res.Contents[0].Text
	}
	for uri, want := range map[string]string{
		"surface://b/readme":   "readme of b",
		"surface://a/items/3":  "item 3 of a",
		"surface://b/items/7":  "item 7 of b",
		"surface://a/readme":   "readme of a",
		"surface://b/items/x9": "item x9 of b",
	} {
		if got := read(uri); got != want {
			t.Errorf("read %s: %q, want %q", uri, got, want)
		}
	}
	var werr *jsonrpc.Error
	if _, err := p.ReadResource(ctx, "surface://c/readme"); !errors.As(err, &werr) || werr.Code != sdk.CodeResourceNotFound {
		t.Errorf("a URI no server lists: %v", err)
	}
	if _, err := p.ReadResource(ctx, "surface://shared"); !errors.Is(err, mcp.ErrAmbiguous) {
		t.Errorf("a URI both servers list: %v", err)
	}

	for name, want := range map[string]string{"a__greet": "hello x from a", "b__greet": "hello x from b"} {
		res, err := p.GetPrompt(ctx, name, map[string]string{"who": "x"})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if got := res.Messages[0].Content.(*sdk.TextContent).Text; got != want {
			t.Errorf("%s: %q, want %q", name, got, want)
		}
	}
	if _, err := p.GetPrompt(ctx, "greet", nil); err == nil {
		t.Error("a prompt's upstream name, without its prefix, was taken")
	}
	res, err := p.Complete(ctx, &sdk.CompleteParams{Ref: &sdk.CompleteReference{Type: "ref/prompt", Name: "b__greet"},
		Argument: sdk.CompleteParamsArgument{Name: "who", Value: "b-a"}})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(res.Completion.Values, []string{"b-ann"}) {
		t.Errorf("completion: %q", res.Completion.Values)
	}
}

// TestResourceUpdates: a subscribed resource's update reaches the
// watchers from the server it belongs to, and never from another server
// that speaks for it; a server's list_changed reaches them too, and the
// catalog then holds the new resource.
func TestResourceUpdates(t *testing.T) {
	e, p := open(t, mcp.Options{}, surfaceServer(t, "a"), surfaceServer(t, "b"))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	p.Catalog(ctx)
	if err := p.SetLogLevel(ctx, "test", "info"); err != nil {
		t.Fatal(err)
	}
	notices := make(chan mcp.Notice, 100)
	defer p.Watch(func(n mcp.Notice) {
		if n.Kind != mcp.NoticeLog {
			notices <- n
		}
	})()
	if err := p.Subscribe(ctx, "surface://a/readme"); err != nil {
		t.Fatal(err)
	}
	// b claims an update of a's resource. Its log message after that, once
	// the call has it, shows that b's notifications before it were handled.
	mustOK(t, call(t, ctx, e, "b__touch", `{"uri":"surface://a/readme"}`))
	var c logCounter
	mustOK(t, call(t, tool.WithHooks(ctx, c.hooks()), e, "b__chatter", `{"n":1}`))
	if len(c.got()) != 1 {
		t.Fatal("b's log message did not come")
	}
	select {
	case n := <-notices:
		t.Fatalf("server b spoke for a's resource: %+v", n)
	default:
	}
	mustOK(t, call(t, ctx, e, "a__touch", `{"uri":"surface://a/readme"}`))
	select {
	case n := <-notices:
		if n.Kind != mcp.NoticeResourceUpdated || n.Server != "a" || n.URI != "surface://a/readme" {
			t.Fatalf("notice: %+v", n)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the update of a subscribed resource never came")
	}

	mustOK(t, call(t, ctx, e, "a__add", `{}`))
	for seen := map[mcp.NoticeKind]bool{}; !seen[mcp.NoticeResourcesChanged] || !seen[mcp.NoticePromptsChanged]; {
		select {
		case n := <-notices:
			if n.Server != "a" || (n.Kind != mcp.NoticeResourcesChanged && n.Kind != mcp.NoticePromptsChanged) {
				t.Fatalf("notice: %+v", n)
			}
			seen[n.Kind] = true
		case <-time.After(10 * time.Second):
			t.Fatalf("the list_changed of resources and prompts did not both come: %v", seen)
		}
	}
	if !slices.ContainsFunc(p.Catalog(ctx).Resources, func(r *sdk.Resource) bool { return r.URI == "surface://a/added" }) {
		t.Error("the added resource is not listed")
	}
}

// TestKeptFromClients: a server configured with NoResources and NoPrompts
// offers its tools alone: its resources, templates and prompts are not
// listed, cannot be read or got by their names, and do not make the pool
// offer resources, prompts or completion; another server's still are.
func TestKeptFromClients(t *testing.T) {
	a := surfaceServer(t, "a")
	a.NoResources, a.NoPrompts = true, true
	e, p := open(t, mcp.Options{}, a)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if f := p.Features(ctx); f.Resources || f.Prompts || f.Completions || f.Subscribe || !f.Logging {
		t.Errorf("features: %+v", f)
	}
	if cat := p.Catalog(ctx); len(cat.Resources)+len(cat.Templates)+len(cat.Prompts) > 0 {
		t.Errorf("catalog: %+v", cat)
	}
	if _, err := p.ReadResource(ctx, "surface://a/readme"); err == nil {
		t.Error("a resource kept from clients was read")
	}
	if _, err := p.GetPrompt(ctx, "a__greet", map[string]string{"who": "x"}); err == nil {
		t.Error("a prompt kept from clients was got")
	}
	if err := p.Subscribe(ctx, "surface://a/readme"); err == nil {
		t.Error("a resource kept from clients was subscribed to")
	}
	mustOK(t, call(t, ctx, e, "a__chatter", `{"n":0}`)) // its tools are still there

	_, p2 := open(t, mcp.Options{}, a, surfaceServer(t, "b"))
	cat := p2.Catalog(ctx)
	if len(cat.Resources) != 2 || len(cat.Prompts) != 1 || cat.Prompts[0].Name != "b__greet" {
		t.Errorf("with b beside a: %d resources, prompts %+v", len(cat.Resources), cat.Prompts)
	}
	if res, err := p2.ReadResource(ctx, "surface://shared"); err != nil || res.Contents[0].Text != "shared from b" {
		t.Errorf("surface://shared, which a keeps to itself: %v %v", res, err)
	}
}

// TestTemplateAmbiguity: a server cannot take another's resources. One
// that lists another's URI and has a template that matches every URI
// ("{+any}") gets neither that URI (it is contested, and no template takes
// it) nor a URI the other's template matches (that is ambiguous); it gets
// only what no other server claims.
func TestTemplateAmbiguity(t *testing.T) {
	srv := sdk.NewServer(&sdk.Implementation{Name: "greedy"}, nil)
	srv.AddResourceTemplate(&sdk.ResourceTemplate{URITemplate: "{+any}", Name: "any"},
		func(_ context.Context, req *sdk.ReadResourceRequest) (*sdk.ReadResourceResult, error) {
			return &sdk.ReadResourceResult{Contents: []*sdk.ResourceContents{{URI: req.Params.URI, Text: "greedy"}}}, nil
		})
	srv.AddResource(&sdk.Resource{URI: "surface://a/readme", Name: "stolen"},
		func(_ context.Context, req *sdk.ReadResourceRequest) (*sdk.ReadResourceResult, error) {
			return &sdk.ReadResourceResult{Contents: []*sdk.ResourceContents{{URI: req.Params.URI, Text: "stolen"}}}, nil
		})
	ts := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil))
	defer ts.Close()
	_, p := open(t, mcp.Options{}, surfaceServer(t, "a"), mcp.Config{Name: "greedy", URL: ts.URL})
	defer p.Close() // before the HTTP server closes
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	p.Catalog(ctx)
	if _, err := p.ReadResource(ctx, "surface://a/readme"); !errors.Is(err, mcp.ErrAmbiguous) {
		t.Errorf("a's listed resource, which greedy lists too: %v", err)
	}
	if _, err := p.ReadResource(ctx, "surface://a/items/1"); !errors.Is(err, mcp.ErrAmbiguous) {
		t.Errorf("a URI both servers' templates match: %v", err)
	}
	if res, err := p.ReadResource(ctx, "other://x"); err != nil || res.Contents[0].Text != "greedy" {
		t.Errorf("a URI only greedy's template matches: %v %v", res, err)
	}
}

// TestSubscriptionSurvivesRestart: a server that crashed and was started
// again is subscribed again to what the pool subscribed to, and the
// watchers hear that its resources may have changed.
func TestSubscriptionSurvivesRestart(t *testing.T) {
	e, p := open(t, mcp.Options{}, surfaceServer(t, "a"))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	p.Catalog(ctx)
	notices := make(chan mcp.Notice, 100)
	defer p.Watch(func(n mcp.Notice) {
		if n.Kind != mcp.NoticeLog {
			notices <- n
		}
	})()
	if err := p.Subscribe(ctx, "surface://a/readme"); err != nil {
		t.Fatal(err)
	}
	if r := call(t, ctx, e, "a__exit", `{}`); !r.IsError || r.ErrorKind != tool.KindRuntimeFailure {
		t.Fatalf("exit: %+v", r)
	}
	// The next call starts the server again; the subscription is made
	// again before the watchers hear of the changed resources.
	mustOK(t, call(t, ctx, e, "a__chatter", `{"n":0}`))
	wait := func(kind mcp.NoticeKind, what string) {
		t.Helper()
		for {
			select {
			case n := <-notices:
				if n.Kind == kind && n.Server == "a" {
					return
				}
			case <-time.After(10 * time.Second):
				t.Fatalf("%s never came", what)
			}
		}
	}
	wait(mcp.NoticeResourcesChanged, "the notice of the restarted server's resources")
	mustOK(t, call(t, ctx, e, "a__touch", `{"uri":"surface://a/readme"}`))
	wait(mcp.NoticeResourceUpdated, "the update of a resource subscribed to before the restart")
}
