package mcp_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/lathe-tools/lathe"
	"github.com/lathe-tools/lathe/runtime/mcp"
	"github.com/lathe-tools/lathe/tool"
)

// upstream is an in-process MCP server over streamable HTTP that counts
// the sessions started on it and can be made to hang on pings.
type upstream struct {
	srv     *sdk.Server
	url     string
	inits   atomic.Int32
	hang    atomic.Bool
	release chan struct{}
}

func newUpstream(t *testing.T) *upstream {
	t.Helper()
	u := &upstream{srv: sdk.NewServer(&sdk.Implementation{Name: "counted"}, nil), release: make(chan struct{})}
	u.add("first", "The first tool.")
	h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return u.srv }, nil)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		if bytes.Contains(body, []byte(`"method":"initialize"`)) {
			u.inits.Add(1)
		}
		if u.hang.Load() && bytes.Contains(body, []byte(`"method":"ping"`)) {
			select {
			case <-u.release:
			case <-r.Context().Done():
			}
			return
		}
		h.ServeHTTP(w, r)
	}))
	u.url = ts.URL
	t.Cleanup(func() {
		close(u.release)
		ts.Close()
	})
	return u
}

func (u *upstream) add(name, desc string) {
	u.srv.AddTool(&sdk.Tool{Name: name, Description: desc, InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "I am " + name}}}, nil
		})
}

// openCached opens a pool for u on a fresh engine with the cache in dir.
func openCached(t *testing.T, u *upstream, dir string, opts mcp.Options) (*lathe.Engine, *mcp.Pool) {
	t.Helper()
	opts.Cache = mcp.NewToolCache(dir)
	cfg := mcp.Config{Name: "c", URL: u.url, Deny: []string{"denied_*"}}
	e := lathe.New(lathe.Options{Timeout: 20 * time.Second})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	p, err := mcp.Open(ctx, e, []mcp.Config{cfg}, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		e.Close()
		p.Close()
	})
	return e, p
}

// cacheFile returns the one file the cache in dir holds.
func cacheFile(t *testing.T, dir string) string {
	t.Helper()
	all, err := filepath.Glob(filepath.Join(dir, "*.json"))
	// A server's catalog is kept beside its tools (surfacecache.go).
	m := slices.DeleteFunc(all, func(f string) bool { return strings.HasSuffix(f, ".surface.json") })
	if err != nil || len(m) != 1 {
		t.Fatalf("cache files in %s: %v %v", dir, m, err)
	}
	return m[0]
}

// TestCachedToolsStartNoServer: a pool whose cache holds a server's tools
// registers them without starting the server, which starts at the first
// call; the cache file is private to the user.
func TestCachedToolsStartNoServer(t *testing.T) {
	u := newUpstream(t)
	dir := filepath.Join(t.TempDir(), "mcp")
	e1, p1 := openCached(t, u, dir, mcp.Options{})
	want, _ := e1.Lookup("c__first")
	p1.Close()
	if got := u.inits.Load(); got != 1 {
		t.Fatalf("first open: %d sessions started, want 1", got)
	}
	fi, err := os.Stat(cacheFile(t, dir))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("cache file: %v %v, want mode 0600", fi, err)
	}
	if di, err := os.Stat(dir); err != nil || di.Mode().Perm() != 0o700 {
		t.Fatalf("cache directory: %v %v, want mode 0700", di, err)
	}

	e2, _ := openCached(t, u, dir, mcp.Options{})
	if got := u.inits.Load(); got != 1 {
		t.Fatalf("open with a cached list started the server (%d sessions)", got)
	}
	got, ok := e2.Lookup("c__first")
	if !ok || got.Description != want.Description || got.Source != "mcp.c" || string(got.InputSchema) != string(want.InputSchema) {
		t.Fatalf("cached definition %+v, want %+v", got, want)
	}
	r := mustOK(t, call(t, context.Background(), e2, "c__first", `{}`))
	if r.Text() != "I am first" || u.inits.Load() != 2 {
		t.Fatalf("call: %q after %d sessions, want the server started once more", r.Text(), u.inits.Load())
	}
}

// TestCacheRefreshedWhenServerDiffers: a server that lists other tools than
// the cache said, once started, has them replaced in the engine and in the
// cache; a call checked against a definition that changed is not run.
func TestCacheRefreshedWhenServerDiffers(t *testing.T) {
	u := newUpstream(t)
	dir := filepath.Join(t.TempDir(), "mcp")
	_, p1 := openCached(t, u, dir, mcp.Options{})
	p1.Close()

	u.srv.RemoveTools("first")
	u.add("first", "The first tool, now destructive.")
	u.add("second", "The second tool.")
	e2, _ := openCached(t, u, dir, mcp.Options{})
	if _, ok := e2.Lookup("c__second"); ok {
		t.Fatal("a tool the cache does not hold is registered before the server started")
	}
	r := call(t, context.Background(), e2, "c__first", `{}`)
	if !r.IsError || r.ErrorKind != tool.KindRuntimeFailure || !strings.Contains(r.Text(), "changed this tool") {
		t.Fatalf("a call checked against the cached definition ran against another: %s %q", r.ErrorKind, r.Text())
	}
	if d, _ := e2.Lookup("c__first"); d.Description != "The first tool, now destructive." {
		t.Errorf("definition not refreshed: %q", d.Description)
	}
	mustOK(t, call(t, context.Background(), e2, "c__second", `{}`))
	mustOK(t, call(t, context.Background(), e2, "c__first", `{}`))

	before := u.inits.Load()
	e3, _ := openCached(t, u, dir, mcp.Options{})
	if _, ok := e3.Lookup("c__second"); !ok || u.inits.Load() != before {
		t.Errorf("the cache was not updated with the listed tools (second registered: %v, sessions %d→%d)", ok, before, u.inits.Load())
	}
}

