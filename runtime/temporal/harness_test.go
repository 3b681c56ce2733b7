//go:build temporal

package temporal_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/lathe-tools/lathe"
	"github.com/lathe-tools/lathe/config"
	"github.com/lathe-tools/lathe/load"
	"github.com/lathe-tools/lathe/runtime/temporal"
	"github.com/lathe-tools/lathe/tool"
)

// The test binary is also the worker: run with these variables set, it
// serves the tools of testTools, through the workspace in $workerDir, on
// the queue $workerQueue, as a process of its own that a test can kill.
const (
	workerQueue = "LATHE_TEST_WORKER_QUEUE"
	workerDir   = "LATHE_TEST_WORKER_DIR"
	workerAddr  = "LATHE_TEST_WORKER_ADDR"
	workerName  = "LATHE_TEST_WORKER_NAME"
	markerDir   = "LATHE_TEST_MARKERS"
)

func TestMain(m *testing.M) {
	if q := os.Getenv(workerQueue); q != "" {
		os.Exit(runWorker(q))
	}
	os.Exit(m.Run())
}

// workerEngine is the engine of a test worker process, which its tool
// grow changes.
var workerEngine atomic.Pointer[lathe.Engine]

func runWorker(queue string) int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	ws, err := load.Open(ctx, load.Options{Dir: os.Getenv(workerDir), Tools: testTools(os.Getenv(workerName)),
		Serving: queue, RequireTrust: true, LongLived: true,
		// The test trusts its own worker's file, as a person would once.
		Trust: func(context.Context, load.Untrusted) (bool, error) { return true, nil }})
	if err != nil {
		fmt.Fprintln(os.Stderr, "worker:", err)
		return 1
	}
	defer ws.Close()
	workerEngine.Store(ws.Engine)
	c, err := temporal.Dial(ctx, temporal.Options{Address: os.Getenv(workerAddr), CacheDir: "-"})
	if err != nil {
		fmt.Fprintln(os.Stderr, "worker:", err)
		return 1
	}
	defer c.Close()
	fmt.Println("serving")
	if err := temporal.Serve(ctx, c, queue, ws.Engine); err != nil {
		fmt.Fprintln(os.Stderr, "worker:", err)
		return 1
	}
	return 0
}

// mark records, in the directory the test gave, that something happened
// on this worker: name is the event, the file's text which worker.
func mark(name, text string) {
	if d := os.Getenv(markerDir); d != "" {
		os.WriteFile(filepath.Join(d, name), []byte(text), 0o644)
	}
}

type slowIn struct {
	Ms  int    `json:"ms"`
	Tag string `json:"tag"`
}

