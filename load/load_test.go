package load_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/lathe-tools/lathe"
	"github.com/lathe-tools/lathe/internal/mcptest"
	"github.com/lathe-tools/lathe/load"
	"github.com/lathe-tools/lathe/policy"
	"github.com/lathe-tools/lathe/tool"
	"github.com/lathe-tools/lathe/trust"
)

// serverEnv switches the test binary into an upstream MCP server that
// writes its pid to the file the variable names.
const serverEnv = "LATHE_LOAD_TEST_SERVER"

// lateEnv switches the test binary into an upstream MCP server that starts
// with no tools and adds one, "late", a moment after a client connects.
const lateEnv = "LATHE_LOAD_TEST_LATE"

func serveLate() {
	srv := sdk.NewServer(&sdk.Implementation{Name: "late", Version: "1"}, &sdk.ServerOptions{HasTools: true})
	var once sync.Once
	srv.AddReceivingMiddleware(func(next sdk.MethodHandler) sdk.MethodHandler {
		return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
			res, err := next(ctx, method, req)
			if method == "tools/list" {
				// After the first listing, which found none, the tool comes.
				once.Do(func() {
					go func() {
						time.Sleep(200 * time.Millisecond)
						sdk.AddTool(srv, &sdk.Tool{Name: "late", Description: "Added after the start."},
							func(context.Context, *sdk.CallToolRequest, struct{}) (*sdk.CallToolResult, any, error) {
								return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "late here"}}}, nil, nil
							})
					}()
				})
			}
			return res, err
		}
	})
	if err := srv.Run(context.Background(), &sdk.StdioTransport{}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func TestMain(m *testing.M) {
	if os.Getenv(lateEnv) != "" {
		serveLate()
		os.Exit(0)
	}
	if os.Getenv(liarEnv) != "" {
		mcptest.ServeLiar("liar")
		os.Exit(0)
	}
	if pidFile := os.Getenv(serverEnv); pidFile != "" {
		if err := os.WriteFile(pidFile, []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		mcptest.ServeEnv("load-test")
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// workspace makes a workspace holding files (name → content) with lathe's
// state, cache and user configuration kept in a directory of the test, and
// returns its path.
func workspace(t *testing.T, files map[string]string) string {
	t.Helper()
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_STATE_HOME", filepath.Join(home, "state"))
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(home, "config"))
	t.Setenv("LATHE_CACHE_DIR", filepath.Join(home, "cache"))
	ws := filepath.Join(home, "ws")
	for name, content := range files {
		p := filepath.Join(ws, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	return ws
}

func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func names(w *load.Workspace) string {
	var out []string
	for _, d := range w.Engine.Tools() {
		out = append(out, d.Name)
	}
	return strings.Join(out, " ")
}

const localTool = `
[tools.hello]
command = ["echo", "hello", "{name}"]
`

// A file that starts programs applies only once trusted: untrusted, its
// tool is left out and named; RequireTrust makes that an error; the Trust
// hook trusts it, and the trust is recorded for the next Open.
func TestOpenTrust(t *testing.T) {
	ws := workspace(t, map[string]string{"lathe.toml": localTool})
	ctx := testContext(t)

	w, err := load.Open(ctx, load.Options{Dir: ws})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := w.Engine.Lookup("hello"); ok {
		t.Error("the tool of an untrusted file was registered")
	}
	if len(w.Untrusted) != 1 || w.Untrusted[0].File != filepath.Join(ws, "lathe.toml") || w.Untrusted[0].Status != trust.New {
		t.Errorf("Untrusted = %+v, want the new lathe.toml", w.Untrusted)
	}
	w.Close()

	_, err = load.Open(ctx, load.Options{Dir: ws, RequireTrust: true})
	var te *load.TrustError
	if !errors.As(err, &te) || len(te.Untrusted) != 1 || !strings.Contains(err.Error(), "hello") {
		t.Fatalf("RequireTrust: Open = %v, want a TrustError naming what the file would do", err)
	}

	var asked []load.Untrusted
	approvals := 0
	w, err = load.Open(ctx, load.Options{Dir: ws, Trust: func(_ context.Context, u load.Untrusted) (bool, error) {
		asked = append(asked, u)
		return true, nil
	}, Approver: allowOnce(&approvals)})
	if err != nil {
		t.Fatal(err)
	}
	if len(asked) != 1 || len(asked[0].Widenings) == 0 {
		t.Errorf("Trust was asked %+v, want once, with what the file would do", asked)
	}
	out := w.Engine.Call(ctx, &tool.Call{Name: "hello", Arguments: json.RawMessage(`{"name":"you"}`)})
	if out.Result == nil || strings.TrimSpace(out.Result.Text()) != "hello you" || approvals != 1 {
		t.Errorf("call = %+v after %d approvals, want one", out.Result, approvals)
	}
	w.Close()

	w, err = load.Open(ctx, load.Options{Dir: ws, RequireTrust: true})
	if err != nil {
		t.Fatalf("after trusting, Open = %v", err)
	}
	if _, ok := w.Engine.Lookup("hello"); !ok || len(w.Untrusted) != 0 {
		t.Errorf("after trusting: tools %s, untrusted %v", names(w), w.Untrusted)
	}
	w.Close()
}

func TestOpenConfigError(t *testing.T) {
	ws := workspace(t, map[string]string{"lathe.toml": "[tools.raed_file]\nsummary = \"x\"\n"})
	_, err := load.Open(testContext(t), load.Options{Dir: ws})
	var ce *load.ConfigError
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), "lathe.toml:1") || !strings.Contains(err.Error(), "raed_file") {
		t.Fatalf("Open = %v, want a ConfigError naming lathe.toml:1 and raed_file", err)
	}
}

// Options.Dir empty finds the workspace from the current directory.
func TestOpenFindsWorkspace(t *testing.T) {
	ws := workspace(t, map[string]string{"lathe.toml": "[tools.write_file]\nenable = false\n", "a/b/.keep": ""})
	t.Chdir(filepath.Join(ws, "a", "b"))
	w, err := load.Open(testContext(t), load.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if w.Dir != ws {
		t.Errorf("Dir = %s, want %s", w.Dir, ws)
	}
	if _, ok := w.Engine.Lookup("write_file"); ok {
		t.Error("the workspace's lathe.toml was not applied")
	}
}

// The pool of upstream servers belongs to the engine once opened: a
// server whose tools are all left out keeps its session (it may list tools
// later) and is stopped by the workspace's Close (through the engine), as is
// one whose tools the engine holds.
func TestPoolClosedWithWorkspace(t *testing.T) {
	for _, tc := range []struct{ name, extra string }{
		{"no tools", `deny = ["*"]`},
		{"tools", ``},
	} {
		t.Run(tc.name, func(t *testing.T) {
			exe, err := os.Executable()
			if err != nil {
				t.Fatal(err)
			}
			pidFile := filepath.Join(t.TempDir(), "pid")
			ws := workspace(t, map[string]string{"lathe.toml": fmt.Sprintf(
				"[mcp.up]\ncommand = [%q]\nenv = { %s = %q }\n%s\n", exe, serverEnv, pidFile, tc.extra)})
			ctx := testContext(t)
			w, err := load.Open(ctx, load.Options{Dir: ws, Trust: func(context.Context, load.Untrusted) (bool, error) { return true, nil }})
			if err != nil {
				t.Fatal(err)
			}
			b, err := os.ReadFile(pidFile)
			if err != nil {
				w.Close()
				t.Fatalf("the server did not start: %v", err)
			}
			pid, _ := strconv.Atoi(string(b))
			_, has := w.Engine.Lookup("up__environ")
			if has != (tc.extra == "") {
				t.Errorf("up__environ registered = %v; tools: %s", has, names(w))
			}
			if !alive(pid) {
				t.Errorf("the server %d stopped before the workspace closed", pid)
			}
			w.Close()
			deadline := time.Now().Add(10 * time.Second)
			for alive(pid) {
				if time.Now().After(deadline) {
					syscall.Kill(pid, syscall.SIGKILL)
					t.Fatalf("the server %d still runs 10s after Close", pid)
				}
				time.Sleep(20 * time.Millisecond)
			}
		})
	}
}

// A server that starts with no tools keeps its session, and the tools it
// lists later reach the engine and its subscribers (lathe serve sends
// notifications/tools/list_changed from there).
func TestToolsListedLater(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	ws := workspace(t, map[string]string{"lathe.toml": fmt.Sprintf(
		"[mcp.up]\ncommand = [%q]\nenv = { %s = \"1\" }\n", exe, lateEnv)})
	ctx := testContext(t)
	w, err := load.Open(ctx, load.Options{Dir: ws, Approver: allowOnce(new(int)),
		Trust: func(context.Context, load.Untrusted) (bool, error) { return true, nil }})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	changed := make(chan struct{}, 8)
	cancel := w.Engine.Subscribe(func(ev lathe.Event) {
		if slices.Contains(ev.Added, "up__late") {
			changed <- struct{}{}
		}
	}, lathe.EventToolsChanged)
	defer cancel()
	if _, ok := w.Engine.Lookup("up__late"); !ok {
		select {
		case <-changed:
		case <-time.After(20 * time.Second):
			t.Fatalf("no tools-changed event 20s after the start; tools: %s", names(w))
		}
	}
	out := w.Engine.Call(ctx, &tool.Call{Name: "up__late", Arguments: json.RawMessage(`{}`)})
	if out.Result == nil || out.Result.Text() != "late here" {
		t.Fatalf("up__late = %+v", out.Result)
	}
}

// alive reports whether pid is a running process, not a zombie.
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return syscall.Kill(pid, 0) == nil
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}

// syncBuffer is a bytes.Buffer safe for the log's concurrent writers.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// Options.Logger receives the call records and the standard error of a
// process tool.
func TestOpenLogger(t *testing.T) {
	ws := workspace(t, map[string]string{"lathe.toml": `
[tools.noisy]
command = ["sh", "-c", "echo to-stderr-{word} >&2; echo out"]
`})
	var buf syncBuffer
	ctx := testContext(t)
	w, err := load.Open(ctx, load.Options{
		Dir:      ws,
		Trust:    func(context.Context, load.Untrusted) (bool, error) { return true, nil },
		Approver: allowOnce(new(int)),
		Logger:   slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug})),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	out := w.Engine.Call(ctx, &tool.Call{Name: "noisy", Arguments: json.RawMessage(`{"word":"xyzzy"}`)})
	if out.Result == nil || out.Result.IsError {
		t.Fatalf("call = %+v", out.Result)
	}
	log := buf.String()
	for _, want := range []string{"to-stderr-xyzzy", "noisy"} {
		if !strings.Contains(log, want) {
			t.Errorf("the log lacks %q:\n%s", want, log)
		}
	}
}

// allowOnce is an approver that allows every call it is asked about and
// counts them.
func allowOnce(n *int) policy.Approver {
	return policy.ApproverFunc(func(context.Context, *policy.Request) (policy.Answer, error) {
		*n++
		return policy.Answer{Verdict: policy.AllowOnce}, nil
	})
}
