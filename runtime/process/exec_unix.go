//go:build unix

package process

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"syscall"
	"time"

	"github.com/lathe-tools/lathe/sandbox"
)

type spawnSpec struct {
	path   string
	argv   []string
	dir    string
	env    []string
	stdin  []byte // nil: the null device
	maxOut int
	grace  time.Duration
	// sandbox, if set, rewrites the command before it starts.
	sandbox func(*exec.Cmd) (func(), error)
}

// spawn runs one process in a new session (and so a new process group),
// without a terminal, and waits until the group is gone. When ctx ends, the
// group gets SIGTERM and, grace later, the process and everything it
// started are killed (sandbox.Kill); when the main process has exited, for
// whatever reason, the rest of its group gets SIGKILL. The result is never nil.
func spawn(ctx context.Context, s spawnSpec) (*result, error) {
	res := &result{}
	cmd := exec.CommandContext(ctx, s.path)
	cmd.Args = s.argv
	cmd.Dir = s.dir
	cmd.Env = s.env
	// A session of its own: no controlling terminal, and its own process
	// group, which the signals below address.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	// Past the grace period the tool is ended by force, with everything
	// it started: sandbox.Kill asks the init that supervises it, which,
	// unlike a SIGKILL of the init, reaches the processes that left the
	// group too. WaitDelay's SIGKILL of the main process is the backstop.
	var force *time.Timer
	cmd.Cancel = func() error {
		force = time.AfterFunc(s.grace, func() { sandbox.Kill(cmd) })
		return signalGroup(cmd.Process.Pid, syscall.SIGTERM)
	}
	cmd.WaitDelay = s.grace + forceBackstop
	if s.stdin != nil {
		cmd.Stdin = bytes.NewReader(s.stdin)
	}
	out := &cappedBuffer{max: s.maxOut, cmd: cmd}
	errTail := &tailBuffer{max: stderrTail}
	cmd.Stdout = out
	cmd.Stderr = errTail
	if s.sandbox != nil {
		cleanup, err := s.sandbox(cmd)
		if cleanup != nil {
			defer cleanup()
		}
		if err != nil {
			return res, err
		}
	} else {
		// Without a profile the tool is still supervised: what it starts
		// ends with it, and everything ends with lathe.
		sandbox.Supervise(cmd)
	}
	if err := cmd.Start(); err != nil {
		if ctx.Err() != nil {
			return res, ctx.Err()
		}
		return res, err
	}
	pid := cmd.Process.Pid
	// Where the system lets us wait for the main process without reaping it,
	// the group is swept while its id cannot yet be reused; elsewhere, just
	// after.
	swept := awaitExit(pid)
	if swept {
		signalGroup(pid, syscall.SIGKILL)
	}
	werr := cmd.Wait()
	if force != nil {
		force.Stop()
	}
	if !swept {
		signalGroup(pid, syscall.SIGKILL)
	}
	res.stdout = out.buf
	res.overflow = out.over
	res.stderr = errTail.bytes()
	res.state = cmd.ProcessState
	var ee *exec.ExitError
	switch {
	case res.state != nil:
		// The process ran; its exit status, a cancellation or a pipe closed
		// after WaitDelay all say no more than the state does.
		return res, nil
	case errors.As(werr, &ee):
		return res, nil
	}
	return res, werr
}

// forceBackstop is how long after the grace period lathe waits for the
// supervising init to end a tool before it kills the init itself.
const forceBackstop = time.Second

// signalGroup sends sig to the process group pgid; a group that is already
// gone is not an error.
func signalGroup(pgid int, sig syscall.Signal) error {
	err := syscall.Kill(-pgid, sig)
	if errors.Is(err, syscall.ESRCH) {
		return os.ErrProcessDone
	}
	return err
}

// cappedBuffer keeps what a process writes up to max bytes. Past max it
// kills the process group and discards the rest, so that a runaway tool
// neither fills memory nor blocks on a full pipe.
type cappedBuffer struct {
	buf  []byte
	max  int
	over bool
	cmd  *exec.Cmd // started before the first Write
}

func (w *cappedBuffer) Write(p []byte) (int, error) {
	if w.over {
		return len(p), nil
	}
	if len(w.buf)+len(p) > w.max {
		w.over = true
		w.buf = nil
		sandbox.Kill(w.cmd)
		return len(p), nil
	}
	w.buf = append(w.buf, p...)
	return len(p), nil
}