// testTools are the tools a test worker serves; name is the worker's,
// which results carry so that a test sees who ran a call.
func testTools(name string) []tool.Tool {
	obj := json.RawMessage(`{"type":"object"}`)
	slowSchema := json.RawMessage(`{"type":"object","properties":{"ms":{"type":"integer"},"tag":{"type":"string"}},"required":["tag"]}`)
	slow := func(ctx context.Context, _ *tool.Definition, c *tool.Call) (*tool.Outcome, error) {
		var in slowIn
		json.Unmarshal(c.Arguments, &in)
		mark(in.Tag+".started."+name, c.ID)
		select {
		case <-time.After(time.Duration(in.Ms) * time.Millisecond):
			mark(in.Tag+".finished."+name, c.ID)
			return &tool.Outcome{Result: tool.TextResult("done by " + name + " as " + c.ID)}, nil
		case <-ctx.Done():
			mark(in.Tag+".cancelled", time.Now().Format(time.RFC3339Nano))
			return nil, ctx.Err()
		}
	}
	def := func(n string, a tool.Annotations, schema json.RawMessage) tool.Definition {
		return tool.Definition{Name: n, Description: "a test tool", InputSchema: schema, Annotations: a, Source: "builtin"}
	}
	destructive := tool.Annotations{DestructiveHint: tool.Bool(true)}
	noop := tool.Tool{Definition: def("noop", tool.Annotations{ReadOnlyHint: true}, obj), Runtime: tool.RuntimeFunc(
		func(ctx context.Context, _ *tool.Definition, c *tool.Call) (*tool.Outcome, error) {
			ns, _ := os.Readlink("/proc/self/ns/net")
			return &tool.Outcome{Result: tool.TextResult(name + " " + ns)}, nil
		})}
	return []tool.Tool{
		noop,
		{Definition: def("grow", tool.Annotations{ReadOnlyHint: true}, obj), Runtime: tool.RuntimeFunc(
			func(ctx context.Context, _ *tool.Definition, c *tool.Call) (*tool.Outcome, error) {
				// The worker's registry changes: noop gets a new description.
				grown := noop
				grown.Definition.Description = "grown"
				if err := workerEngine.Load().Replace([]string{"noop"}, grown); err != nil {
					return nil, err
				}
				return &tool.Outcome{Result: tool.TextResult("grown")}, nil
			})},
		{Definition: def("slow_idempotent", tool.Annotations{DestructiveHint: tool.Bool(true), IdempotentHint: true}, slowSchema), Runtime: tool.RuntimeFunc(slow)},
		{Definition: def("slow_once", destructive, slowSchema), Runtime: tool.RuntimeFunc(slow)},
		{Definition: def("danger", destructive, slowSchema), Runtime: tool.RuntimeFunc(slow)},
		{Definition: def("danger_allowed", destructive, slowSchema), Runtime: tool.RuntimeFunc(slow)},
		{Definition: def("fails", destructive, slowSchema), Runtime: tool.RuntimeFunc(
			func(ctx context.Context, _ *tool.Definition, c *tool.Call) (*tool.Outcome, error) {
				var in slowIn
				json.Unmarshal(c.Arguments, &in)
				mark(in.Tag+".attempt."+c.ID+"."+time.Now().Format("150405.000000000"), name)
				return &tool.Outcome{Result: &tool.Result{Content: []tool.Content{{Type: tool.ContentText, Text: "it broke"}}, IsError: true}}, nil
			})},
		{Definition: def("ask", tool.Annotations{ReadOnlyHint: true}, obj), Runtime: tool.RuntimeFunc(
			func(ctx context.Context, _ *tool.Definition, c *tool.Call) (*tool.Outcome, error) {
				if a, ok := c.Answers["color"]; ok {
					return &tool.Outcome{Result: &tool.Result{Content: []tool.Content{{Type: tool.ContentText, Text: fmt.Sprintf("color %v", a)}},
						Structured: json.RawMessage(`{"color":` + mustJSON(a) + `}`)}}, nil
				}
				return &tool.Outcome{Question: &tool.Question{ID: "color", Text: "Which color?", Kind: tool.QuestionSelect,
					Options: []string{"red", "green"}, Default: "red"}}, nil
			})},
		{Definition: def("progress", tool.Annotations{ReadOnlyHint: true}, obj), Runtime: tool.RuntimeFunc(
			func(ctx context.Context, _ *tool.Definition, c *tool.Call) (*tool.Outcome, error) {
				for i := 1; i <= 3; i++ {
					tool.ReportProgress(ctx, tool.Progress{Progress: float64(i), Total: 3, Message: fmt.Sprintf("step %d", i)})
					time.Sleep(600 * time.Millisecond)
				}
				return &tool.Outcome{Result: tool.TextResult("three steps")}, nil
			})},
	}
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// env is one test's world: a dev server, a directory of markers, and the
// workspaces of its workers and its caller.
type env struct {
	t       *testing.T
	srv     *devServer
	markers string
	state   string // XDG_STATE_HOME of the workers and the caller
	workers []*workerProc
}

// workerConfig is every test worker's lathe.toml: it allows the test
// tools but denies danger, which every caller's configuration allows.
const workerConfig = `
[[policy.rules]]
tool = "*"
approval = "allow"

[[policy.rules]]
tool = "danger"
approval = "deny"
`

func newEnv(t *testing.T, srv *devServer) *env {
	if srv == nil {
		srv = startDevServer(t, "127.0.0.1")
	}
	e := &env{t: t, srv: srv, markers: t.TempDir(), state: t.TempDir()}
	t.Setenv("XDG_STATE_HOME", e.state)
	return e
}

// workerProc is a test worker running as a process of its own.
type workerProc struct {
	name string
	cmd  *exec.Cmd
	done chan struct{}
}

// startWorker starts a worker process called name on queue, and waits
// until it serves. prefix runs it under another command (ip netns exec).
func (e *env) startWorker(name, queue, addr string, prefix ...string) *workerProc {
	e.t.Helper()
	dir := e.t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "lathe.toml"), []byte(workerConfig), 0o644); err != nil {
		e.t.Fatal(err)
	}
	if addr == "" {
		addr = e.srv.Addr()
	}
	self, err := os.Executable()
	if err != nil {
		e.t.Fatal(err)
	}
	argv := append(append([]string{}, prefix...), self, "-test.run=^$")
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), workerQueue+"="+queue, workerDir+"="+dir, workerAddr+"="+addr,
		workerName+"="+name, markerDir+"="+e.markers, "XDG_STATE_HOME="+e.state, "XDG_CACHE_HOME="+e.t.TempDir())
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	stdout, _ := cmd.StdoutPipe()
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		e.t.Fatalf("starting worker %s: %v", name, err)
	}
	w := &workerProc{name: name, cmd: cmd, done: make(chan struct{})}
	ready := make(chan bool, 1)
	go func() {
		r := bufio.NewReader(stdout)
		line, _ := r.ReadString('\n')
		ready <- strings.TrimSpace(line) == "serving"
		io.Copy(io.Discard, r)
	}()
	go func() { cmd.Wait(); close(w.done) }()
	e.t.Cleanup(func() { w.kill() })
	select {
	case ok := <-ready:
		if !ok {
			<-w.done
			e.t.Fatalf("worker %s did not start: %s", name, stderr.String())
		}
	case <-time.After(60 * time.Second):
		e.t.Fatalf("worker %s did not start within 60s: %s", name, stderr.String())
	}
	e.workers = append(e.workers, w)
	return w
}

