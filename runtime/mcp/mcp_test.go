package mcp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"

	"github.com/lathe-tools/lathe"
	"github.com/lathe-tools/lathe/internal/mcptest"
	"github.com/lathe-tools/lathe/runtime/mcp"
	"github.com/lathe-tools/lathe/tool"
)

func TestMain(m *testing.M) {
	// The test binary doubles as the upstream servers of env_test.go.
	switch os.Getenv(serverEnv) {
	case "":
	case "env":
		mcptest.ServeEnv("envsrv")
		return
	case "hostile":
		hostileServer()
		return
	case "conformance":
		mcptest.ServeConformance()
		return
	case "surface-a", "surface-b": // surface_test.go
		mcptest.ServeSurface(strings.TrimPrefix(os.Getenv(serverEnv), "surface-"))
		return
	case "tasks":
		serveTasks()
		return
	case "asker": // turns_test.go
		serveAsker()
		return
	case "direct": // direct_test.go
		serveDirect()
		return
	case "forger": // direct_test.go
		forgingServer()
		return
	default:
		fmt.Fprintln(os.Stderr, "unknown test server", os.Getenv(serverEnv))
		os.Exit(2)
	}
	goleak.VerifyTestMain(m)
}

// open starts a pool on a fresh engine and closes both when the test ends.
func open(t *testing.T, opts mcp.Options, cfgs ...mcp.Config) (*lathe.Engine, *mcp.Pool) {
	t.Helper()
	e := lathe.New(lathe.Options{Timeout: 20 * time.Second})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	p, err := mcp.Open(ctx, e, cfgs, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		e.Close()
		p.Close()
	})
	return e, p
}

func call(t *testing.T, ctx context.Context, e *lathe.Engine, name, args string) *tool.Result {
	t.Helper()
	out := e.Call(ctx, &tool.Call{Name: name, Arguments: json.RawMessage(args)})
	if out.Result == nil {
		t.Fatalf("%s: no result: %+v", name, out)
	}
	return out.Result
}

func mustOK(t *testing.T, r *tool.Result) *tool.Result {
	t.Helper()
	if r.IsError {
		t.Fatalf("error result: %s: %s", r.ErrorKind, r.Text())
	}
	return r
}

