//go:build temporal

package temporal_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	// lathe's command with its Temporal runtime, as cmd/lathe builds it.
	_ "github.com/lathe-tools/lathe/cli/temporalcli"
	"github.com/lathe-tools/lathe/internal/cli"
)

// cliEnv names the variable that makes the test binary the lathe command,
// so that a test can start `lathe worker` as a process of its own.
const cliEnv = "LATHE_TEST_CLI"

func init() {
	if os.Getenv(cliEnv) != "" {
		os.Exit(cli.Main())
	}
}

// runLathe runs the lathe command in dir, in this process, and returns its
// exit code and output.
func runLathe(t *testing.T, dir string, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	code := cli.Run(ctx, append([]string{"--workspace", dir}, args...), cli.Streams{In: strings.NewReader(""), Out: &out, Err: &errb})
	return code, out.String(), errb.String()
}

// TestLatheWorker: lathe worker serves its workspace's local tool on a
// queue, under its own trusted configuration; the caller's lathe list
// shows the tool, lathe call runs it on the worker, and the worker's own
// audit log records the call.
func TestLatheWorker(t *testing.T) {
	e := newEnv(t, nil)
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())

	wdir := t.TempDir()
	os.WriteFile(filepath.Join(wdir, "lathe.toml"), []byte(`
[tools.hello]
command = ["sh", "-c", "echo hello from $(basename $PWD)"]
description = "Say hello"
parameters = {}
idempotent = true

[[policy.rules]]
tool = "hello"
approval = "allow"
`), 0o644)
	if code, _, errs := runLathe(t, wdir, "trust", "--yes"); code != 0 {
		t.Fatalf("lathe trust: %d %s", code, errs)
	}
	self, _ := os.Executable()
	cmd := exec.Command(self, "--workspace", wdir, "worker", "--queue", "cliq", "--temporal-address", e.srv.Addr())
	cmd.Env = append(os.Environ(), cliEnv+"=1")
	var werr bytes.Buffer
	cmd.Stderr = &werr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	var exitErr error
	go func() { exitErr = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(15 * time.Second):
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			t.Errorf("lathe worker did not stop within 15s of SIGTERM")
		}
	})

	cdir := t.TempDir()
	os.WriteFile(filepath.Join(cdir, "lathe.toml"), []byte(fmt.Sprintf(`
[temporal]
address = %q

[tools.hello]
queue = "cliq"

[[policy.rules]]
tool = "hello"
approval = "allow"
`, e.srv.Addr())), 0o644)
	if code, _, errs := runLathe(t, cdir, "trust", "--yes"); code != 0 {
		t.Fatalf("lathe trust: %d %s", code, errs)
	}
	// The worker may still be starting: the caller's list asks the queue
	// until it answers.
	var code int
	var out, errs string
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); {
		if code, out, errs = runLathe(t, cdir, "list", "--refresh"); code == 0 && strings.Contains(out, "hello") {
			break
		}
		select {
		case <-exited:
			t.Fatalf("lathe worker exited: %v\n%s", exitErr, werr.String())
		case <-time.After(500 * time.Millisecond):
		}
	}
	if !strings.Contains(out, "hello") {
		t.Fatalf("the caller's lathe list does not show the queue's tool: %d\n%s\n%s\nworker: %s", code, out, errs, werr.String())
	}
	code, out, errs = runLathe(t, cdir, "call", "hello")
	if code != 0 || !strings.Contains(out, "hello from "+filepath.Base(wdir)) {
		t.Fatalf("lathe call hello: %d %q %s", code, out, errs)
	}
	// The worker writes its records into SQLite in batches, which another
	// process sees tens of milliseconds after the call.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		code, out, errs = runLathe(t, wdir, "audit")
		if code == 0 && strings.Contains(out, "hello") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the worker's audit log does not record the call 10 s after it: %d %q %s", code, out, errs)
		}
	}
}
