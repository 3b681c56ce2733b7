//go:build linux

package sandbox

import (
	"errors"
	"os/exec"
	"slices"
	"testing"
)

func TestParseProfile(t *testing.T) {
	for in, want := range map[string]Profile{"": Standard, "dev": Dev, "standard": Standard, "hardened": Hardened} {
		if got, err := ParseProfile(in); err != nil || got != want {
			t.Errorf("ParseProfile(%q) = %q, %v", in, got, err)
		}
	}
	if _, err := ParseProfile("loose"); err == nil {
		t.Error("an unknown profile was accepted")
	}
	cmd := exec.Command("/bin/true")
	if _, err := (Config{Profile: "loose"}).Wrap(cmd); err == nil || cmd.Path != "/bin/true" {
		t.Errorf("Wrap with an unknown profile: %v, path %s", err, cmd.Path)
	}
}

func TestWrapEnv(t *testing.T) {
	t.Setenv("LANG", "C")
	c := Config{Profile: Dev, Workspace: "/ws", Perms: Permissions{Env: []string{"KEEP"}}}
	cmd := exec.Command("/bin/true")
	cmd.Env = []string{"KEEP=1", "SECRET=2", "HOME=/root", "TMPDIR=/var/tmp", "PATH=/bin", "NOEQUALS"}
	cleanup, err := c.Wrap(cmd)
	defer cleanup()
	// Without cgo the dev profile is unavailable, but the environment is
	// filtered all the same.
	if err != nil && !(errors.Is(err, ErrUnavailable) && !haveInit) {
		t.Fatal(err)
	}
	want := []string{"KEEP=1", "PATH=/bin", "TMPDIR=/tmp", "HOME=/ws"}
	if !slices.Equal(cmd.Env, want) {
		t.Errorf("env = %q, want %q", cmd.Env, want)
	}
	if env := c.Env(); !slices.Contains(env, "HOME=/ws") || !slices.Contains(env, "LANG=C") {
		t.Errorf("Env() = %q", env)
	}
}

func TestStandardNeedsWorkspace(t *testing.T) {
	_, err := Config{}.Wrap(exec.Command("/bin/true"))
	if err == nil {
		t.Fatal("standard without a workspace was accepted")
	}
	if errors.Is(err, ErrUnavailable) {
		t.Errorf("a missing workspace is a configuration error, not an unavailable profile: %v", err)
	}
}

// TestWrapAfterSupervise wraps a command that a runtime already
// supervised, as an MCP server with a profile is: Wrap builds its own steps
// from the real command, not a second init around the first.
func TestWrapAfterSupervise(t *testing.T) {
	if !haveInit {
		t.Skip("no init without cgo")
	}
	cmd := exec.Command("/bin/echo", "hello")
	Supervise(cmd)
	if !supervised(cmd) {
		t.Fatalf("Supervise left the command alone: %q", cmd.Args)
	}
	cleanup, err := Config{Profile: Dev, Workspace: t.TempDir()}.Wrap(cmd)
	defer cleanup()
	if err != nil {
		t.Fatal(err)
	}
	if n := slices.Index(cmd.Args, "--"); n < 0 || !slices.Equal(cmd.Args[n+1:], []string{"/bin/echo", "hello"}) ||
		slices.Contains(cmd.Args[n+1:], initArg0) || len(cmd.ExtraFiles) != 1 {
		t.Fatalf("wrapped twice: args %q, %d extra files", cmd.Args, len(cmd.ExtraFiles))
	}
	out, err := cmd.Output()
	if err != nil || string(out) != "hello\n" {
		t.Fatalf("%q, %v", out, err)
	}
}
