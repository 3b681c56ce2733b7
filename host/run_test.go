package host_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lathe-tools/lathe/host"
	"github.com/lathe-tools/lathe/sandbox"
)

// devHost is a host whose programs run under the dev profile, which every
// machine has.
func devHost(t *testing.T, f fixture, perms host.Permissions) *host.Host {
	return f.hostWith(t, host.Config{Perms: perms, Sandbox: &sandbox.Config{Profile: sandbox.Dev}})
}

// script writes an executable shell script at path that leaves a mark at
// mark when it runs.
func script(t *testing.T, path, mark string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("#!/bin/sh\necho ran > "+mark+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
}

func TestRunGranted(t *testing.T) {
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh")
	}
	f := newFixture(t)
	s := devHost(t, f, host.Permissions{Run: []string{"sh"}}).Begin(testCtx(t))
	defer s.End()
	var r host.RunResult
	wantOK(t, "run sh", call(t, s, host.MethodRun, host.RunParams{Argv: []string{"sh", "-c", "pwd; cat; echo err >&2; exit 3"}, Stdin: []byte("in\n"), Dir: "src"}, &r))
	ws, _ := filepath.EvalSymlinks(f.ws)
	if r.ExitCode != 3 || string(r.Stdout) != filepath.Join(ws, "src")+"\nin\n" || string(r.Stderr) != "err\n" {
		t.Fatalf("run = exit %d stdout %q stderr %q", r.ExitCode, r.Stdout, r.Stderr)
	}
	wantCode(t, "run in .lathe", call(t, s, host.MethodRun, host.RunParams{Argv: []string{"sh", "-c", "true"}, Dir: ".lathe"}, nil), host.CodeDenied)
	wantCode(t, "run outside", call(t, s, host.MethodRun, host.RunParams{Argv: []string{"sh", "-c", "true"}, Dir: "../outside"}, nil), host.CodeDenied)
}

func TestRunOutputCapped(t *testing.T) {
	f := newFixture(t)
	h := f.hostWith(t, host.Config{Perms: host.Permissions{Run: []string{"sh"}}, Limits: host.Limits{Output: 5},
		Sandbox: &sandbox.Config{Profile: sandbox.Dev}})
	s := h.Begin(testCtx(t))
	defer s.End()
	var r host.RunResult
	wantOK(t, "run", call(t, s, host.MethodRun, host.RunParams{Argv: []string{"sh", "-c", "echo 0123456789"}}, &r))
	if string(r.Stdout) != "01234" || !r.Truncated || r.ExitCode != 0 {
		t.Fatalf("run = %+v", r)
	}
}

// A program that is not in run, or a path that merely ends in a granted
// name, never runs: each would leave a mark.
func TestRunDenied(t *testing.T) {
	f := newFixture(t)
	other := t.TempDir()
	mark := filepath.Join(other, "mark")
	script(t, filepath.Join(f.ws, "git"), mark)
	script(t, filepath.Join(other, "git"), mark)
	script(t, filepath.Join(f.ws, "bin", "git"), mark)
	s := devHost(t, f, host.Permissions{Run: []string{"git", "bin/tool"}}).Begin(testCtx(t))
	defer s.End()
	for _, argv := range [][]string{
		{"sh", "-c", "echo ran > " + mark},
		{"./git"},
		{filepath.Join(other, "git")},
		{"bin/git"},
		{"bin/../git"},
		{filepath.Join(f.ws, "git")},
		{"git/"},
	} {
		e := call(t, s, host.MethodRun, host.RunParams{Argv: argv}, nil)
		wantCode(t, "run "+strings.Join(argv, " "), e, host.CodeDenied, "to run in [tools.probe]")
	}
	wantCode(t, "run with no argv", call(t, s, host.MethodRun, host.RunParams{}, nil), -32602)
	if _, err := os.Stat(mark); !os.IsNotExist(err) {
		t.Fatalf("a denied program ran (%v)", err)
	}
}

// A name is looked up in lathe's PATH, but a program found that way inside
// the workspace, where the tool may write, does not run.
func TestRunNameFoundInWorkspaceRefused(t *testing.T) {
	f := newFixture(t)
	mark := filepath.Join(t.TempDir(), "mark")
	script(t, filepath.Join(f.ws, "bin", "tool"), mark)
	t.Setenv("PATH", filepath.Join(f.ws, "bin")+string(os.PathListSeparator)+os.Getenv("PATH"))
	s := devHost(t, f, host.Permissions{Run: []string{"tool"}}).Begin(testCtx(t))
	defer s.End()
	wantCode(t, "run tool", call(t, s, host.MethodRun, host.RunParams{Argv: []string{"tool"}}, nil), host.CodeDenied, "inside the workspace")
	if _, err := os.Stat(mark); !os.IsNotExist(err) {
		t.Fatalf("the program planted in the workspace ran (%v)", err)
	}
	// Named by its path, it is the person's explicit choice.
	s2 := devHost(t, f, host.Permissions{Run: []string{"bin/tool"}}).Begin(testCtx(t))
	defer s2.End()
	wantOK(t, "run bin/tool", call(t, s2, host.MethodRun, host.RunParams{Argv: []string{"./bin/tool"}}, nil))
	if _, err := os.Stat(mark); err != nil {
		t.Fatalf("bin/tool did not run: %v", err)
	}
}

// Under the standard profile, where this machine has it, the program runs
// confined: lathe's state directory is hidden from it.
func TestRunStandardProfile(t *testing.T) {
	f := newFixture(t)
	s := f.host(t, host.Permissions{Run: []string{"sh"}}).Begin(testCtx(t))
	defer s.End()
	var r host.RunResult
	e := call(t, s, host.MethodRun, host.RunParams{Argv: []string{"sh", "-c", "cat .lathe/audit.db; cat src/main.go"}}, &r)
	if e != nil && strings.Contains(e.Message, "unavailable") {
		t.Skipf("the standard profile is unavailable here: %s", e.Message)
	}
	wantOK(t, "run under standard", e)
	if strings.Contains(string(r.Stdout), "audit") || !strings.Contains(string(r.Stdout), "package main") {
		t.Fatalf("run under standard: stdout %q stderr %q", r.Stdout, r.Stderr)
	}
}

// A program named by its path in the tool's write scope would run what the
// tool wrote there: it does not run.
func TestRunProgramInWriteScopeRefused(t *testing.T) {
	f := newFixture(t)
	mark := filepath.Join(t.TempDir(), "mark")
	script(t, filepath.Join(f.ws, "out", "tool"), mark)
	s := devHost(t, f, host.Permissions{Write: []string{"out/"}, Run: []string{"out/tool"}}).Begin(testCtx(t))
	defer s.End()
	wantCode(t, "run out/tool", call(t, s, host.MethodRun, host.RunParams{Argv: []string{"out/tool"}}, nil), host.CodeDenied, "write scope")
	if _, err := os.Stat(mark); !os.IsNotExist(err) {
		t.Fatalf("a program in the write scope ran (%v)", err)
	}
}