// TestCachePlanted: a cache file that someone else could have written, or
// whose content a listed tool could not have, changes nothing: the server
// is asked. The control case shows the same file, private, would have
// been used.
func TestCachePlanted(t *testing.T) {
	u := newUpstream(t)
	dir := filepath.Join(t.TempDir(), "mcp")
	_, p1 := openCached(t, u, dir, mcp.Options{})
	p1.Close()
	file := cacheFile(t, dir)
	genuine, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	// An extra tool, and the real one claimed read-only.
	plant := func(tools string) []byte {
		var f map[string]any
		if err := json.Unmarshal(genuine, &f); err != nil {
			t.Fatal(err)
		}
		var ts []any
		if err := json.Unmarshal([]byte(tools), &ts); err != nil {
			t.Fatal(err)
		}
		f["tools"] = ts
		b, _ := json.Marshal(f)
		return b
	}
	evil := plant(`[{"upstream":"first","annotations":{"readOnlyHint":true}},{"upstream":"evil","description":"planted"}]`)

	for _, c := range []struct {
		name    string
		prepare func(t *testing.T)
		used    bool
	}{
		{"private file (control)", func(t *testing.T) { write(t, file, evil, 0o600) }, true},
		{"file others may write", func(t *testing.T) { write(t, file, evil, 0o666) }, false},
		{"file the group may write", func(t *testing.T) { write(t, file, evil, 0o620) }, false},
		{"directory others may write", func(t *testing.T) {
			write(t, file, evil, 0o600)
			chmod(t, dir, 0o777)
		}, false},
		{"symbolic link", func(t *testing.T) {
			other := filepath.Join(t.TempDir(), "elsewhere.json")
			write(t, other, evil, 0o600)
			os.Remove(file)
			if err := os.Symlink(other, file); err != nil {
				t.Fatal(err)
			}
		}, false},
		{"a FIFO", func(t *testing.T) {
			os.Remove(file)
			if err := syscall.Mkfifo(file, 0o600); err != nil {
				t.Skip("cannot make a FIFO here:", err)
			}
		}, false},
		{"another user's file", func(t *testing.T) {
			if os.Geteuid() != 0 {
				t.Skip("only root can give a file to another user")
			}
			write(t, file, evil, 0o600)
			if err := os.Chown(file, 65534, 65534); err != nil {
				t.Fatal(err)
			}
		}, false},
		{"a tool the configuration denies", func(t *testing.T) {
			write(t, file, plant(`[{"upstream":"first"},{"upstream":"evil"},{"upstream":"denied_x"}]`), 0o600)
		}, false},
		{"a schema that does not compile", func(t *testing.T) {
			write(t, file, plant(`[{"upstream":"first"},{"upstream":"evil","inputSchema":{"type":"object","properties":{"n":{"minimum":"x"}}}}]`), 0o600)
		}, false},
		{"a schema that is no object schema", func(t *testing.T) {
			write(t, file, plant(`[{"upstream":"first"},{"upstream":"evil","inputSchema":{"type":"string"}}]`), 0o600)
		}, false},
		{"a name that is no tool name", func(t *testing.T) {
			write(t, file, plant(`[{"upstream":"first"},{"upstream":"evil"},{"upstream":"`+strings.Repeat("x", 300)+`"}]`), 0o600)
		}, false},
		{"a tool twice", func(t *testing.T) {
			write(t, file, plant(`[{"upstream":"first"},{"upstream":"evil"},{"upstream":"evil"}]`), 0o600)
		}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			chmod(t, dir, 0o700)
			os.Remove(file)
			c.prepare(t)
			before := u.inits.Load()
			e, p := openCached(t, u, dir, mcp.Options{})
			_, planted := e.Lookup("c__evil")
			def, _ := e.Lookup("c__first")
			started := u.inits.Load() != before
			p.Close()
			if c.used {
				if !planted || !def.Annotations.ReadOnlyHint || started {
					t.Fatalf("the control file was not used (planted tool %v, read-only %v, server started %v)", planted, def.Annotations.ReadOnlyHint, started)
				}
				return
			}
			if planted || def.Annotations.ReadOnlyHint {
				t.Errorf("the planted file changed the tools offered (planted tool %v, read-only %v)", planted, def.Annotations.ReadOnlyHint)
			}
			if !started {
				t.Error("the server was not asked for its tools")
			}
		})
	}
}

