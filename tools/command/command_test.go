//go:build linux

package command_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lathe-tools/lathe"
	"github.com/lathe-tools/lathe/runtime/process"
	"github.com/lathe-tools/lathe/sandbox"
	"github.com/lathe-tools/lathe/tool"
	"github.com/lathe-tools/lathe/tools/command"
)

// newEngine registers run_command for ws under cfg on a fresh engine.
func newEngine(t *testing.T, ws string, cfg sandbox.Config) *lathe.Engine {
	t.Helper()
	e := lathe.New(lathe.Options{})
	t.Cleanup(func() { e.Close() })
	rc, err := command.New(ws, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Register(rc); err != nil {
		t.Fatal(err)
	}
	return e
}

// run runs one command line, within a minute, and returns the result.
func run(t *testing.T, e *lathe.Engine, line string) *tool.Result {
	t.Helper()
	args, _ := json.Marshal(map[string]string{"command": line})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out := e.Call(ctx, &tool.Call{Name: command.Name, Arguments: args})
	if out.Result == nil {
		t.Fatalf("%s: no result: %+v", line, out)
	}
	if ctx.Err() != nil {
		t.Fatalf("%s: the call hung for a minute", line)
	}
	return out.Result
}

// standardWorks skips the test where the standard profile cannot run.
func standardWorks(t *testing.T) {
	t.Helper()
	e := newEngine(t, t.TempDir(), sandbox.Config{})
	if r := run(t, e, "true"); r.IsError {
		t.Skipf("the standard sandbox profile does not run on this kernel: %s", r.Text())
	}
}

func TestRunCommand(t *testing.T) {
	standardWorks(t)
	root := t.TempDir()
	ws, outside := filepath.Join(root, "ws"), filepath.Join(root, "outside")
	for _, d := range []string{ws, outside} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(outside, "secret.txt"), []byte("the secret\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	e := newEngine(t, ws, sandbox.Config{Limits: sandbox.Limits{Wall: 3 * time.Second, Output: 4096}})
	r := run(t, e, "echo hello > made.txt; cat made.txt; pwd; echo to-stderr >&2")
	if r.IsError {
		t.Fatalf("unexpected error: %s", r.Text())
	}
	for _, want := range []string{"hello", ws, "to-stderr"} {
		if !strings.Contains(r.Text(), want) {
			t.Errorf("output %q does not hold %q", r.Text(), want)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "made.txt")); string(b) != "hello\n" {
		t.Errorf("made.txt = %q", b)
	}
	for _, c := range []struct {
		line string
		kind tool.ErrorKind
		want string
	}{
		{"echo oops >&2; exit 3", tool.KindToolError, "oops"},
		{"cat " + filepath.Join(outside, "secret.txt"), tool.KindToolError, "secret.txt"},
		{"sleep 30", tool.KindTimeout, "3s"},
		{"yes", tool.KindToolError, "4096 bytes"},
		{" ", tool.KindInvalidArguments, "empty"},
	} {
		r := run(t, e, c.line)
		if !r.IsError || r.ErrorKind != c.kind || !strings.Contains(r.Text(), c.want) {
			t.Errorf("%q: got %v %s %q, want a %s saying %q", c.line, r.IsError, r.ErrorKind, r.Text(), c.kind, c.want)
		}
		if strings.Contains(r.Text(), "the secret") {
			t.Errorf("%q: the secret leaked: %s", c.line, r.Text())
		}
	}
	if _, err := os.Stat(filepath.Join(outside, "new.txt")); err == nil {
		t.Error("a file appeared outside")
	}
}

// A command that traps SIGTERM at its wall time gets it, and is killed a
// grace period later: it is not killed at once, and it does not run on.
func TestRunCommandGetsGrace(t *testing.T) {
	for _, p := range []sandbox.Profile{sandbox.Dev, sandbox.Standard} {
		t.Run(string(p), func(t *testing.T) {
			if p == sandbox.Standard {
				standardWorks(t)
			}
			ws := t.TempDir()
			wall := 500 * time.Millisecond
			e := newEngine(t, ws, sandbox.Config{Profile: p, Limits: sandbox.Limits{Wall: wall}})
			start := time.Now()
			r := run(t, e, `trap 'echo term >> seen' TERM; while :; do sleep 0.05; done`)
			took := time.Since(start)
			if !r.IsError || r.ErrorKind != tool.KindTimeout {
				t.Fatalf("got %s %q, want a timeout", r.ErrorKind, r.Text())
			}
			if b, _ := os.ReadFile(filepath.Join(ws, "seen")); !strings.Contains(string(b), "term") {
				t.Errorf("the command never saw SIGTERM (killed at once)")
			}
			if min := wall + process.DefaultGracePeriod; took < min {
				t.Errorf("the call returned after %v, before the wall time and the grace period (%v)", took, min)
			}
			if max := wall + process.DefaultGracePeriod + 5*time.Second; took > max {
				t.Errorf("the call returned after %v: the command ran on past its grace", took)
			}
		})
	}
}

// alive reports whether pid is a live process (not a zombie).
func alive(pid int) bool {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(stat, ')')
	return i > 0 && i+2 < len(stat) && stat[i+2] != 'Z'
}

// Descendants that left the command's process group and session, or lost
// their parent, end with the command (dev: host processes whose ids the
// test can see; under standard the PID namespace ends with its first
// process).
func TestRunCommandLeavesNothing(t *testing.T) {
	ws := t.TempDir()
	e := newEngine(t, ws, sandbox.Config{Profile: sandbox.Dev})
	r := run(t, e, `setsid sh -c 'echo $$ > escaped; exec sleep 300' & (sh -c 'echo $$ > orphan; exec sleep 300' &); sleep 300 & echo $! > grouped; while [ ! -s escaped ] || [ ! -s orphan ]; do sleep 0.01; done; echo started`)
	if r.IsError || !strings.Contains(r.Text(), "started") {
		t.Fatalf("got %q", r.Text())
	}
	for _, name := range []string{"escaped", "orphan", "grouped"} {
		b, err := os.ReadFile(filepath.Join(ws, name))
		if err != nil {
			t.Fatal(err)
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(2 * time.Second)
		for alive(pid) && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		if alive(pid) {
			syscall.Kill(pid, syscall.SIGKILL)
			t.Errorf("the %s process %d outlived the call", name, pid)
		}
	}
}

// A run's HOME is neither the workspace nor in it, and neither is where Go
// and npm put their caches by default.
func TestRunCommandHome(t *testing.T) {
	for _, p := range []sandbox.Profile{sandbox.Dev, sandbox.Standard} {
		t.Run(string(p), func(t *testing.T) {
			if p == sandbox.Standard {
				standardWorks(t)
			}
			ws := t.TempDir()
			e := newEngine(t, ws, sandbox.Config{Profile: p, Limits: sandbox.Limits{Wall: 30 * time.Second, Memory: -1}})
			lines := map[string]string{"HOME": `echo "$HOME"; cd && pwd -P`}
			if goBin, err := exec.LookPath("go"); err == nil {
				lines["GOCACHE"] = goBin + " env GOCACHE GOMODCACHE GOPATH"
			}
			if _, err := exec.LookPath("npm"); err == nil {
				lines["npm cache"] = "npm config get cache"
			}
			for what, line := range lines {
				r := run(t, e, line)
				if r.IsError {
					t.Errorf("%s: %s", what, r.Text())
					continue
				}
				t.Logf("%s: %s", what, strings.TrimSpace(r.Text()))
				for _, path := range strings.Fields(r.Text()) {
					if !filepath.IsAbs(path) {
						t.Errorf("%s: %q is not a path", what, path)
					}
					if path == ws || strings.HasPrefix(path, ws+"/") {
						t.Errorf("%s: %s is in the workspace %s", what, path, ws)
					}
				}
			}
			// What a run leaves in its HOME is gone by the next run.
			run(t, e, `echo x > "$HOME/left"`)
			if r := run(t, e, `cat "$HOME/left" 2>&1 || echo none`); !strings.Contains(r.Text(), "none") {
				t.Errorf("a file left in HOME by one run reached the next: %q", r.Text())
			}
			if entries, _ := os.ReadDir(ws); len(entries) > 1 {
				var names []string
				for _, e := range entries {
					names = append(names, e.Name())
				}
				t.Errorf("runs left files in the workspace: %v", names)
			}
		})
	}
}

// The hardened profile runs only where gVisor's runsc is: never unconfined.
func TestRunCommandHardened(t *testing.T) {
	e := newEngine(t, t.TempDir(), sandbox.Config{Profile: sandbox.Hardened})
	r := run(t, e, "true")
	if _, err := exec.LookPath("runsc"); err != nil && !r.IsError {
		t.Fatal("the hardened profile ran without runsc")
	}
}

// The recipe of docs/security.md for builds under the standard profile: Go's
// caches in a directory outside the workspace that the sandbox may write,
// named by variables that pass through. A build fills the cache there, and
// leaves nothing but its binary in the workspace.
func TestRunCommandGoBuildRecipe(t *testing.T) {
	standardWorks(t)
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command")
	}
	cache := t.TempDir()
	for _, kv := range [][2]string{{"GOCACHE", "go-build"}, {"GOMODCACHE", "go-mod"}, {"GOPATH", "go"}} {
		t.Setenv(kv[0], filepath.Join(cache, kv[1]))
	}
	t.Setenv("GOFLAGS", "-mod=readonly")
	t.Setenv("GOTOOLCHAIN", "local")
	ws := t.TempDir()
	for name, text := range map[string]string{
		"go.mod":  "module example.com/hello\n\ngo 1.21\n",
		"main.go": "package main\n\nfunc main() { println(\"hello\") }\n",
	} {
		if err := os.WriteFile(filepath.Join(ws, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	e := newEngine(t, ws, sandbox.Config{
		Limits: sandbox.Limits{Wall: 50 * time.Second, Memory: 4 << 30},
		Perms: sandbox.Permissions{Read: []string{filepath.Dir(filepath.Dir(goBin))}, Write: []string{cache},
			Env: []string{"GOCACHE", "GOMODCACHE", "GOPATH", "GOFLAGS", "GOTOOLCHAIN"}},
	})
	r := run(t, e, "go build -o hello . && ./hello")
	if r.IsError || !strings.Contains(r.Text(), "hello") {
		t.Fatalf("the build failed: %s %s", r.ErrorKind, r.Text())
	}
	if entries, _ := os.ReadDir(filepath.Join(cache, "go-build")); len(entries) == 0 {
		t.Error("the build cache stayed empty: the variables did not reach the build")
	}
	entries, _ := os.ReadDir(ws)
	for _, e := range entries {
		if n := e.Name(); n != "go.mod" && n != "main.go" && n != "hello" && n != ".lathe" {
			t.Errorf("the build left %s in the workspace", n)
		}
	}
}
