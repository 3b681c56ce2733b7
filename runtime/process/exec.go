package process

import (
	"bytes"
	"context"
	"errors"
	"github.com/lathe-tools/lathe/internal/tail"
	"os/exec"
	"sync"
	"time"
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
	merge   bool // standard error goes to standard output
}

// spawn runs one call's process through [Start] and waits until it and its
// group are gone. The result is never nil. Without process groups it fails:
// a tool's call could not be ended with everything it started.
func spawn(ctx context.Context, s spawnSpec) (*result, error) {
	res := &result{}
	if !haveGroups {
		return res, errNoUnix
	}
	cmd := &exec.Cmd{Path: s.path, Args: s.argv, Dir: s.dir, Env: s.env}
	if s.stdin != nil {
		cmd.Stdin = bytes.NewReader(s.stdin)
	}
	out := &cappedBuffer{max: s.maxOut}
	errTail := &tail.Buffer{Max: tail.Kept}
	cmd.Stdout = out
	cmd.Stderr = errTail
	if s.merge {
		// The same writer for both: os/exec then uses one pipe, and
		// the two streams stay in the order they were written.
		cmd.Stderr = out
	}
	p, err := Start(ctx, cmd, StartOptions{GracePeriod: s.grace, Sandbox: s.sandbox})
	if err != nil {
		if ctx.Err() != nil {
			return res, ctx.Err()
		}
		return res, err
	}
	out.started(p)
	state, werr := p.Wait()
	res.stdout, res.overflow = out.result()
	res.stderr = errTail.Bytes()
	res.state = state
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

// cappedBuffer keeps what a process writes up to max bytes. Past max it
// kills the process with everything it started and discards the rest, so
// that a runaway tool neither fills memory nor blocks on a full pipe.
type cappedBuffer struct {
	mu   sync.Mutex
	buf  []byte
	max  int
	over bool
	proc *Proc // nil until Start has returned
}

func (w *cappedBuffer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.over {
		return len(p), nil
	}
	if len(w.buf)+len(p) > w.max {
		w.over = true
		w.buf = nil
		if w.proc != nil {
			w.proc.Kill()
		}
		return len(p), nil
	}
	w.buf = append(w.buf, p...)
	return len(p), nil
}

// started tells the buffer the process to kill; one that overflowed
// before Start returned is killed now.
func (w *cappedBuffer) started(p *Proc) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.proc = p
	if w.over {
		p.Kill()
	}
}

func (w *cappedBuffer) result() ([]byte, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf, w.over
}