func write(t *testing.T, p string, b []byte, mode os.FileMode) {
	t.Helper()
	os.Remove(p)
	if err := os.WriteFile(p, b, mode); err != nil {
		t.Fatal(err)
	}
	chmod(t, p, mode)
}

func chmod(t *testing.T, p string, mode os.FileMode) {
	t.Helper()
	if err := os.Chmod(p, mode); err != nil {
		t.Fatal(err)
	}
}

// TestDeferStartsNothing: a server that Defer defers is neither started
// nor registered.
func TestDeferStartsNothing(t *testing.T) {
	u := newUpstream(t)
	var asked []string
	e, p := openCached(t, u, filepath.Join(t.TempDir(), "mcp"), mcp.Options{
		Defer: func(c *mcp.Config) bool { asked = append(asked, c.Name); return true },
	})
	if u.inits.Load() != 0 || len(e.Tools()) != 0 {
		t.Fatalf("a deferred server started (%d sessions) or registered tools %v", u.inits.Load(), e.Tools())
	}
	if d := p.Deferred(); len(d) != 1 || d[0] != "c" || len(asked) != 1 {
		t.Errorf("Deferred() = %v, Defer asked about %v", d, asked)
	}
}

// TestPingRestartsHungServer: a server that stops answering pings while
// idle is stopped and started again, and calls work after it.
func TestPingRestartsHungServer(t *testing.T) {
	u := newUpstream(t)
	var mu sync.Mutex
	var logged bytes.Buffer
	e, _ := open(t, mcp.Options{Logger: newLogger(&mu, &logged)},
		mcp.Config{Name: "c", URL: u.url, PingInterval: 100 * time.Millisecond})
	mustOK(t, call(t, context.Background(), e, "c__first", `{}`))
	u.hang.Store(true)
	waitFor(t, func() bool { return u.inits.Load() >= 2 }, "the hung server to be started again")
	u.hang.Store(false)
	mustOK(t, call(t, context.Background(), e, "c__first", `{}`))
	mu.Lock()
	defer mu.Unlock()
	if !strings.Contains(logged.String(), "did not answer a ping") {
		t.Errorf("the restart was not logged: %s", logged.String())
	}
}

// TestHTTPDownIsRuntimeFailure: an HTTP server that is gone fails a call
// as lathe's machinery failing, not as the tool's error, whether it went
// away during the session or was never reached.
func TestHTTPDownIsRuntimeFailure(t *testing.T) {
	srv := sdk.NewServer(&sdk.Implementation{Name: "going"}, nil)
	srv.AddTool(&sdk.Tool{Name: "t", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "ok"}}}, nil
		})
	ts := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil))
	dir := filepath.Join(t.TempDir(), "mcp")
	cfg := mcp.Config{Name: "g", URL: ts.URL, StartupTimeout: 5 * time.Second}
	e, p := open(t, mcp.Options{Cache: mcp.NewToolCache(dir)}, cfg)
	mustOK(t, call(t, context.Background(), e, "g__t", `{}`))
	ts.CloseClientConnections()
	ts.Close()
	// The server's side of the session outlives its listener; end it.
	for ss := range srv.Sessions() {
		ss.Close()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for i, what := range []string{"the call after the server went away", "the next call, which starts it again"} {
		r := call(t, ctx, e, "g__t", `{}`)
		if ctx.Err() != nil {
			t.Fatalf("%s hung", what)
		}
		if r.ErrorKind != tool.KindRuntimeFailure {
			t.Errorf("%d: %s: kind %q, want runtime_failure: %s", i, what, r.ErrorKind, r.Text())
		}
	}
	p.Close()

	// Never reached: tools from the cache, the server down at the call.
	e2, _ := open(t, mcp.Options{Cache: mcp.NewToolCache(dir)}, cfg)
	r := call(t, ctx, e2, "g__t", `{}`)
	if r.ErrorKind != tool.KindRuntimeFailure || !strings.Contains(r.Text(), "cannot start MCP server g") {
		t.Errorf("call of a cached tool of a server that is down: kind %q: %s", r.ErrorKind, r.Text())
	}
}

// newLogger returns a logger that writes to buf under mu.
func newLogger(mu *sync.Mutex, buf *bytes.Buffer) *slog.Logger {
	return slog.New(slog.NewTextHandler(lockedWriter{mu, buf}, nil))
}

type lockedWriter struct {
	mu  *sync.Mutex
	buf *bytes.Buffer
}

func (w lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.Write(p)
}

// TestStartCached: with StartCached, a server registered from the cache
// starts in the background without a call, so that its changes are heard.
func TestStartCached(t *testing.T) {
	u := newUpstream(t)
	dir := filepath.Join(t.TempDir(), "mcp")
	_, p1 := openCached(t, u, dir, mcp.Options{})
	p1.Close()
	u.add("second", "Added while lathe was away.")
	e, _ := openCached(t, u, dir, mcp.Options{StartCached: true})
	waitFor(t, func() bool { _, ok := e.Lookup("c__second"); return ok }, "the server started from the cache to list c__second")
	if got := u.inits.Load(); got != 2 {
		t.Errorf("%d sessions, want 2", got)
	}
}