func TestEverythingStdio(t *testing.T) {
	var (
		mu       sync.Mutex
		progress []tool.Progress
	)
	hooks := tool.Hooks{
		Progress: func(p tool.Progress) {
			mu.Lock()
			progress = append(progress, p)
			mu.Unlock()
		},
		Elicit: func(_ context.Context, r *tool.ElicitRequest) (*tool.ElicitResult, error) {
			if !strings.Contains(string(r.Schema), `"name"`) {
				return nil, fmt.Errorf("unexpected schema %s", r.Schema)
			}
			return &tool.ElicitResult{Action: tool.ElicitAccept, Content: map[string]any{"name": "Ada Lovelace"}}, nil
		},
		Sample: func(_ context.Context, r *tool.SamplingRequest) (*tool.SamplingResult, error) {
			return &tool.SamplingResult{Role: "assistant", Model: "stub-model",
				Content: tool.Content{Type: tool.ContentText, Text: "sampled: " + r.Messages[0].Content.Text}}, nil
		},
	}
	e, _ := open(t, mcp.Options{}, mcp.Config{Name: "ev", Command: mcptest.Everything(t)})
	ctx := context.Background()

	t.Run("definitions", func(t *testing.T) {
		def, ok := e.Lookup("ev__get-structured-content")
		if !ok {
			t.Fatalf("no ev__get-structured-content among %d tools", len(e.Tools()))
		}
		if def.Source != "mcp.ev" || def.Runtime != "mcp" || len(def.OutputSchema) == 0 {
			t.Errorf("definition %+v", def)
		}
		// The schemas are the server's bytes, its keys in its order.
		if i, j := strings.Index(string(def.OutputSchema), `"type"`), strings.Index(string(def.OutputSchema), `"properties"`); i < 0 || j < i {
			t.Errorf("output schema not as sent: %s", def.OutputSchema)
		}
		if !def.Annotations.ReadOnlyHint || def.Annotations.OpenWorldHint == nil || *def.Annotations.OpenWorldHint {
			t.Errorf("annotations %+v", def.Annotations)
		}
		// Tools the server registers only after initialize, because they
		// depend on the client's capabilities.
		for _, n := range []string{"ev__trigger-elicitation-request", "ev__trigger-sampling-request"} {
			waitFor(t, func() bool { _, ok := e.Lookup(n); return ok }, n+" registered")
		}
	})

	t.Run("echo", func(t *testing.T) {
		r := mustOK(t, call(t, ctx, e, "ev__echo", `{"message":"hi there"}`))
		if !strings.Contains(r.Text(), "hi there") {
			t.Errorf("echo: %q", r.Text())
		}
	})
	t.Run("get-sum", func(t *testing.T) {
		// String-encoded numbers are repaired by the engine before the
		// server sees them.
		r := mustOK(t, call(t, ctx, e, "ev__get-sum", `{"a":"2","b":40}`))
		if !strings.Contains(r.Text(), "42") {
			t.Errorf("get-sum: %q", r.Text())
		}
	})
	t.Run("invalid", func(t *testing.T) {
		r := call(t, ctx, e, "ev__get-sum", `{"a":"x"}`)
		if !r.IsError || r.ErrorKind != tool.KindInvalidArguments {
			t.Errorf("got %s %q", r.ErrorKind, r.Text())
		}
	})
	t.Run("structured", func(t *testing.T) {
		r := mustOK(t, call(t, ctx, e, "ev__get-structured-content", `{"location":"Chicago"}`))
		var w struct{ Temperature float64 }
		if err := json.Unmarshal(r.Structured, &w); err != nil || w.Temperature != 36 {
			t.Errorf("structured %s (%v)", r.Structured, err)
		}
	})
	t.Run("image", func(t *testing.T) {
		r := mustOK(t, call(t, ctx, e, "ev__get-tiny-image", `{}`))
		var img *tool.Content
		for i := range r.Content {
			if r.Content[i].Type == tool.ContentImage {
				img = &r.Content[i]
			}
		}
		if img == nil || img.MIMEType != "image/png" || !strings.HasPrefix(string(img.Data), "\x89PNG") {
			t.Fatalf("no PNG image in %+v", r.Content)
		}
	})
	t.Run("resources", func(t *testing.T) {
		r := mustOK(t, call(t, ctx, e, "ev__get-resource-links", `{"count":2}`))
		if !slices.ContainsFunc(r.Content, func(c tool.Content) bool {
			return c.Type == tool.ContentResourceLink && c.URI != ""
		}) {
			t.Errorf("no resource link in %+v", r.Content)
		}
		r = mustOK(t, call(t, ctx, e, "ev__get-resource-reference", `{"resourceType":"Text","resourceId":1}`))
		if !slices.ContainsFunc(r.Content, func(c tool.Content) bool {
			return c.Type == tool.ContentResource && c.Resource != nil && c.Resource.URI != ""
		}) {
			t.Errorf("no embedded resource in %+v", r.Content)
		}
	})
	t.Run("progress", func(t *testing.T) {
		r := mustOK(t, call(t, tool.WithHooks(ctx, hooks), e, "ev__trigger-long-running-operation", `{"duration":0.4,"steps":4}`))
		if !strings.Contains(r.Text(), "completed") {
			t.Errorf("long-running: %q", r.Text())
		}
		// A notification may be handled after the result it came before,
		// when the call has ended and no one listens; most arrive in time.
		mu.Lock()
		defer mu.Unlock()
		if len(progress) < 2 || progress[0].Progress != 1 || progress[0].Total != 4 {
			t.Errorf("progress %+v", progress)
		}
	})
	t.Run("elicitation", func(t *testing.T) {
		r := mustOK(t, call(t, tool.WithHooks(ctx, hooks), e, "ev__trigger-elicitation-request", `{}`))
		if !strings.Contains(r.Text(), "Ada Lovelace") {
			t.Errorf("elicitation: %q", r.Text())
		}
		// A caller that cannot ask anyone would get a question, but this
		// elicitation holds multiple-choice fields, which a question cannot
		// carry: the caller gets an error result that says so, not a hang.
		r = call(t, ctx, e, "ev__trigger-elicitation-request", `{}`)
		if !r.IsError || !strings.Contains(r.Text(), "cannot be asked as a question") {
			t.Errorf("elicitation without an elicitor: %q", r.Text())
		}
	})
	t.Run("sampling", func(t *testing.T) {
		r := mustOK(t, call(t, tool.WithHooks(ctx, hooks), e, "ev__trigger-sampling-request", `{"prompt":"the sky"}`))
		if !strings.Contains(r.Text(), "sampled: ") || !strings.Contains(r.Text(), "stub-model") {
			t.Errorf("sampling: %q", r.Text())
		}
	})
	t.Run("concurrent", func(t *testing.T) {
		var wg sync.WaitGroup
		for i := range 8 {
			wg.Go(func() {
				r := call(t, ctx, e, "ev__get-sum", fmt.Sprintf(`{"a":%d,"b":1}`, i))
				if r.IsError || !strings.Contains(r.Text(), strconv.Itoa(i+1)) {
					t.Errorf("call %d: %q", i, r.Text())
				}
			})
		}
		wg.Wait()
	})
	t.Run("cancel", func(t *testing.T) {
		cctx, cancel := context.WithCancel(ctx)
		time.AfterFunc(200*time.Millisecond, cancel)
		start := time.Now()
		r := call(t, cctx, e, "ev__trigger-long-running-operation", `{"duration":10,"steps":10}`)
		if r.ErrorKind != tool.KindCancelled || time.Since(start) > 3*time.Second {
			t.Errorf("cancel: %s after %s: %q", r.ErrorKind, time.Since(start), r.Text())
		}
		// The session survives a cancelled call.
		mustOK(t, call(t, ctx, e, "ev__echo", `{"message":"still here"}`))
	})
}

