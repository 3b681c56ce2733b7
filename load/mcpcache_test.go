package load_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lathe-tools/lathe/load"
	"github.com/lathe-tools/lathe/tool"
)

func trustAll(context.Context, load.Untrusted) (bool, error) { return true, nil }

// TestNeedStartsNoServer: a command that names the tools it calls starts
// no upstream server that cannot hold them, so a broken server does not
// fail a builtin call; without Need the same server fails the load.
func TestNeedStartsNoServer(t *testing.T) {
	ws := workspace(t, map[string]string{"lathe.toml": "[mcp.broken]\ncommand = [\"/nonexistent/mcp-server\"]\n",
		"a.txt": "hello"})
	ctx := testContext(t)
	if w, err := load.Open(ctx, load.Options{Dir: ws, Trust: trustAll}); err == nil {
		w.Close()
		t.Fatal("the broken server did not fail a load that needs every server (the test proves nothing)")
	}
	w, err := load.Open(ctx, load.Options{Dir: ws, Trust: trustAll, Need: []string{"read_file"}})
	if err != nil {
		t.Fatalf("a load that needs only read_file failed on the broken server: %v", err)
	}
	defer w.Close()
	out := w.Engine.Call(ctx, &tool.Call{Name: "read_file", Arguments: json.RawMessage(`{"path":"a.txt"}`)})
	if out.Result == nil || out.Result.IsError || !strings.Contains(out.Result.Text(), "hello") {
		t.Fatalf("read_file: %+v", out.Result)
	}

	// A needed name under the server's prefix starts it.
	if w, err := load.Open(ctx, load.Options{Dir: ws, Trust: trustAll, Need: []string{"broken__x"}}); err == nil {
		w.Close()
		t.Error("a load that needs a tool of the broken server did not start it")
	}
}

// TestCachedServerStartsAtFirstCall: the second load of a workspace
// registers the server's tools from the cache without starting it; the
// first call starts it.
func TestCachedServerStartsAtFirstCall(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	pidFile := filepath.Join(t.TempDir(), "pid")
	ws := workspace(t, map[string]string{"lathe.toml": fmt.Sprintf(
		"[mcp.up]\ncommand = [%q]\nenv = { %s = %q }\n", exe, serverEnv, pidFile)})
	ctx := testContext(t)
	w, err := load.Open(ctx, load.Options{Dir: ws, Trust: trustAll})
	if err != nil {
		t.Fatal(err)
	}
	w.Close()
	if _, err := os.Stat(pidFile); err != nil {
		t.Fatalf("the first load did not start the server: %v", err)
	}
	os.Remove(pidFile)

	w, err = load.Open(ctx, load.Options{Dir: ws, Trust: trustAll, Approver: allowOnce(new(int))})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if _, ok := w.Engine.Lookup("up__environ"); !ok {
		t.Fatalf("no up__environ from the cache; tools: %s", names(w))
	}
	if _, err := os.Stat(pidFile); err == nil {
		t.Fatal("the second load started the server, whose tools were cached")
	}
	out := w.Engine.Call(ctx, &tool.Call{Name: "up__environ", Arguments: json.RawMessage(`{}`)})
	if out.Result == nil || out.Result.IsError {
		t.Fatalf("up__environ: %+v", out.Result)
	}
	if _, err := os.Stat(pidFile); err != nil {
		t.Errorf("the call did not start the server: %v", err)
	}
}

// TestToolCacheInsideWorkspaceRefused: a cache directory inside the
// workspace, where tools may write, is not used: the server is started,
// and a warning says why.
func TestToolCacheInsideWorkspaceRefused(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	pidFile := filepath.Join(t.TempDir(), "pid")
	ws := workspace(t, map[string]string{"lathe.toml": fmt.Sprintf(
		"[mcp.up]\ncommand = [%q]\nenv = { %s = %q }\n", exe, serverEnv, pidFile)})
	t.Setenv("LATHE_CACHE_DIR", filepath.Join(ws, ".cache"))
	ctx := testContext(t)
	for i := range 2 {
		var warned []error
		os.Remove(pidFile)
		w, err := load.Open(ctx, load.Options{Dir: ws, Trust: trustAll, Warn: func(err error) { warned = append(warned, err) }})
		if err != nil {
			t.Fatal(err)
		}
		w.Close()
		if _, err := os.Stat(pidFile); err != nil {
			t.Fatalf("load %d did not start the server: %v", i+1, err)
		}
		if len(warned) == 0 || !strings.Contains(errors.Join(warned...).Error(), "inside the workspace") {
			t.Errorf("load %d: warnings %v", i+1, warned)
		}
	}
	if _, err := os.Stat(filepath.Join(ws, ".cache", "mcp")); err == nil {
		t.Error("a cache was written inside the workspace")
	}
}
