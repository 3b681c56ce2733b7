package mcp_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
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

	"github.com/lathe-tools/lathe/runtime/mcp"
	"github.com/lathe-tools/lathe/sandbox"
)

// serverEnv names the variable that makes the test binary an MCP server
// over stdio: "env" for mcptest.ServeEnv, "hostile" for hostileServer,
// "conformance" for mcptest.ServeConformance.
const serverEnv = "LATHE_MCP_TEST_SERVER"

// self returns the command that runs the test binary as the named server.
func self(t *testing.T, name string) ([]string, map[string]string) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return []string{exe, "-test.run=^$"}, map[string]string{serverEnv: name}
}

func environOf(t *testing.T, text string) map[string]string {
	t.Helper()
	env := map[string]string{}
	for _, kv := range strings.Split(text, "\n") {
		if k, v, ok := strings.Cut(kv, "="); ok {
			env[k] = v
		}
	}
	if len(env) == 0 {
		t.Fatalf("no environment in %q", text)
	}
	return env
}

// TestServerEnvironment: a secret in lathe's environment does not reach an
// upstream server, while the names its configuration lists and the
// variables it sets do, beside the minimal base.
func TestServerEnvironment(t *testing.T) {
	t.Setenv("LATHE_TEST_SECRET", "s3cret-token")
	t.Setenv("LATHE_TEST_LISTED", "listed-value")
	t.Setenv("LANG", "C.UTF-8")
	argv, env := self(t, "env")
	env["SET_BY_CONFIG"] = "from-config"
	e, _ := open(t, mcp.Options{}, mcp.Config{Name: "env", Command: argv, Env: env, PassEnv: []string{"LATHE_TEST_LISTED"}})
	got := environOf(t, mustOK(t, call(t, context.Background(), e, "env__environ", `{}`)).Text())
	if v, ok := got["LATHE_TEST_SECRET"]; ok {
		t.Errorf("the server sees LATHE_TEST_SECRET=%s", v)
	}
	for k, want := range map[string]string{
		"LATHE_TEST_LISTED": "listed-value", "SET_BY_CONFIG": "from-config", "LANG": "C.UTF-8",
		"PATH": os.Getenv("PATH"),
	} {
		if got[k] != want {
			t.Errorf("%s = %q, want %q", k, got[k], want)
		}
	}
	// Nothing else of lathe's environment passes.
	allowed := []string{"PATH", "HOME", "LANG", "TERM", "TMPDIR", "LATHE_TEST_LISTED", "SET_BY_CONFIG", serverEnv}
	for k := range got {
		if !slices.Contains(allowed, k) {
			t.Errorf("the server sees %s, which nothing allowed", k)
		}
	}
}

// TestSandboxedServer: an upstream server run under the standard profile
// works, cannot read a file outside the workspace that an unconfined one
// can, and still gets only its allowed environment.
func TestSandboxedServer(t *testing.T) {
	probe := sandbox.Config{Profile: sandbox.Standard, Workspace: t.TempDir()}
	if c := exec.Command("/bin/true"); true {
		cleanup, err := probe.Wrap(c)
		if err == nil {
			err = c.Run()
		}
		cleanup()
		if err != nil {
			t.Skipf("the standard profile is not available here: %v", err)
		}
	}
	t.Setenv("LATHE_TEST_SECRET", "s3cret-token")
	outside := filepath.Join(t.TempDir(), "secret.txt")
	if err := os.WriteFile(outside, []byte("host secret"), 0o644); err != nil {
		t.Fatal(err)
	}
	ws := t.TempDir()
	if err := os.WriteFile(filepath.Join(ws, "inside.txt"), []byte("workspace file"), 0o644); err != nil {
		t.Fatal(err)
	}
	argv, env := self(t, "env")
	var mu sync.Mutex
	cleaned := 0
	confine := func(c *exec.Cmd) (func(), error) {
		// The limits lathe gives a long-lived server (internal/cli): no wall
		// time, no CPU time, and room for the address space that Go's
		// runtime reserves (under 1 GiB a Go server aborts now and then,
		// unable to map a thread's stack).
		sc := sandbox.Config{Profile: sandbox.Standard, Workspace: ws,
			Limits: sandbox.Limits{Wall: -1, CPU: -1, Memory: 4 << 30},
			Perms:  sandbox.Permissions{Read: []string{filepath.Dir(argv[0])}, Env: []string{serverEnv}}}
		cleanup, err := sc.Wrap(c)
		return func() {
			cleanup()
			mu.Lock()
			cleaned++
			mu.Unlock()
		}, err
	}
	ctx := context.Background()
	free, _ := open(t, mcp.Options{}, mcp.Config{Name: "free", Command: argv, Env: env, Dir: ws})
	stderr := &lockedBuffer{}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the sandboxed server's standard error:\n%s", stderr.String())
		}
	})
	boxed, pool := open(t, mcp.Options{Stderr: stderr}, mcp.Config{Name: "boxed", Command: argv, Env: env, Dir: ws, Sandbox: confine})

	// The attack works on an unconfined server, so its failure below means
	// the sandbox stopped it.
	if r := call(t, ctx, free, "free__cat", fmt.Sprintf(`{"path":%q}`, outside)); r.IsError || r.Text() != "host secret" {
		t.Fatalf("unconfined server: %s %q", r.ErrorKind, r.Text())
	}
	if r := call(t, ctx, boxed, "boxed__cat", fmt.Sprintf(`{"path":%q}`, outside)); !r.IsError || strings.Contains(r.Text(), "host secret") {
		t.Errorf("the sandboxed server read a file outside the workspace: %q", r.Text())
	}
	if r := mustOK(t, call(t, ctx, boxed, "boxed__cat", `{"path":"inside.txt"}`)); r.Text() != "workspace file" {
		t.Errorf("inside the workspace: %q", r.Text())
	}
	got := environOf(t, mustOK(t, call(t, ctx, boxed, "boxed__environ", `{}`)).Text())
	// HOME is the run's own, never the workspace.
	if _, ok := got["LATHE_TEST_SECRET"]; ok || got["HOME"] == "" || got["HOME"] == ws || strings.HasPrefix(got["HOME"], ws+"/") {
		t.Errorf("sandboxed environment: %v", got)
	}
	pool.Close()
	mu.Lock()
	defer mu.Unlock()
	if cleaned != 1 {
		t.Errorf("the sandbox was cleaned up %d times, want once", cleaned)
	}
}

