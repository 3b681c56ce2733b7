package vfs_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/lathe-tools/lathe"
	"github.com/lathe-tools/lathe/host"
	"github.com/lathe-tools/lathe/runtime/process"
	"github.com/lathe-tools/lathe/runtime/process/protocol"
	"github.com/lathe-tools/lathe/runtime/vfs"
	"github.com/lathe-tools/lathe/runtimetest"
	"github.com/lathe-tools/lathe/sandbox"
	"github.com/lathe-tools/lathe/sdk"
	"github.com/lathe-tools/lathe/tool"
)

func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == toolArg {
		sdk.Serve(vfsTools()...)
	}
	if len(os.Args) > 2 && os.Args[1] == childArg {
		lingerMain()
		os.Exit(0)
	}
	// A binary built with -race sleeps a second before it exits, unless
	// told not to; the tool reads GORACE, which it alone is let through.
	os.Setenv("GORACE", strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0"))
	vfs.PassEnvForTests("GORACE")
	// The tests' temporary directories, some of them workspaces with write
	// access to everything, lie apart from the test binary, which a VFS
	// tool may not be able to rewrite.
	tmp, err := os.MkdirTemp("", "lathe-vfs-test")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Setenv("TMPDIR", tmp)
	goleak.VerifyTestMain(m, goleak.Cleanup(func(code int) {
		os.RemoveAll(tmp)
		os.Exit(code)
	}))
}

// goCommand runs the test binary as the Go tool, from workspace ws.
func goCommand(ws string) process.Command {
	return process.Command{Argv: []string{os.Args[0], toolArg}, Dir: ws}
}

var testOpts = vfs.Options{MaxOutputBytes: 1 << 20, GracePeriod: time.Second}

// requireStandard skips where the standard sandbox cannot run here, after
// checking that a VFS tool then fails rather than run unconfined.
func requireStandard(t *testing.T) {
	t.Helper()
	standardOnce.Do(func() {
		ws, err := os.MkdirTemp("", "lathe-vfs")
		if err != nil {
			standardSkip = err.Error()
			return
		}
		defer os.RemoveAll(ws)
		cleanup, err := sandbox.Config{Workspace: ws}.Wrap(exec.Command("/bin/true"))
		cleanup()
		if errors.Is(err, sandbox.ErrUnavailable) {
			standardSkip = "the standard sandbox is not available here: " + err.Error()
		}
	})
	if standardSkip != "" {
		t.Skip(standardSkip)
	}
}

var (
	standardOnce sync.Once
	standardSkip string
)

// schemas describes the Go tool once per test binary, confined as its
// calls are: discovery runs under the same sandbox.
var schemas = sync.OnceValues(func() ([]protocol.ToolSchema, error) {
	ws, err := os.MkdirTemp("", "lathe-vfs-describe")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(ws)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return vfs.Describe(ctx, goCommand(ws), testOpts)
})

