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