// kill kills the worker at once, as a machine that dies would.
func (w *workerProc) kill() {
	if w.cmd.Process != nil {
		syscall.Kill(-w.cmd.Process.Pid, syscall.SIGKILL)
	}
	select {
	case <-w.done:
	case <-time.After(10 * time.Second):
	}
}

// caller opens a caller's workspace whose lathe.toml is callerConfig
// (trusted), with tools routed to queues of the test's server.
func (e *env) caller(callerConfig string) *load.Workspace {
	e.t.Helper()
	return e.callerCached(callerConfig, e.t.TempDir())
}

// callerCached is caller, with the tools of queues cached in cache.
func (e *env) callerCached(callerConfig, cache string) *load.Workspace {
	e.t.Helper()
	dir := e.t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "lathe.toml"), []byte(callerConfig), 0o644); err != nil {
		e.t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	var mu sync.Mutex
	var warnings []string
	ws, err := load.Open(ctx, load.Options{Dir: dir,
		Trust: func(context.Context, load.Untrusted) (bool, error) { return true, nil },
		Warn:  func(err error) { mu.Lock(); warnings = append(warnings, err.Error()); mu.Unlock() },
		Dispatch: func(ctx context.Context, cfg *config.Config) (load.Dispatcher, error) {
			// A machine shared with other work may be slow to answer.
			c, err := temporal.Dial(ctx, temporal.Options{Address: e.srv.Addr(), CacheDir: cache, ListTimeout: 45 * time.Second})
			if err != nil {
				return nil, err
			}
			return c, nil
		}})
	if err != nil {
		e.t.Fatalf("opening the caller's workspace: %v", err)
	}
	e.t.Cleanup(func() { ws.Close() })
	mu.Lock()
	defer mu.Unlock()
	for _, w := range warnings {
		e.t.Logf("caller warning: %s", w)
	}
	return ws
}

// markers returns the names of the markers whose names start with prefix.
func (e *env) marked(prefix string) []string {
	ents, _ := os.ReadDir(e.markers)
	var out []string
	for _, d := range ents {
		if strings.HasPrefix(d.Name(), prefix) {
			out = append(out, d.Name())
		}
	}
	return out
}

// waitMarked waits until a marker starting with prefix exists and returns
// its name.
func (e *env) waitMarked(prefix string, within time.Duration) string {
	e.t.Helper()
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		if m := e.marked(prefix); len(m) > 0 {
			return m[0]
		}
		time.Sleep(20 * time.Millisecond)
	}
	e.t.Fatalf("no marker %s* within %s", prefix, within)
	return ""
}

// routeAll is a caller's configuration routing every test tool to queue,
// and allowing every call; more holds keys to add to a tool's table. The
// caller says slow_idempotent is idempotent: a worker's word is not
// taken for it.
func routeAll(queue string, more map[string]string) string {
	var b strings.Builder
	for _, t := range testTools("") {
		n := t.Definition.Name
		m := more[n]
		if n == "slow_idempotent" && m == "" {
			m = "idempotent = true"
		}
		fmt.Fprintf(&b, "[tools.%s]\nqueue = %q\n%s\n", n, queue, m)
	}
	b.WriteString(`
[[policy.rules]]
tool = "*"
approval = "allow"
`)
	return b.String()
}

func call(ctx context.Context, ws *load.Workspace, id, name, args string) *tool.Outcome {
	return ws.Engine.Call(ctx, &tool.Call{ID: id, Name: name, Arguments: json.RawMessage(args)})
}

func readFile(dir, name string) (string, error) {
	b, err := os.ReadFile(filepath.Join(dir, name))
	return string(b), err
}
