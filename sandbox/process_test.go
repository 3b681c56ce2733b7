//go:build linux

package sandbox_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lathe-tools/lathe/runtime/process"
	"github.com/lathe-tools/lathe/sandbox"
	"github.com/lathe-tools/lathe/tool"
)

// TestProcessRuntime runs a process tool under the standard profile
// through process.Options.Sandbox.
func TestProcessRuntime(t *testing.T) {
	requireStandard(t)
	ws, outside := fixture(t)
	os.WriteFile(filepath.Join(ws, "in.txt"), []byte("inside\n"), 0o644)
	cfg := sandbox.Config{Profile: sandbox.Standard, Workspace: ws}
	rt, err := process.New(process.Command{Argv: []string{"cat", "{path}"}, Dir: ws},
		process.Options{Sandbox: cfg.Wrap, GracePeriod: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	def := &tool.Definition{Name: "cat"}
	call := func(path string) *tool.Outcome {
		args, _ := json.Marshal(map[string]string{"path": path})
		out, err := rt.Execute(context.Background(), def, &tool.Call{Name: "cat", Arguments: args})
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		return out
	}
	if out := call("in.txt"); out.Err() != nil || !strings.Contains(out.Result.Text(), "inside") {
		t.Errorf("in.txt: %+v", out.Result)
	}
	if out := call(filepath.Join(outside, "secret.txt")); out.Err() == nil || strings.Contains(out.Result.Text(), "TOPSECRET") {
		t.Errorf("the secret was read: %+v", out.Result)
	}
	bad := sandbox.Config{Profile: sandbox.Hardened, Workspace: ws}
	rt2, _ := process.New(process.Command{Argv: []string{"cat", "{path}"}, Dir: ws}, process.Options{Sandbox: bad.Wrap})
	defer rt2.Close()
	if _, err := rt2.Execute(context.Background(), def, &tool.Call{Name: "cat", Arguments: json.RawMessage(`{"path":"in.txt"}`)}); err == nil {
		if _, lerr := exec.LookPath("runsc"); lerr != nil {
			t.Error("a hardened call ran without runsc")
		}
	}
}

// TestProcessCancel cancels a sandboxed call: it ends at once, although
// PID 1 of a namespace ignores the polite SIGTERM, and nothing is left.
// "At once" is well within the grace period that a SIGTERM gets, which is
// long here, so that a slow machine (the test VM emulates its processor)
// cannot fail the test while a call that waited for the grace period would.
func TestProcessCancel(t *testing.T) {
	requireStandard(t)
	ws := t.TempDir()
	cfg := sandbox.Config{Profile: sandbox.Standard, Workspace: ws}
	rt, err := process.New(process.Command{Argv: []string{"sleep 30 & sleep 30; echo {x}"}, Shell: true, Dir: ws},
		process.Options{Sandbox: cfg.Wrap, GracePeriod: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err = rt.Execute(ctx, &tool.Definition{Name: "s"}, &tool.Call{Name: "s", Arguments: json.RawMessage(`{"x":"y"}`)})
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("the cancelled call took %v, as if it waited for the grace period of 20s", d)
	}
	if err == nil {
		t.Error("a cancelled call succeeded")
	}
}