func waitFor(t *testing.T, cond func() bool, what string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestCrash kills the server in the middle of a call: the call fails at
// once, and the next call starts the server again.
func TestCrash(t *testing.T) {
	ev := mcptest.Everything(t)
	pidfile := filepath.Join(t.TempDir(), "pid")
	// The shell writes its pid and then becomes the server.
	cmd := []string{"sh", "-c", `echo $$ > "$0"; exec "$@"`, pidfile}
	e, _ := open(t, mcp.Options{}, mcp.Config{Name: "ev", Command: append(cmd, ev...)})
	ctx := context.Background()

	started := make(chan struct{}, 10)
	hooks := tool.Hooks{Progress: func(tool.Progress) { started <- struct{}{} }}
	done := make(chan *tool.Result)
	go func() {
		done <- call(t, tool.WithHooks(ctx, hooks), e, "ev__trigger-long-running-operation", `{"duration":20,"steps":200}`)
	}()
	select {
	case <-started:
	case <-time.After(10 * time.Second):
		t.Fatal("the long-running call reported no progress")
	}
	b, err := os.ReadFile(pidfile)
	if err != nil {
		t.Fatal(err)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	killed := time.Now()
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-done:
		if !r.IsError || r.ErrorKind != tool.KindRuntimeFailure {
			t.Errorf("call in flight: %s %q", r.ErrorKind, r.Text())
		}
		t.Logf("the call failed %s after the kill: %s", time.Since(killed), r.Text())
	case <-time.After(5 * time.Second):
		t.Fatal("the call in flight did not fail after the server was killed")
	}
	r := mustOK(t, call(t, ctx, e, "ev__echo", `{"message":"back"}`))
	if !strings.Contains(r.Text(), "back") {
		t.Errorf("after restart: %q", r.Text())
	}
	b2, _ := os.ReadFile(pidfile)
	if string(b2) == string(b) {
		t.Error("the server was not started again")
	}
}

// freePort returns a loopback port nobody listens on.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// startHTTP runs server-everything over streamable HTTP and returns its URL.
func startHTTP(t *testing.T) string {
	argv := mcptest.EverythingHTTP(t)
	port := freePort(t)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), "PORT="+strconv.Itoa(port))
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	addr := "127.0.0.1:" + strconv.Itoa(port)
	waitFor(t, func() bool {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
		}
		return err == nil
	}, "server-everything to listen on "+addr)
	return "http://" + addr + "/mcp"
}

