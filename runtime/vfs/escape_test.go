package vfs_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lathe-tools/lathe/host"
	"github.com/lathe-tools/lathe/runtime/process"
	"github.com/lathe-tools/lathe/runtime/vfs"
	"github.com/lathe-tools/lathe/tool"
)

// The escape suite of VFS tools: a hostile tool that makes its own system
// calls for what it was not given, or abuses the pipe to lathe. Each attack
// is first run by the same tool as a plain process tool, where it works,
// so that its denial counts.

// asProcess runs the Go tool name as a plain process tool in ws, with
// extra variables passed; what it can do there is what the VFS runtime
// must take away.
func asProcess(t *testing.T, ws, name string, args any, env ...string) map[string]any {
	t.Helper()
	cmd := goCommand(ws)
	cmd.Env = append([]string{"GORACE"}, env...)
	rt, err := process.New(cmd, process.Options{Tool: name, GracePeriod: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	return structured(t, execute(t, rt, name, args))
}

// execute runs the tool name of rt with args, within 30 seconds.
func execute(t *testing.T, rt tool.Runtime, name string, args any) *tool.Outcome {
	t.Helper()
	raw, _ := json.Marshal(args)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := rt.Execute(ctx, &tool.Definition{Name: name}, &tool.Call{ID: "c1", Name: name, Arguments: raw})
	if ctx.Err() != nil {
		t.Fatalf("%s with %s was still running after 30s", name, raw)
	}
	if err != nil {
		t.Fatalf("%s with %s: %v", name, raw, err)
	}
	return out
}

func structured(t *testing.T, out *tool.Outcome) map[string]any {
	t.Helper()
	if out.Result == nil || out.Result.IsError {
		t.Fatalf("got %+v, want a success", out.Result)
	}
	var m map[string]any
	if err := json.Unmarshal(out.Result.Structured, &m); err != nil {
		t.Fatalf("structured %s: %v", out.Result.Structured, err)
	}
	return m
}

// asVFS runs the Go tool name as a VFS tool of ws with perms.
func asVFS(t *testing.T, ws, name string, perms host.Permissions, args any) map[string]any {
	t.Helper()
	tl := newTool(t, goCommand(ws), name, perms, testOpts)
	defer tl.Runtime.(tool.Closer).Close()
	return structured(t, execute(t, tl.Runtime, name, args))
}

// workspace returns a workspace holding secret.txt, and a directory beside
// it holding another secret, both real paths.
func workspace(t *testing.T) (ws, outside string) {
	t.Helper()
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ws, outside = filepath.Join(base, "ws"), filepath.Join(base, "outside")
	for _, d := range []string{ws, outside, filepath.Join(outside, ".ssh")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for p, data := range map[string]string{
		filepath.Join(ws, "secret.txt"):            "WORKSPACE-SECRET",
		filepath.Join(outside, "secret.txt"):       "OUTSIDE-SECRET",
		filepath.Join(outside, ".ssh", "id_rsa"):   "PRIVATE-KEY",
		filepath.Join(outside, ".aws/credentials"): "AWS-KEY",
	} {
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(filepath.Join(outside, "secret.txt"), filepath.Join(ws, "link")); err != nil {
		t.Fatal(err)
	}
	return ws, outside
}

// TestEscapeOwnFiles: the tool opens files itself, in the workspace it was
// not given and outside it (a home's keys), lists the workspace, and
// writes into it. As a process each works; as a VFS tool none does.
func TestEscapeOwnFiles(t *testing.T) {
	requireStandard(t)
	ws, outside := workspace(t)
	reads := map[string]struct{ path, want string }{
		"workspace file":     {filepath.Join(ws, "secret.txt"), "WORKSPACE-SECRET"},
		"relative":           {"secret.txt", "WORKSPACE-SECRET"},
		"symlink":            {filepath.Join(ws, "link"), "OUTSIDE-SECRET"},
		"ssh key":            {filepath.Join(outside, ".ssh", "id_rsa"), "PRIVATE-KEY"},
		"cloud credentials":  {filepath.Join(outside, ".aws", "credentials"), "AWS-KEY"},
		"dotdot from a file": {filepath.Join(ws, "..", "outside", "secret.txt"), "OUTSIDE-SECRET"},
	}
	if b, err := os.ReadFile("/etc/shadow"); err == nil && len(b) > 0 {
		reads["host shadow"] = struct{ path, want string }{"/etc/shadow", strings.SplitN(string(b), ":", 2)[0]}
	}
	for name, r := range reads {
		t.Run("read "+name, func(t *testing.T) {
			args := probeIn{Op: "read", Path: r.path}
			if got := asProcess(t, ws, "probe", args); !strings.Contains(fmt.Sprint(got["data"]), r.want) {
				t.Fatalf("as a process the tool could not read %s (%v), so the test proves nothing", r.path, got)
			}
			got := asVFS(t, ws, "probe", host.Permissions{Read: []string{"**"}}, args)
			if got["error"] == nil || strings.Contains(fmt.Sprint(got), r.want) {
				t.Errorf("a VFS tool read %s itself: %v", r.path, got)
			}
		})
	}
	t.Run("list the workspace", func(t *testing.T) {
		args := probeIn{Op: "list", Path: ws}
		if got := asProcess(t, ws, "probe", args); !strings.Contains(fmt.Sprint(got["names"]), "secret.txt") {
			t.Fatalf("as a process the tool could not list the workspace: %v", got)
		}
		if got := asVFS(t, ws, "probe", host.Permissions{}, args); got["error"] == nil {
			t.Errorf("a VFS tool listed the workspace itself: %v", got)
		}
	})
	t.Run("write into the workspace", func(t *testing.T) {
		planted := filepath.Join(ws, "planted")
		if got := asProcess(t, ws, "probe", probeIn{Op: "write", Path: planted}); got["written"] != true {
			t.Fatalf("as a process the tool could not write: %v", got)
		}
		os.Remove(planted)
		got := asVFS(t, ws, "probe", host.Permissions{Write: []string{"**"}}, probeIn{Op: "write", Path: planted})
		if _, err := os.Stat(planted); err == nil || got["error"] == nil {
			t.Errorf("a VFS tool wrote into the workspace itself: %v", got)
		}
	})
	t.Run("working directory", func(t *testing.T) {
		got := asVFS(t, ws, "probe", host.Permissions{}, probeIn{Op: "wd"})
		if got["wd"] != "/tmp" {
			t.Errorf("the working directory is %v, want the run's own /tmp", got["wd"])
		}
	})
}

// TestEscapeNetwork: the tool connects to a server on the loopback
// interface itself. As a process it gets the page; as a VFS tool it has no
// network at all.
func TestEscapeNetwork(t *testing.T) {
	requireStandard(t)
	ws, _ := workspace(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, "THE-PAGE") }))
	defer srv.Close()
	args := probeIn{Op: "connect", Addr: srv.Listener.Addr().String()}
	if got := asProcess(t, ws, "probe", args); !strings.Contains(fmt.Sprint(got["data"]), "THE-PAGE") {
		t.Fatalf("as a process the tool could not reach the server (%v), so the test proves nothing", got)
	}
	got := asVFS(t, ws, "probe", host.Permissions{Net: []string{"127.0.0.1"}}, args)
	if got["error"] == nil || strings.Contains(fmt.Sprint(got), "THE-PAGE") {
		t.Errorf("a VFS tool reached the network itself: %v", got)
	}
}

// TestEscapeEnvironment: a secret in lathe's environment reaches a process
// tool that lists it; a VFS tool gets PATH, LANG, TERM, HOME and TMPDIR
// only, whatever it may read through env/get.
func TestEscapeEnvironment(t *testing.T) {
	requireStandard(t)
	ws, _ := workspace(t)
	t.Setenv("LATHE_TEST_SECRET", "hunter2")
	if got := asProcess(t, ws, "probe", probeIn{Op: "env"}, "LATHE_TEST_SECRET"); !strings.Contains(fmt.Sprint(got["env"]), "hunter2") {
		t.Fatalf("the process tool did not get the variable (%v), so the test proves nothing", got)
	}
	got := asVFS(t, ws, "probe", host.Permissions{Env: []string{"LATHE_TEST_SECRET"}}, probeIn{Op: "env"})
	allowed := map[string]bool{"PATH": true, "LANG": true, "TERM": true, "HOME": true, "TMPDIR": true, "GORACE": true}
	env, _ := got["env"].([]any)
	if len(env) == 0 {
		t.Fatalf("no environment reported: %v", got)
	}
	for _, kv := range env {
		name, _, _ := strings.Cut(fmt.Sprint(kv), "=")
		if !allowed[name] {
			t.Errorf("a VFS tool's process got %s", kv)
		}
	}
}

// rawCall runs the raw tool, which writes lines itself and reports the
// response lines it read.
func rawCall(t *testing.T, in rawIn, opts vfs.Options) (*tool.Outcome, error) {
	t.Helper()
	ws, _ := workspace(t)
	tl := newTool(t, goCommand(ws), "raw", host.Permissions{}, opts)
	defer tl.Runtime.(tool.Closer).Close()
	raw, _ := json.Marshal(in)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := tl.Runtime.Execute(ctx, &tl.Definition, &tool.Call{Name: "raw", Arguments: raw})
	if ctx.Err() != nil {
		t.Fatal("the raw tool's call was still running after 30s")
	}
	return out, err
}

// TestMalformedRequests: lines that are broken requests get JSON-RPC's
// errors, by id where there is one, and the call goes on.
func TestMalformedRequests(t *testing.T) {
	requireStandard(t)
	out, err := rawCall(t, rawIn{Lines: []string{
		`{"jsonrpc":"2.0","id":1,"method":`,
		`{"jsonrpc":"2.0","id":{"x":1},"method":"log","params":{"message":"hi"}}`,
		`{"jsonrpc":"1.0","id":3,"method":"log"}`,
		`{"jsonrpc":"2.0","id":4}`,
		`not json at all`,
	}, Responses: 4}, testOpts)
	if err != nil {
		t.Fatal(err)
	}
	m := structured(t, out)
	rs, _ := m["responses"].([]any)
	if len(rs) != 4 {
		t.Fatalf("the tool read %d responses, want 4: %v", len(rs), m)
	}
	want := map[string]int{"null/-32700": 0, "null/-32600": 0, "3/-32600": 0, "4/-32600": 0}
	for _, r := range rs {
		var resp host.Response
		if err := json.Unmarshal([]byte(fmt.Sprint(r)), &resp); err != nil || resp.Error == nil {
			t.Errorf("response %v: want an error (%v)", r, err)
			continue
		}
		want[fmt.Sprintf("%s/%d", resp.ID, resp.Error.Code)]++
	}
	for k, n := range want {
		if n != 1 {
			t.Errorf("id/code %s answered %d times, want once; responses %v", k, n, rs)
		}
	}
}

// TestRequestTooLarge: a line over the limit gets CodeTooLarge and fails
// the call, which ends at once rather than at its deadline.
func TestRequestTooLarge(t *testing.T) {
	requireStandard(t)
	opts := testOpts
	opts.MaxRequestBytes = 64 << 10
	line := `{"jsonrpc":"2.0","id":1,"method":"fs/write","params":{"path":"x","data":"` + strings.Repeat("A", 100<<10) + `"}}`
	start := time.Now()
	_, err := rawCall(t, rawIn{Lines: []string{line}, Responses: 1}, opts)
	if !errors.Is(err, vfs.ErrTooLarge) {
		t.Fatalf("err = %v, want one matching ErrTooLarge", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("the call ended %v later", d)
	}
}

// TestRequestFlood: a tool that sends requests without end and reads no
// response is held back (lathe stops reading it once MaxPending requests
// wait), not served with a goroutine each; its call ends at its deadline
// and the engine goes on.
func TestRequestFlood(t *testing.T) {
	requireStandard(t)
	ws, _ := workspace(t)
	opts := testOpts
	opts.MaxPending = 8
	tl := newTool(t, goCommand(ws), "raw", host.Permissions{}, opts)
	defer tl.Runtime.(tool.Closer).Close()
	lines := make([]string, 20000)
	for i := range lines {
		lines[i] = fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"log","params":{"message":"%s"}}`, i, strings.Repeat("m", 200))
	}
	raw, _ := json.Marshal(rawIn{Lines: lines})
	base := runtime.NumGoroutine()
	var peak atomic.Int64
	stop := make(chan struct{})
	go func() {
		for {
			select {
			case <-stop:
				return
			case <-time.After(5 * time.Millisecond):
				if n := int64(runtime.NumGoroutine()); n > peak.Load() {
					peak.Store(n)
				}
			}
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	_, err := tl.Runtime.Execute(ctx, &tl.Definition, &tool.Call{Name: "raw", Arguments: raw})
	close(stop)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("err = %v, want the deadline: the flooding tool is held back until it", err)
	}
	if p := peak.Load(); p > int64(base+opts.MaxPending+20) {
		t.Errorf("%d goroutines at the peak (from %d): the flood was not held back", p, base)
	}
	// The runtime serves the next call.
	if m := structured(t, execute(t, tl.Runtime, "raw", rawIn{Lines: []string{`{"jsonrpc":"2.0","id":1,"method":"log","params":{"message":"x"}}`}, Responses: 1})); m["responses"] == nil {
		t.Errorf("after the flood: %v", m)
	}
}

// TestAfterTheAnswer: a tool that answers and goes on (a child holding its
// standard output, a request after the answer) is over when it answers:
// the call returns at once, the request never runs, and the child is gone.
func TestAfterTheAnswer(t *testing.T) {
	requireStandard(t)
	ws, _ := workspace(t)
	token := fmt.Sprintf("linger-%d", time.Now().UnixNano())
	late := filepath.Join(ws, "late.txt")
	perms := host.Permissions{Write: []string{"**"}}
	// The request the tool sends after its answer is one its permissions
	// allow: sent during the call, it writes the file.
	if got := hostCall(t, ws, perms, "fs/write", map[string]any{"path": late, "data": []byte("x")}); got["result"] == nil {
		t.Fatalf("the request fails during a call too (%v), so the test proves nothing", got)
	}
	if err := os.Remove(late); err != nil {
		t.Fatal(err)
	}
	tl := newTool(t, goCommand(ws), "linger", perms, testOpts)
	defer tl.Runtime.(tool.Closer).Close()
	seen := make(chan bool, 1)
	done := make(chan struct{})
	go func() {
		found := false
		for !found {
			select {
			case <-done:
				seen <- false
				return
			case <-time.After(5 * time.Millisecond):
				found = len(withToken(token)) > 0
			}
		}
		seen <- true
	}()
	start := time.Now()
	out := execute(t, tl.Runtime, "linger", lingerIn{Token: token, Path: late})
	close(done)
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("the call returned %v after it started, though the tool answered at once", d)
	}
	if out.Result == nil || out.Result.Text() != "answered" {
		t.Errorf("outcome %+v, want the answer", out.Result)
	}
	if !<-seen {
		t.Fatal("the tool's child was never seen running, so the test proves nothing")
	}
	deadline := time.Now().Add(5 * time.Second)
	for len(withToken(token)) > 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if pids := withToken(token); len(pids) > 0 {
		t.Errorf("the child holding the tool's output is still running: %v", pids)
	}
	if _, err := os.Stat(late); err == nil {
		t.Error("a request sent after the answer ran")
	}
}

// withToken returns the processes whose command line holds token.
func withToken(token string) []string {
	var pids []string
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err == nil && strings.Contains(string(b), token) {
			pids = append(pids, e.Name())
		}
	}
	return pids
}

// hostCall runs the host tool, which sends one host request, as a VFS tool
// of ws with perms, and returns what it got: the result or the error code.
func hostCall(t *testing.T, ws string, perms host.Permissions, method string, params any) map[string]any {
	t.Helper()
	p, _ := json.Marshal(params)
	return asVFS(t, ws, "host", perms, hostIn{Method: method, Params: p})
}

// TestEscapeThroughThePipe: the tool asks the host for what lies outside
// its permissions or the workspace, by .., an absolute path, a link, the
// state directory, or writes to the configuration with write access to
// everything. The tool itself, as a process, reads each of the files;
// through the host every request is denied and nothing is written.
func TestEscapeThroughThePipe(t *testing.T) {
	requireStandard(t)
	ws, outside := workspace(t)
	os.MkdirAll(filepath.Join(ws, ".lathe"), 0o700)
	os.WriteFile(filepath.Join(ws, ".lathe", "state"), []byte("LATHE-STATE"), 0o600)
	os.WriteFile(filepath.Join(ws, "lathe.toml"), []byte("# CONFIG\n"), 0o644)
	all := host.Permissions{Read: []string{"**"}, Write: []string{"**"}}
	reads := map[string]struct{ path, real, want string }{
		"dotdot":   {"../outside/secret.txt", filepath.Join(outside, "secret.txt"), "OUTSIDE-SECRET"},
		"absolute": {filepath.Join(outside, ".ssh", "id_rsa"), filepath.Join(outside, ".ssh", "id_rsa"), "PRIVATE-KEY"},
		"symlink":  {"link", filepath.Join(ws, "link"), "OUTSIDE-SECRET"},
		"state":    {".lathe/state", filepath.Join(ws, ".lathe", "state"), "LATHE-STATE"},
	}
	for name, r := range reads {
		t.Run("read "+name, func(t *testing.T) {
			if got := asProcess(t, ws, "probe", probeIn{Op: "read", Path: r.real}); !strings.Contains(fmt.Sprint(got["data"]), r.want) {
				t.Fatalf("as a process the tool could not read %s (%v), so the test proves nothing", r.real, got)
			}
			got := hostCall(t, ws, all, "fs/read", map[string]any{"path": r.path})
			if got["code"] != float64(host.CodeDenied) || strings.Contains(fmt.Sprint(got), r.want) {
				t.Errorf("fs/read %s through the host: %v, want a denial", r.path, got)
			}
		})
	}
	t.Run("outside the permissions", func(t *testing.T) {
		got := hostCall(t, ws, host.Permissions{Read: []string{"out/"}}, "fs/read", map[string]any{"path": "secret.txt"})
		if got["code"] != float64(host.CodeDenied) || !strings.Contains(fmt.Sprint(got["message"]), "read") {
			t.Errorf("fs/read outside read = [\"out/\"]: %v, want a denial naming the key", got)
		}
		if got := hostCall(t, ws, host.Permissions{Read: []string{"**"}}, "fs/read", map[string]any{"path": "secret.txt"}); got["result"] == nil {
			t.Fatalf("with read access the same request fails (%v), so the denial proves nothing", got)
		}
	})
	t.Run("write the configuration", func(t *testing.T) {
		got := hostCall(t, ws, all, "fs/write", map[string]any{"path": "lathe.toml", "data": []byte("[tools.x]\ncommand = [\"sh\"]\n")})
		if got["code"] != float64(host.CodeDenied) {
			t.Errorf("fs/write lathe.toml: %v, want a denial", got)
		}
		if b, _ := os.ReadFile(filepath.Join(ws, "lathe.toml")); string(b) != "# CONFIG\n" {
			t.Errorf("lathe.toml is now %q", b)
		}
	})
}

// TestCallsApart: two calls at once use the same request id, one with
// read access to a file and one without; each gets the answer of its own
// session, never the other's, since ids mean something only on their own
// pipe.
func TestCallsApart(t *testing.T) {
	requireStandard(t)
	ws, _ := workspace(t)
	req := `{"jsonrpc":"2.0","id":1,"method":"fs/read","params":{"path":"secret.txt"}}`
	reader := newTool(t, goCommand(ws), "raw", host.Permissions{Read: []string{"secret.txt"}}, testOpts)
	other := newTool(t, goCommand(ws), "raw", host.Permissions{}, testOpts)
	defer reader.Runtime.(tool.Closer).Close()
	defer other.Runtime.(tool.Closer).Close()
	type res struct {
		m   map[string]any
		err error
	}
	run := func(tl tool.Tool, ch chan<- res) {
		raw, _ := json.Marshal(rawIn{Lines: []string{req}, Responses: 1})
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		out, err := tl.Runtime.Execute(ctx, &tl.Definition, &tool.Call{Name: "raw", Arguments: raw})
		if err != nil || out.Result == nil {
			ch <- res{err: fmt.Errorf("%v %+v", err, out)}
			return
		}
		var m map[string]any
		json.Unmarshal(out.Result.Structured, &m)
		ch <- res{m: m}
	}
	for range 5 {
		a, b := make(chan res, 1), make(chan res, 1)
		go run(reader, a)
		go run(other, b)
		ra, rb := <-a, <-b
		if ra.err != nil || rb.err != nil {
			t.Fatalf("calls failed: %v / %v", ra.err, rb.err)
		}
		sa, sb := fmt.Sprint(ra.m["responses"]), fmt.Sprint(rb.m["responses"])
		// "V09SS1NQQUNFLVNFQ1JFVA==" is WORKSPACE-SECRET in base64.
		if !strings.Contains(sa, "V09SS1NQQUNFLVNFQ1JFVA==") || strings.Contains(sa, "-32001") {
			t.Errorf("the call with read access got %s", sa)
		}
		if strings.Contains(sb, "V09SS1NQQUNFLVNFQ1JFVA==") || !strings.Contains(sb, "-32001") {
			t.Errorf("the call without read access got %s", sb)
		}
	}
}

// TestPendingBytes: large requests held by the host (questions no one
// answers) count against the byte budget, so that a tool cannot make lathe
// hold MaxPending of them at once; with a budget that fits them all, they
// would all be held.
func TestPendingBytes(t *testing.T) {
	requireStandard(t)
	ws, _ := workspace(t)
	pad := strings.Repeat("p", 300<<10)
	lines := make([]string, 20)
	for i := range lines {
		lines[i] = fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"ask","params":{"message":"q","pad":%q}}`, i, pad)
	}
	raw, _ := json.Marshal(rawIn{Lines: lines})
	held := func(budget int) int64 {
		opts := testOpts
		opts.MaxPendingBytes = budget
		tl := newTool(t, goCommand(ws), "raw", host.Permissions{}, opts)
		defer tl.Runtime.(tool.Closer).Close()
		var now, peak atomic.Int64
		ctx := tool.WithHooks(context.Background(), tool.Hooks{
			Elicit: func(ctx context.Context, _ *tool.ElicitRequest) (*tool.ElicitResult, error) {
				n := now.Add(1)
				for {
					p := peak.Load()
					if n <= p || peak.CompareAndSwap(p, n) {
						break
					}
				}
				<-ctx.Done()
				now.Add(-1)
				return nil, ctx.Err()
			}})
		ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		defer cancel()
		tl.Runtime.Execute(ctx, &tl.Definition, &tool.Call{Name: "raw", Arguments: raw})
		return peak.Load()
	}
	if n := held(64 << 20); n < 10 {
		t.Fatalf("with room for all, only %d questions were held at once, so the test proves nothing", n)
	}
	// 1 MiB is 16 tokens of 64 KiB; each request takes 5.
	if n := held(1 << 20); n > 3 {
		t.Errorf("%d questions of 300 KiB were held at once under a budget of 1 MiB, want at most 3", n)
	}
}