// hostileAnswer answers one JSON-RPC message as a hostile server would:
// its tools/list holds, beside one good tool, tools whose definitions are
// nested 10,000 levels deep, are not JSON Schema, are not tools at all, or
// have defaults that recurse — what no SDK would send. It returns nil for a
// notification.
func hostileAnswer(msg []byte) []byte {
	deep := strings.Repeat(`{"items":`, 10000) + `{}` + strings.Repeat(`}`, 10000)
	tools := []string{
		`{"name":"good","description":"Works.","inputSchema":{"type":"object","properties":{"x":{"type":"string"}}}}`,
		`{"name":"deep","inputSchema":{"type":"object","properties":{"a":` + deep + `}}}`,
		`{"name":"invalid","inputSchema":{"type":"object","properties":{"a":{"type":"no-such-type"}}}}`,
		`{"name":"recursive","inputSchema":{"type":"object","properties":{"a":{"$ref":"#","default":{}}}}}`,
		`{"name":"nottool","inputSchema":"a string"}`,
		`{"name":7}`,
	}
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params struct {
			ProtocolVersion string `json:"protocolVersion"`
			Name            string `json:"name"`
		} `json:"params"`
	}
	if json.Unmarshal(msg, &m) != nil || m.ID == nil {
		return nil
	}
	var result string
	switch m.Method {
	case "initialize":
		result = fmt.Sprintf(`{"protocolVersion":%q,"capabilities":{"tools":{}},"serverInfo":{"name":"hostile","version":"1"}}`,
			m.Params.ProtocolVersion)
	case "tools/list":
		result = `{"tools":[` + strings.Join(tools, ",") + `]}`
	case "tools/call":
		result = fmt.Sprintf(`{"content":[{"type":"text","text":"called %s"}]}`, m.Params.Name)
	default:
		return fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":"no"}}`, m.ID)
	}
	return fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%s,"result":%s}`, m.ID, result)
}

// hostileServer speaks MCP over stdio by hand (see hostileAnswer).
func hostileServer() {
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(nil, 1<<20)
	for in.Scan() {
		if a := hostileAnswer(in.Bytes()); a != nil {
			os.Stdout.Write(append(a, '\n'))
		}
	}
}

// hostileHTTP is hostileServer over streamable HTTP, answering with JSON
// bodies or, with sse, event streams.
func hostileHTTP(t *testing.T, sse bool) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		body, _ := io.ReadAll(r.Body)
		a := hostileAnswer(body)
		w.Header().Set("Mcp-Session-Id", "s1")
		switch {
		case a == nil:
			w.WriteHeader(http.StatusAccepted)
		case sse:
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprintf(w, "event: message\ndata: %s\n\n", a)
		default:
			w.Header().Set("Content-Type", "application/json")
			w.Write(a)
		}
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/mcp"
}

// TestHostileToolList: the bad tools of a server's list cost themselves,
// each reported with the server's name and its own; the good tool loads
// and answers. Over stdio the list is one message deeper than the JSON
// decoder takes, which would otherwise end the session; over HTTP, the
// same, as a JSON body and as an event stream.
func TestHostileToolList(t *testing.T) {
	argv, env := self(t, "hostile")
	for _, c := range []struct {
		name string
		cfg  mcp.Config
	}{
		{"stdio", mcp.Config{Name: "h", Command: argv, Env: env}},
		{"http-json", mcp.Config{Name: "h", URL: hostileHTTP(t, false)}},
		{"http-sse", mcp.Config{Name: "h", URL: hostileHTTP(t, true)}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var (
				mu     sync.Mutex
				warned []string
			)
			warn := func(err error) {
				mu.Lock()
				warned = append(warned, err.Error())
				mu.Unlock()
			}
			c.cfg.StartupTimeout = 20 * time.Second
			eng, _ := open(t, mcp.Options{Warn: warn}, c.cfg)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			if r := mustOK(t, call(t, ctx, eng, "h__good", `{"x":"y"}`)); r.Text() != "called good" {
				t.Errorf("good: %q", r.Text())
			}
			mu.Lock()
			all := strings.Join(warned, "\n")
			mu.Unlock()
			for _, want := range []string{
				`mcp server h: tool "deep" left out: its definition nests deeper than 256 levels`,
				`mcp server h: tool "invalid" left out: input schema`,
				`mcp server h: tool "nottool" left out: input schema: schema: must be a JSON object`,
				`mcp server h: tool #5 of the list left out: its definition is not an MCP tool`,
			} {
				if !strings.Contains(all, want) {
					t.Errorf("no warning %q in:\n%s", want, all)
				}
			}
			for _, n := range []string{"h__deep", "h__invalid", "h__nottool"} {
				if _, ok := eng.Lookup(n); ok {
					t.Errorf("%s was registered", n)
				}
			}
		})
	}
}

type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}