func TestEverythingHTTP(t *testing.T) {
	url := startHTTP(t)
	var (
		mu    sync.Mutex
		steps int
	)
	hooks := tool.Hooks{
		Progress: func(tool.Progress) { mu.Lock(); steps++; mu.Unlock() },
		Elicit: func(context.Context, *tool.ElicitRequest) (*tool.ElicitResult, error) {
			return &tool.ElicitResult{Action: tool.ElicitDecline}, nil
		},
	}
	prefix := ""
	e, _ := open(t, mcp.Options{}, mcp.Config{Name: "web", URL: url, Prefix: &prefix,
		Headers: map[string]string{"X-Test": "1"}, Deny: []string{"get-env", "toggle-*"}})
	ctx := context.Background()
	if _, ok := e.Lookup("get-env"); ok {
		t.Error("get-env is denied but registered")
	}
	mustOK(t, call(t, ctx, e, "echo", `{"message":"over http"}`))
	r := mustOK(t, call(t, ctx, e, "get-structured-content", `{"location":"New York"}`))
	if !strings.Contains(string(r.Structured), `"temperature":33`) {
		t.Errorf("structured %s", r.Structured)
	}
	// Progress that reaches lathe after the call's result is dropped, as
	// MCP requires; server-everything may send it on the session's own
	// event stream, which is not ordered with the result. The steps are
	// spaced so that on a loaded machine the early ones still arrive
	// while the call is under way.
	mustOK(t, call(t, tool.WithHooks(ctx, hooks), e, "trigger-long-running-operation", `{"duration":2,"steps":4}`))
	mu.Lock()
	if steps < 1 || steps > 4 {
		t.Errorf("%d progress reports, want 1 to 4", steps)
	}
	mu.Unlock()
	waitFor(t, func() bool { _, ok := e.Lookup("trigger-elicitation-request"); return ok }, "elicitation tool")
	r = mustOK(t, call(t, tool.WithHooks(ctx, hooks), e, "trigger-elicitation-request", `{}`))
	if !strings.Contains(r.Text(), "declined") {
		t.Errorf("elicitation: %q", r.Text())
	}
	// The schema is the server's own bytes, read off the wire: its keys in
	// the server's order ("type" first), not sorted as a Go map's would be.
	def, _ := e.Lookup("get-sum")
	if i, j := strings.Index(string(def.InputSchema), `"type"`), strings.Index(string(def.InputSchema), `"properties"`); i < 0 || j < i {
		t.Errorf("schema not as sent: %s", def.InputSchema)
	}
}

func TestFilesystem(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "hello.txt"), []byte("hello from disk\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	e, _ := open(t, mcp.Options{}, mcp.Config{Name: "fs", Command: mcptest.Filesystem(t, dir),
		Allow: []string{"read_*", "write_file", "list_directory"}})
	ctx := context.Background()
	var names []string
	for _, d := range e.Tools() {
		names = append(names, d.Name)
	}
	if slices.Contains(names, "fs__move_file") || !slices.Contains(names, "fs__read_text_file") {
		t.Errorf("tools %v", names)
	}
	r := mustOK(t, call(t, ctx, e, "fs__read_text_file", fmt.Sprintf(`{"path":%q}`, filepath.Join(dir, "hello.txt"))))
	if !strings.Contains(r.Text(), "hello from disk") {
		t.Errorf("read: %q", r.Text())
	}
	mustOK(t, call(t, ctx, e, "fs__write_file", fmt.Sprintf(`{"path":%q,"content":"new"}`, filepath.Join(dir, "new.txt"))))
	if b, _ := os.ReadFile(filepath.Join(dir, "new.txt")); string(b) != "new" {
		t.Errorf("written: %q", b)
	}
	// Outside the allowed directory the server refuses: an error result.
	r = call(t, ctx, e, "fs__read_text_file", `{"path":"/etc/hostname"}`)
	if !r.IsError {
		t.Errorf("read outside: %q", r.Text())
	}
}

