//go:build temporal

package temporal_test

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/lathe-tools/lathe/runtime/temporal"
)

// temporalBinary finds the temporal CLI, whose development server the
// tests run against: $LATHE_TEMPORAL, .ci/temporal/bin/temporal (where
// .ci/run builds it), or the PATH. Without it the tests skip, saying why;
// under CI (CI set) they fail instead.
func temporalBinary(t testing.TB) string {
	t.Helper()
	for _, p := range []string{os.Getenv("LATHE_TEMPORAL"), "../../.ci/temporal/bin/temporal"} {
		if p == "" {
			continue
		}
		if abs, err := filepath.Abs(p); err == nil {
			if _, err := os.Stat(abs); err == nil {
				return abs
			}
		}
	}
	if p, err := exec.LookPath("temporal"); err == nil {
		return p
	}
	msg := "no temporal CLI (.ci/run builds it: go install github.com/temporalio/cli/cmd/temporal@v1.5.1 into .ci/temporal/bin, or set $LATHE_TEMPORAL)"
	if os.Getenv("CI") != "" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}

// devServer is a running `temporal server start-dev`.
type devServer struct {
	t       testing.TB
	bin     string
	ip      string // what it listens on
	port    int
	db      string // its database file: a restart keeps its state
	mu      sync.Mutex
	cmd     *exec.Cmd
	exited  chan struct{} // closed when cmd has ended
	stderr  *bytes.Buffer
	started bool // it answered once: a restart keeps its frontend's port
}

// Addr is the frontend's address, on ip.
func (s *devServer) Addr() string { return net.JoinHostPort(s.reach(), strconv.Itoa(s.port)) }

func (s *devServer) reach() string {
	if s.ip == "0.0.0.0" {
		return "127.0.0.1"
	}
	return s.ip
}

func freePort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// startDevServer starts a development server on free ports, listening on
// ip, with its state in a file of its own, and stops it when the test
// ends.
func startDevServer(t testing.TB, ip string) *devServer {
	t.Helper()
	s := &devServer{t: t, bin: temporalBinary(t), ip: ip, port: freePort(t), db: filepath.Join(t.TempDir(), "temporal.db")}
	s.start()
	t.Cleanup(s.stop)
	return s
}

func (s *devServer) start() {
	s.t.Helper()
	for attempt := 1; ; attempt++ {
		err, inUse := s.try()
		if err == nil {
			s.started = true
			return
		}
		if !inUse || attempt == 5 {
			s.t.Fatalf("the Temporal dev server on %s (attempt %d): %v\n%s", s.Addr(), attempt, err, s.stderr)
		}
		// A port was free when it was picked and taken by another process
		// before the server bound it: the server is started again on new
		// ports (its frontend's too, unless a restart must keep it).
		if !s.started {
			s.port = freePort(s.t)
		}
	}
}

// try starts the server once and waits for it to answer, up to 90 s; it
// reports whether the server ended because a port was in use.
func (s *devServer) try() (err error, inUse bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stderr = &bytes.Buffer{}
	cmd := exec.Command(s.bin, "server", "start-dev", "--headless", "--ip", s.ip,
		"--port", strconv.Itoa(s.port), "--http-port", strconv.Itoa(freePort(s.t)),
		"--metrics-port", strconv.Itoa(freePort(s.t)), "--db-filename", s.db, "--log-level", "error")
	out := &lockedBuffer{b: s.stderr}
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting it: %w", err), false
	}
	exited := make(chan struct{})
	go func() {
		cmd.Wait()
		close(exited)
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	for {
		c, err := temporal.Dial(ctx, temporal.Options{Address: s.Addr(), CacheDir: "-"})
		if err == nil {
			c.Close()
			s.cmd, s.exited = cmd, exited
			return nil, false
		}
		select {
		case <-exited:
			return fmt.Errorf("it exited before answering: %w", err), out.contains("address already in use")
		case <-ctx.Done():
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-exited
			return fmt.Errorf("it did not answer within 90s: %w", err), false
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// lockedBuffer is the server's output, written by the process's copying
// goroutines and read while it runs.
type lockedBuffer struct {
	mu sync.Mutex
	b  *bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) contains(s string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return bytes.Contains(l.b.Bytes(), []byte(s))
}

func (s *devServer) stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return
	}
	syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
	<-s.exited
	s.cmd = nil
}

// restart stops the server and starts it again on the same port and
// database.
func (s *devServer) restart(down time.Duration) {
	s.t.Helper()
	s.stop()
	time.Sleep(down)
	s.start()
}

func (s *devServer) String() string { return fmt.Sprintf("dev server at %s", s.Addr()) }
