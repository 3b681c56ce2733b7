package childenv_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lathe-tools/lathe"
	"github.com/lathe-tools/lathe/internal/childenv"
	"github.com/lathe-tools/lathe/internal/mcptest"
	"github.com/lathe-tools/lathe/runtime/mcp"
	"github.com/lathe-tools/lathe/runtime/process"
	"github.com/lathe-tools/lathe/sandbox"
	"github.com/lathe-tools/lathe/tool"
	"github.com/lathe-tools/lathe/tools/command"
)

// modeEnv makes the test binary a child that shows its environment: "print"
// writes it on standard output, "mcp" serves it as an MCP tool over stdio.
const modeEnv = "LATHE_CHILDENV_MODE"

// privateHome stands for the HOME of a sandboxed run, a directory of its own.
const privateHome = "(private)"

func TestMain(m *testing.M) {
	switch os.Getenv(modeEnv) {
	case "print":
		fmt.Print(strings.Join(os.Environ(), "\n"))
		return
	case "mcp":
		mcptest.ServeEnv("env")
		return
	}
	os.Exit(m.Run())
}

func environOf(text string) map[string]string {
	env := map[string]string{}
	for _, kv := range strings.Split(strings.TrimSpace(text), "\n") {
		if k, v, ok := strings.Cut(kv, "="); ok {
			env[k] = v
		}
	}
	return env
}

// TestChildren: every kind of child lathe starts — a process tool,
// run_command, an upstream MCP server — gets the same base from lathe's
// environment and the name its configuration lists, and never a secret that
// is in lathe's environment but not listed.
func TestChildren(t *testing.T) {
	t.Setenv("LATHE_TEST_SECRET", "s3cret-token")
	t.Setenv("LATHE_TEST_LISTED", "listed")
	t.Setenv("LANG", "C.UTF-8")
	t.Setenv("TERM", "xterm-test")
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	ws := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	call := func(t *testing.T, e *lathe.Engine, name, args string) string {
		t.Helper()
		out := e.Call(ctx, &tool.Call{Name: name, Arguments: json.RawMessage(args)})
		if out.Result == nil || out.Result.IsError {
			text := ""
			if out.Result != nil {
				text = out.Result.Text()
			}
			t.Fatalf("%s: %+v %s", name, out, text)
		}
		return out.Result.Text()
	}
	cases := []struct {
		name  string
		mode  string // the variable that makes the test binary the child, listed too
		home  string // the HOME the child gets
		spawn func(t *testing.T) string
	}{
		{"process tool", "print", os.Getenv("HOME"), func(t *testing.T) string {
			rt, err := process.New(process.Command{Argv: []string{exe, "-test.run=^$"}, Shell: false, Dir: ws,
				Env: []string{"LATHE_TEST_LISTED", modeEnv}}, process.Options{})
			if err != nil {
				t.Fatal(err)
			}
			e := lathe.New(lathe.Options{})
			defer e.Close()
			if err := e.Register(tool.Tool{Definition: tool.Definition{Name: "env", InputSchema: json.RawMessage(`{}`)}, Runtime: rt}); err != nil {
				t.Fatal(err)
			}
			return call(t, e, "env", `{}`)
		}},
		{"run_command", "print", privateHome, func(t *testing.T) string {
			// No cap on the address space: the child is this test binary,
			// whose race detector, when on, reserves terabytes of it.
			rc, err := command.New(ws, sandbox.Config{Profile: sandbox.Dev,
				Limits: sandbox.Limits{Memory: -1},
				Perms:  sandbox.Permissions{Env: []string{"LATHE_TEST_LISTED", modeEnv}}})
			if err != nil {
				t.Fatal(err)
			}
			e := lathe.New(lathe.Options{})
			defer e.Close()
			if err := e.Register(rc); err != nil {
				t.Fatal(err)
			}
			return call(t, e, command.Name, fmt.Sprintf(`{"command":"exec %s -test.run='^$'"}`, exe))
		}},
		{"MCP server", "mcp", os.Getenv("HOME"), func(t *testing.T) string {
			e := lathe.New(lathe.Options{})
			defer e.Close()
			p, err := mcp.Open(ctx, e, []mcp.Config{{Name: "srv", Command: []string{exe, "-test.run=^$"}, Dir: ws,
				PassEnv: []string{"LATHE_TEST_LISTED", modeEnv}}}, mcp.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			return call(t, e, "srv__environ", `{}`)
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv(modeEnv, c.mode)
			got := environOf(c.spawn(t))
			want := map[string]string{"LATHE_TEST_LISTED": "listed", "LANG": "C.UTF-8", "TERM": "xterm-test",
				"PATH": os.Getenv("PATH"), "HOME": c.home, modeEnv: c.mode}
			if c.home == privateHome {
				// A sandboxed run's HOME is its own, never the workspace.
				if h := got["HOME"]; h == "" || h == ws || strings.HasPrefix(h, ws+"/") {
					t.Errorf("HOME = %q, want a directory of the run's own outside the workspace %s", h, ws)
				}
				delete(want, "HOME")
			}
			for k, v := range want {
				if got[k] != v {
					t.Errorf("%s = %q, want %q", k, got[k], v)
				}
			}
			allowed := append(childenv.Base(), "LATHE_TEST_LISTED", modeEnv)
			for k := range got {
				if c.name == "run_command" && slices.Contains([]string{"PWD", "SHLVL", "OLDPWD", "_"}, k) {
					continue // /bin/sh sets these itself
				}
				if !slices.Contains(allowed, k) {
					t.Errorf("the child sees %s=%s, which is neither in the base nor listed", k, got[k])
				}
			}
		})
	}
}

func TestBuild(t *testing.T) {
	t.Setenv("LATHE_TEST_SECRET", "s3cret")
	t.Setenv("LATHE_TEST_LISTED", "listed")
	t.Setenv("LANG", "C")
	env := childenv.Build([]string{"LATHE_TEST_LISTED", "LANG", "LATHE_TEST_UNSET"}, map[string]string{"LANG": "set", "X": "1"})
	got := strings.Join(env, " ")
	for _, want := range []string{"LATHE_TEST_LISTED=listed", "LANG=set", "X=1"} {
		if !slices.Contains(env, want) {
			t.Errorf("no %s in %s", want, got)
		}
	}
	for _, bad := range []string{"LATHE_TEST_SECRET", "LANG=C", "LATHE_TEST_UNSET"} {
		if strings.Contains(got, bad) {
			t.Errorf("%s in %s", bad, got)
		}
	}
	if f := childenv.Filter([]string{"PATH=/x", "LATHE_TEST_SECRET=s", "A=1", "bad"}, []string{"A"}); strings.Join(f, " ") != "PATH=/x A=1" {
		t.Errorf("Filter: %v", f)
	}
	if s := childenv.Set([]string{"HOME=/h", "A=1", "HOME=/g"}, "HOME", "/ws"); strings.Join(s, " ") != "A=1 HOME=/ws" {
		t.Errorf("Set: %v", s)
	}
}