func TestStartFailures(t *testing.T) {
	e := lathe.New(lathe.Options{})
	defer e.Close()
	ctx := context.Background()
	bad := mcp.Config{Name: "bad", Command: []string{"sh", "-c", "echo cannot start >&2; exit 3"}}
	_, err := mcp.Open(ctx, e, []mcp.Config{bad}, mcp.Options{})
	if err == nil || !strings.Contains(err.Error(), "mcp server bad") || !strings.Contains(err.Error(), "cannot start") {
		t.Errorf("required server: %v", err)
	}

	bad.Optional = true
	var warned []error
	p, err := mcp.Open(ctx, e, []mcp.Config{bad}, mcp.Options{Warn: func(err error) { warned = append(warned, err) }})
	if err != nil || len(warned) != 1 {
		t.Errorf("optional server: %v, warnings %v", err, warned)
	}
	p.Close()

	slow := mcp.Config{Name: "slow", Command: []string{"sleep", "10"}, StartupTimeout: 300 * time.Millisecond}
	start := time.Now()
	_, err = mcp.Open(ctx, e, []mcp.Config{slow}, mcp.Options{})
	if err == nil || !strings.Contains(err.Error(), "startup timeout") || time.Since(start) > 5*time.Second {
		t.Errorf("slow server: %v after %s", err, time.Since(start))
	}

	for _, c := range []mcp.Config{{Name: "none"}, {Name: "both", Command: []string{"x"}, URL: "http://x"}} {
		if _, err := mcp.Open(ctx, e, []mcp.Config{c}, mcp.Options{}); err == nil {
			t.Errorf("%s: no error", c.Name)
		}
	}
}

func TestCollision(t *testing.T) {
	ev := mcptest.Everything(t)
	e := lathe.New(lathe.Options{})
	defer e.Close()
	empty := ""
	cfgs := []mcp.Config{
		{Name: "a", Command: ev, Prefix: &empty, Allow: []string{"echo"}},
		{Name: "b", Command: ev, Prefix: &empty, Allow: []string{"echo"}},
	}
	_, err := mcp.Open(context.Background(), e, cfgs, mcp.Options{})
	if err == nil || !strings.Contains(err.Error(), `"echo"`) || !strings.Contains(err.Error(), "collides") {
		t.Fatalf("collision: %v", err)
	}
	if len(e.Tools()) != 0 {
		t.Errorf("tools left behind: %v", e.Tools())
	}
}

// TestListChanged: a server that adds and removes tools after initialize
// has them added to and removed from the engine, and OnChange is told.
func TestListChanged(t *testing.T) {
	srv := sdk.NewServer(&sdk.Implementation{Name: "changing"}, nil)
	add := func(name string) {
		srv.AddTool(&sdk.Tool{Name: name, InputSchema: json.RawMessage(`{"type":"object"}`)},
			func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
				return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "I am " + name}}}, nil
			})
	}
	add("first")
	h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil)
	ts := httptest.NewServer(h)
	defer ts.Close()

	changed := make(chan struct{}, 10)
	e, p := open(t, mcp.Options{OnChange: func() { changed <- struct{}{} }}, mcp.Config{Name: "c", URL: ts.URL})
	defer p.Close() // before the HTTP server closes: its session ends first
	if _, ok := e.Lookup("c__first"); !ok {
		t.Fatal("no c__first")
	}
	add("second")
	select {
	case <-changed:
	case <-time.After(5 * time.Second):
		t.Fatal("OnChange was not called")
	}
	r := mustOK(t, call(t, context.Background(), e, "c__second", `{}`))
	if r.Text() != "I am second" {
		t.Errorf("second: %q", r.Text())
	}
	srv.RemoveTools("first")
	waitFor(t, func() bool { _, ok := e.Lookup("c__first"); return !ok }, "c__first to go")
}

// TestCancelNotifies: cancelling a call sends notifications/cancelled, so
// the server's handler sees its context end.
func TestCancelNotifies(t *testing.T) {
	srv := sdk.NewServer(&sdk.Implementation{Name: "blocking"}, nil)
	entered, cancelled := make(chan struct{}), make(chan struct{})
	srv.AddTool(&sdk.Tool{Name: "block", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, _ *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			close(entered)
			<-ctx.Done()
			close(cancelled)
			return nil, ctx.Err()
		})
	ts := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil))
	defer ts.Close()
	e, p := open(t, mcp.Options{}, mcp.Config{Name: "b", URL: ts.URL})
	defer p.Close()

	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		<-entered
		cancel()
	}()
	r := call(t, ctx, e, "b__block", `{}`)
	if r.ErrorKind != tool.KindCancelled {
		t.Errorf("kind %s: %s", r.ErrorKind, r.Text())
	}
	select {
	case <-cancelled:
	case <-time.After(5 * time.Second):
		t.Fatal("the server's handler was not cancelled")
	}
}