// newTool returns the Go tool name as a VFS tool of workspace ws with the
// host permissions perms.
func newTool(t *testing.T, cmd process.Command, name string, perms host.Permissions, opts vfs.Options) tool.Tool {
	t.Helper()
	s, err := schemas()
	if err != nil {
		t.Fatalf("describing the tool: %v", err)
	}
	h, err := host.New(host.Config{Tool: name, Workspace: cmd.Dir, Perms: perms})
	if err != nil {
		t.Fatal(err)
	}
	opts.Tool = name
	rt, err := vfs.New(cmd, h, opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range s {
		if d.Name == name {
			return tool.Tool{Runtime: rt, Definition: tool.Definition{Name: name, Summary: d.Summary,
				InputSchema: d.Parameters, Source: "local", Runtime: vfs.RuntimeName}}
		}
	}
	t.Fatalf("the binary does not describe %q", name)
	return tool.Tool{}
}

// engineWith registers tl in an engine closed with the test.
func engineWith(t *testing.T, tl ...tool.Tool) *lathe.Engine {
	t.Helper()
	e := lathe.New(lathe.Options{})
	t.Cleanup(func() { e.Close() })
	if err := e.Register(tl...); err != nil {
		t.Fatal(err)
	}
	return e
}

// callJSON calls name with args and returns the structured result.
func callJSON(t *testing.T, e *lathe.Engine, name string, args any) map[string]any {
	t.Helper()
	raw, _ := json.Marshal(args)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out := e.Call(ctx, &tool.Call{Name: name, Arguments: raw})
	if ctx.Err() != nil {
		t.Fatalf("the call of %s with %s did not end in 30s", name, raw)
	}
	if out.Result == nil || out.Result.IsError {
		t.Fatalf("the call of %s with %s failed: %+v %v", name, raw, out.Result, out.Err())
	}
	var m map[string]any
	if err := json.Unmarshal(out.Result.Structured, &m); err != nil {
		t.Fatalf("the call of %s: structured %s: %v", name, out.Result.Structured, err)
	}
	return m
}

// TestConformanceGo runs the conformance suite against tools written in Go
// with the SDK, run as VFS tools. The workspace holds the suite's
// temporary directories, since the sleep tool writes its marker through the
// host.
func TestConformanceGo(t *testing.T) {
	requireStandard(t)
	ws := tempRoot(t)
	runtimetest.Run(t, func(t *testing.T, name string) tool.Tool {
		return newTool(t, goCommand(ws), name, host.Permissions{Write: []string{ws + "/**"}}, testOpts)
	})
}

// tempRoot returns the real path of the directory the test's temporary
// directories are made in.
func tempRoot(t *testing.T) string {
	t.Helper()
	d, err := filepath.EvalSymlinks(os.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// TestNewRefuses: what would defeat the confinement is a construction
// error, never a weaker run.
func TestNewRefuses(t *testing.T) {
	h, _ := host.New(host.Config{Tool: "t", Workspace: t.TempDir()})
	cases := map[string]struct {
		cmd  process.Command
		opts vfs.Options
		want string
	}{
		"dev":          {goCommand("/"), vfs.Options{Sandbox: sandbox.Config{Profile: sandbox.Dev}}, "dev profile"},
		"placeholders": {process.Command{Argv: []string{"/bin/echo", "{x}"}}, vfs.Options{}, "placeholders"},
		"shell":        {process.Command{Argv: []string{"echo hi"}, Shell: true}, vfs.Options{}, "shell"},
		"env":          {process.Command{Argv: []string{"/bin/echo"}, Env: []string{"AWS_SECRET"}}, vfs.Options{}, "env/get"},
		"empty":        {process.Command{}, vfs.Options{}, "empty"},
	}
	for name, c := range cases {
		if _, err := vfs.New(c.cmd, h, c.opts); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: New = %v, want an error about %q", name, err, c.want)
		}
	}
	if _, err := vfs.New(goCommand("/"), nil, vfs.Options{}); err == nil {
		t.Error("New without a host was accepted")
	}
}

// TestFilesGiven: the process is given its program and the regular files
// its command names, never a directory, so that an argument "." cannot
// hand it the workspace.
func TestFilesGiven(t *testing.T) {
	ws := t.TempDir()
	script := filepath.Join(ws, "tool.py")
	os.WriteFile(script, []byte("print(1)\n"), 0o644)
	os.Symlink(script, filepath.Join(ws, "link.py"))
	h, _ := host.New(host.Config{Tool: "t", Workspace: ws})
	rt, err := vfs.New(process.Command{Argv: []string{"/bin/sh", "link.py", ".", ws, "-x", "missing"}, Dir: ws}, h, vfs.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	real, _ := filepath.EvalSymlinks(script)
	// The program is in the system paths, which the process reads already.
	if got := rt.Files(); len(got) != 1 || got[0] != real {
		t.Errorf("Files() = %q, want the script %s only", got, real)
	}
	// A tool that may write its own script could rewrite itself.
	for _, w := range []string{"**", "tool.py", ws + "/", "*.py"} {
		hw, err := host.New(host.Config{Tool: "t", Workspace: ws, Perms: host.Permissions{Write: []string{w}}})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := vfs.New(process.Command{Argv: []string{"/bin/sh", "link.py"}, Dir: ws}, hw, vfs.Options{}); err == nil ||
			!strings.Contains(err.Error(), "write scope") {
			t.Errorf("write = [%q]: New = %v, want a refusal: the tool could rewrite its script", w, err)
		}
	}
	hw, _ := host.New(host.Config{Tool: "t", Workspace: ws, Perms: host.Permissions{Write: []string{"out/"}}})
	if _, err := vfs.New(process.Command{Argv: []string{"/bin/sh", "link.py"}, Dir: ws}, hw, vfs.Options{}); err != nil {
		t.Errorf("write = [\"out/\"]: %v", err)
	}
	rt2, err := vfs.New(process.Command{Argv: []string{os.Args[0], "tool.py"}, Dir: ws}, h, vfs.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer rt2.Close()
	prog, _ := filepath.EvalSymlinks(os.Args[0])
	if got := rt2.Files(); len(got) != 2 || got[0] != prog || got[1] != real {
		t.Errorf("Files() = %q, want the program %s and the script %s", got, prog, real)
	}
}

// TestHostMethods calls every method of the host API from a VFS tool,
// through the SDK's typed client and an engine, in a real workspace: what
// the permissions allow is done, what they do not is denied, and log,
// progress and ask reach the call's hooks.
func TestHostMethods(t *testing.T) {
	requireStandard(t)
	ws, _ := workspace(t)
	if err := os.Mkdir(filepath.Join(ws, "out"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("LATHE_VFS_TEST_VAR", "the-value")
	t.Setenv("LATHE_VFS_TEST_SECRET", "hunter2")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, "fetched page") }))
	defer srv.Close()
	perms := host.Permissions{Write: []string{"out/"}, Env: []string{"LATHE_VFS_TEST_VAR"},
		Net: []string{"127.0.0.1"}, Run: []string{"echo"}}
	e := engineWith(t, newTool(t, goCommand(ws), "sdkops", perms, testOpts))
	// Every operation, allowed or denied, is an engine event of its call.
	// Events come on a goroutine of their own, a call's in order: its end
	// comes after its operations.
	var ops []string
	var opsMu sync.Mutex
	finished := make(chan struct{}, 1)
	stopEvents := e.Subscribe(func(ev lathe.Event) {
		if ev.Kind == lathe.EventCallFinished {
			finished <- struct{}{}
			return
		}
		if ev.Operation != nil {
			opsMu.Lock()
			ops = append(ops, ev.Operation.Kind+" "+ev.Operation.Approval+" "+ev.Operation.Subject)
			opsMu.Unlock()
		}
	}, lathe.EventOperation, lathe.EventCallFinished)
	defer stopEvents()

	var mu sync.Mutex
	var logs []string
	var progress []tool.Progress
	var asked []string
	ctx := tool.WithHooks(context.Background(), tool.Hooks{
		Log: func(m tool.LogMessage) { mu.Lock(); logs = append(logs, string(m.Data)); mu.Unlock() },
		Progress: func(p tool.Progress) {
			mu.Lock()
			progress = append(progress, p)
			mu.Unlock()
		},
		Elicit: func(_ context.Context, r *tool.ElicitRequest) (*tool.ElicitResult, error) {
			mu.Lock()
			asked = append(asked, r.Message)
			mu.Unlock()
			return &tool.ElicitResult{Action: tool.ElicitAccept, Content: map[string]any{"ok": true}}, nil
		},
	})
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	raw, _ := json.Marshal(opsIn{URL: srv.URL + "/page"})
	out := e.Call(ctx, &tool.Call{Name: "sdkops", Arguments: raw})
	if out.Result == nil || out.Result.IsError {
		t.Fatalf("sdkops: %+v %v", out.Result, out.Err())
	}
	var got map[string]any
	if err := json.Unmarshal(out.Result.Structured, &got); err != nil {
		t.Fatal(err)
	}
	js := func(k string) string { b, _ := json.Marshal(got[k]); return string(b) }
	checks := map[string]string{
		"write": "null", "read": `"hello vfs"`, "remove": "null",
		"log": "null", "progress": "null",
	}
	for k, want := range checks {
		if js(k) != want {
			t.Errorf("%s = %s, want %s", k, js(k), want)
		}
	}
	for k, want := range map[string]string{
		"stat":         `"size":9`,
		"list":         `"name":"a.txt"`,
		"stat_removed": fmt.Sprintf(`"code":%d`, host.CodeFailed),
		"env":          `"set":true,"value":"the-value"`,
		"env_denied":   `"denied":true`,
		"ask":          `"action":"accept"`,
		"run":          `"stdout":"ran\n"`,
		"fetch":        `"body":"fetched page"`,
		"read_denied":  `"denied":true`,
	} {
		if !strings.Contains(js(k), want) {
			t.Errorf("%s = %s, want it to hold %s", k, js(k), want)
		}
	}
	if strings.Contains(string(out.Result.Structured), "hunter2") {
		t.Error("a variable outside env reached the tool")
	}
	if _, err := os.Stat(filepath.Join(ws, "out", "a.txt")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("out/a.txt after fs/remove: %v", err)
	}
	select {
	case <-finished:
	case <-time.After(10 * time.Second):
		t.Fatal("the call's end was not published within 10s")
	}
	opsMu.Lock()
	for _, want := range []string{"write allow out/a.txt", "read allow out/a.txt", "remove allow out/a.txt",
		"env deny LATHE_VFS_TEST_SECRET", "read deny secret.txt", "run allow echo"} {
		if !slices.ContainsFunc(ops, func(o string) bool { return strings.HasPrefix(o, want) }) {
			t.Errorf("no operation event %q among %q", want, ops)
		}
	}
	opsMu.Unlock()
	mu.Lock()
	defer mu.Unlock()
	if len(logs) != 1 || !strings.Contains(logs[0], "logged from vfs") {
		t.Errorf("logs = %q", logs)
	}
	if len(progress) != 1 || progress[0].Progress != 1 || progress[0].Total != 2 {
		t.Errorf("progress = %+v", progress)
	}
	if len(asked) != 1 || asked[0] != "Proceed?" {
		t.Errorf("asked = %q", asked)
	}
}
