//go:build linux

package process_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/lathe-tools/lathe/runtime/process"
	"github.com/lathe-tools/lathe/runtimetest"
)

// startSh starts /bin/sh -c script in dir through process.Start and
// returns the process and its standard output.
func startSh(t *testing.T, ctx context.Context, dir, script string, opts process.StartOptions) (*process.Proc, *syncBuffer) {
	t.Helper()
	cmd := exec.Command("/bin/sh", "-c", script)
	cmd.Dir = dir
	out := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	p, err := process.Start(ctx, cmd, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		p.Kill()
		p.Wait()
	})
	return p, out
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// waitWithin waits for p, failing the test if it is not gone in time.
func waitWithin(t *testing.T, p *process.Proc, d time.Duration, what string) (*os.ProcessState, error) {
	t.Helper()
	type res struct {
		st  *os.ProcessState
		err error
	}
	done := make(chan res, 1)
	go func() {
		st, err := p.Wait()
		done <- res{st, err}
	}()
	select {
	case r := <-done:
		return r.st, r.err
	case <-time.After(d):
		t.Fatalf("%s: the process was not gone after %v", what, d)
		return nil, nil
	}
}

// waitFile waits until the file exists and holds a line.
func waitFile(t *testing.T, path string) string {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		b, err := os.ReadFile(path)
		if err == nil && bytes.HasSuffix(b, []byte("\n")) {
			return string(b)
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never appeared", path)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A process that traps SIGTERM gets it, has the grace period to finish,
// and is then killed with its group.
func TestStartStopGrace(t *testing.T) {
	dir := t.TempDir()
	// The shell runs its trap only once the sleep in progress ends: the
	// grace leaves a loaded machine time for that.
	grace := 2 * time.Second
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	p, out := startSh(t, ctx, dir, `trap 'echo got TERM' TERM; echo ready > ready; while :; do sleep 0.05; done`,
		process.StartOptions{GracePeriod: grace})
	waitFile(t, filepath.Join(dir, "ready"))
	start := time.Now()
	cancel()
	st, _ := waitWithin(t, p, 10*time.Second, "a process trapping SIGTERM")
	took := time.Since(start)
	if !strings.Contains(out.String(), "got TERM") {
		t.Errorf("the process never saw SIGTERM; output %q", out.String())
	}
	if took < grace {
		t.Errorf("the process was gone after %v, before its grace period of %v", took, grace)
	}
	if st == nil || st.Success() {
		t.Errorf("state = %v, want killed", st)
	}
}

// A descendant that escaped into a session (and so a process group) of its
// own is killed when the process ends: the supervisor, a subreaper, finds it.
func TestStartEscapedDescendantKilled(t *testing.T) {
	if !supervised(t) {
		t.Skip("this binary has no supervisor (built without cgo): an escaped descendant is left to the system (docs/security.md)")
	}
	dir := t.TempDir()
	p, _ := startSh(t, context.Background(), dir,
		`setsid sh -c 'echo $$ > escaped; exec sleep 300' & (sh -c 'echo $$ > orphan; exec sleep 300' &); while [ ! -s escaped ] || [ ! -s orphan ]; do sleep 0.01; done; echo done`,
		process.StartOptions{})
	waitWithin(t, p, 10*time.Second, "a process whose descendants escaped")
	for _, name := range []string{"escaped", "orphan"} {
		pid, err := strconv.Atoi(strings.TrimSpace(waitFile(t, filepath.Join(dir, name))))
		if err != nil {
			t.Fatal(err)
		}
		if pgid, _ := syscall.Getpgid(pid); name == "escaped" && pgid == p.Pid() {
			t.Fatalf("the escaped descendant %d did not leave the group", pid)
		}
		deadline := time.Now().Add(5 * time.Second)
		for runtimetest.Alive(pid) && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		if runtimetest.Alive(pid) {
			syscall.Kill(pid, syscall.SIGKILL)
			t.Errorf("the %s descendant %d outlived the process", name, pid)
		}
	}
}

// supervised reports whether process.Start runs commands under the
// sandbox's init in this binary.
func supervised(t *testing.T) bool {
	cmd := exec.Command("/bin/true")
	p, err := process.Start(context.Background(), cmd, process.StartOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p.Wait()
	return filepath.Base(cmd.Path) == "exe" && len(cmd.Args) > 0 && cmd.Args[0] == "lathe-sandbox-init"
}

// No group signal ever goes to a process that has been reaped, whose id
// the system may have given to another process: every signal is sent while
// the process is, at worst, a zombie of ours. The process exits on its own
// with a child left in its group (the sweep), is stopped after it exited,
// and is stopped and killed after Wait.
func TestSignalsNeverReachARecycledID(t *testing.T) {
	var mu sync.Mutex
	var sent int
	var late []string
	defer process.SetBeforeGroupSignal(func(pgid int) {
		var info unix.Siginfo
		// WNOHANG|WNOWAIT looks without reaping: ECHILD means the process
		// was reaped already.
		err := unix.Waitid(unix.P_PID, pgid, &info, unix.WEXITED|unix.WNOHANG|unix.WNOWAIT, nil)
		mu.Lock()
		defer mu.Unlock()
		sent++
		if errors.Is(err, unix.ECHILD) {
			late = append(late, fmt.Sprintf("a signal to group %d after it was reaped", pgid))
		}
	})()
	for i, stop := range []bool{false, true} {
		ctx, cancel := context.WithCancel(context.Background())
		p, _ := startSh(t, ctx, t.TempDir(), "sleep 300 & echo left", process.StartOptions{GracePeriod: 50 * time.Millisecond})
		if stop {
			time.Sleep(100 * time.Millisecond) // exited by now, most likely
			cancel()
		}
		waitWithin(t, p, 10*time.Second, "a process that exits at once")
		cancel()
		if err := p.Stop(); !errors.Is(err, os.ErrProcessDone) {
			t.Errorf("run %d: Stop after Wait = %v, want os.ErrProcessDone", i, err)
		}
		if err := p.Kill(); !errors.Is(err, os.ErrProcessDone) {
			t.Errorf("run %d: Kill after Wait = %v, want os.ErrProcessDone", i, err)
		}
	}
	time.Sleep(200 * time.Millisecond) // past every grace timer
	mu.Lock()
	defer mu.Unlock()
	if sent == 0 {
		t.Fatal("no group was ever signalled: the sweep did not run")
	}
	for _, l := range late {
		t.Error(l)
	}
}

// A command without an environment gets lathe's minimal one, not all of
// lathe's: a secret in lathe's environment does not pass.
func TestStartNilEnvIsMinimal(t *testing.T) {
	t.Setenv("LATHE_TEST_SECRET", "hunter2")
	cmd := exec.Command("/usr/bin/env")
	var out bytes.Buffer
	cmd.Stdout = &out
	p, err := process.Start(context.Background(), cmd, process.StartOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := waitWithin(t, p, 10*time.Second, "env"); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "PATH=") {
		t.Fatalf("env printed no PATH: %q", out.String())
	}
	if strings.Contains(out.String(), "hunter2") {
		t.Errorf("lathe's environment reached the process:\n%s", out.String())
	}
}

// A sandbox that fails leaves the command unstarted, and its cleanup runs.
func TestStartSandboxError(t *testing.T) {
	dir := t.TempDir()
	cleaned := false
	cmd := exec.Command("/bin/sh", "-c", "echo ran > ran")
	cmd.Dir = dir
	_, err := process.Start(context.Background(), cmd, process.StartOptions{Sandbox: func(*exec.Cmd) (func(), error) {
		return func() { cleaned = true }, errors.New("no sandbox here")
	}})
	if err == nil || !strings.Contains(err.Error(), "no sandbox here") {
		t.Fatalf("err = %v, want the sandbox's error", err)
	}
	if !cleaned {
		t.Error("the sandbox's cleanup did not run")
	}
	time.Sleep(50 * time.Millisecond)
	if _, err := os.Stat(filepath.Join(dir, "ran")); err == nil {
		t.Error("the command ran unconfined")
	}
}

// DefaultEnv returns a copy: changing it widens nothing.
func TestDefaultEnvIsACopy(t *testing.T) {
	env := process.DefaultEnv()
	env[0] = "LATHE_TEST_SECRET"
	_ = append(env[:1], "AWS_SECRET_ACCESS_KEY")
	for _, n := range process.DefaultEnv() {
		if strings.Contains(n, "SECRET") {
			t.Fatalf("DefaultEnv changed through a returned slice: %v", process.DefaultEnv())
		}
	}
	t.Setenv("LATHE_TEST_SECRET", "hunter2")
	for _, kv := range process.Env(nil, nil) {
		if strings.Contains(kv, "hunter2") {
			t.Fatalf("Env passed %s", kv)
		}
	}
}
