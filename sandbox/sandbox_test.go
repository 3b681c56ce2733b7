//go:build linux

package sandbox

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
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
	// Without cgo the dev profile is unavailable, but the environment is
	// filtered all the same.
	if err != nil && !(errors.Is(err, ErrUnavailable) && !haveInit) {
		t.Fatal(err)
	}
	// HOME is a directory of the run's own, which lasts until the cleanup.
	home := ""
	if n := len(cmd.Env); n > 0 && strings.HasPrefix(cmd.Env[n-1], "HOME=") {
		home = strings.TrimPrefix(cmd.Env[n-1], "HOME=")
	}
	want := []string{"KEEP=1", "PATH=/bin", "TMPDIR=/tmp", "HOME=" + home}
	if !slices.Equal(cmd.Env, want) || !strings.HasPrefix(filepath.Base(home), "lathe-home-") {
		t.Errorf("env = %q, want %q with a private HOME", cmd.Env, want)
	}
	if fi, err := os.Stat(home); err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o700 {
		t.Errorf("the private HOME %s: %v, %v", home, fi, err)
	}
	cleanup()
	if _, err := os.Stat(home); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the private HOME %s outlived the cleanup: %v", home, err)
	}
	if env := c.Env(); slices.Contains(env, "HOME=/ws") || !slices.Contains(env, "LANG=C") {
		t.Errorf("Env() = %q", env)
	}
	// Under the other profiles HOME is the run's private /tmp.
	for _, p := range []Profile{Standard, Hardened} {
		if h, _, err := privateHome(p); h != "/tmp" || err != nil {
			t.Errorf("%s: HOME %q, %v; want /tmp", p, h, err)
		}
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
