package process

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"sync"
	"time"

	"github.com/lathe-tools/lathe/internal/childenv"
)

// Env returns the environment of a child process under lathe's one rule:
// the variables of [DefaultEnv] and then of pass that are set in lathe's
// environment, with their values there, then each variable of set, which
// replaces a passed one of the same name. Nothing else of lathe's
// environment passes, so a token in the shell that started lathe reaches
// only the children configured to receive it. A runtime that starts its own
// processes builds their environment with it; [Start] uses Env(nil, nil)
// for a command whose Env is nil.
func Env(pass []string, set map[string]string) []string { return childenv.Build(pass, set) }

// StartOptions configure [Start]. The zero value is ready to use.
type StartOptions struct {
	// GracePeriod is how long a process has, after SIGTERM, before it and
	// everything it started are killed. Zero means [DefaultGracePeriod].
	GracePeriod time.Duration
	// Sandbox, when set, is called with the command just before it starts
	// and may rewrite it to run isolated; the function it returns runs once
	// the process has been waited for. Pass a sandbox.Config's Wrap method.
	// A Sandbox error fails the start: the command never runs unconfined.
	// Without a sandbox the command is still supervised (sandbox.Supervise).
	Sandbox func(cmd *exec.Cmd) (cleanup func(), err error)
}

// Proc is a process started by [Start]. Its methods are safe for
// concurrent use.
type Proc struct {
	cmd     *exec.Cmd
	grace   time.Duration
	cleanup func()
	stopCtx func() bool // stops the context's watch

	mu sync.Mutex
	// exited is set, under mu, once the main process has exited and its
	// group has been swept: no signal is sent after that, since the
	// process may be reaped, and its id reused, at any moment.
	exited  bool
	stopped bool // Stop has run
	timers  []*time.Timer

	waitOnce sync.Once
	state    *os.ProcessState
	waitErr  error
}

// Start starts cmd, prepared but not started (Path, Args, Dir, Env, the
// standard streams or pipes), the way lathe starts every process: process
// tools, run_command and the commands of MCP servers alike.
//
//   - The process leads a session of its own, and so a process group of its
//     own, and has no controlling terminal: it cannot read or write the
//     terminal lathe runs in, and a Ctrl-C meant for lathe does not reach it.
//   - It is supervised (by the sandbox's init: see package sandbox): what it
//     starts ends when it ends, even what left its group or session, and
//     everything ends when lathe does, however lathe ends.
//   - When ctx ends, or [Proc.Stop] is called, its group gets SIGTERM and,
//     a grace period later, the process and everything it started are
//     killed.
//   - When the main process exits, whatever is left of its group is killed
//     while the process is not yet reaped, so that the signal cannot reach
//     a process that has taken over a recycled id (on Linux; elsewhere just
//     after it is reaped).
//   - A nil cmd.Env is [Env](nil, nil), never lathe's whole environment.
//
// Start sets cmd.SysProcAttr, and may rewrite cmd.Path, Args and
// ExtraFiles (the supervisor or the sandbox runs first); cmd.Cancel and
// WaitDelay are its own. Call [Proc.Wait] once the process is started,
// always: it reaps the process and undoes the sandbox.
func Start(ctx context.Context, cmd *exec.Cmd, opts StartOptions) (*Proc, error) {
	if opts.GracePeriod <= 0 {
		opts.GracePeriod = DefaultGracePeriod
	}
	if cmd.Env == nil {
		cmd.Env = Env(nil, nil)
	}
	p := &Proc{cmd: cmd, grace: opts.GracePeriod}
	if err := prepare(cmd, opts.Sandbox, &p.cleanup); err != nil {
		p.runCleanup()
		return nil, err
	}
	// A descendant that keeps standard output or error open does not hold
	// up Wait once the process is gone.
	if cmd.WaitDelay == 0 {
		cmd.WaitDelay = opts.GracePeriod + forceBackstop
	}
	if err := ctx.Err(); err != nil {
		p.runCleanup()
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		p.runCleanup()
		return nil, err
	}
	p.stopCtx = context.AfterFunc(ctx, func() { p.Stop() })
	return p, nil
}

// Pid returns the id of the started process: the supervisor's, when the
// command runs supervised or sandboxed.
func (p *Proc) Pid() int { return p.cmd.Process.Pid }

// Stop asks the process to end: its process group gets SIGTERM now, and
// a grace period later the process and everything it started are killed.
// It returns at once; [Proc.Wait] says when the process is gone. Stopping a
// process that has already exited does nothing.
func (p *Proc) Stop() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.exited {
		return os.ErrProcessDone
	}
	if p.stopped {
		return nil
	}
	p.stopped = true
	// Past the grace period the supervisor kills the process and then every
	// descendant left, even those that left the group; should it not end,
	// the main process is killed a little later.
	p.timers = append(p.timers,
		time.AfterFunc(p.grace, func() { p.Kill() }),
		time.AfterFunc(p.grace+forceBackstop, func() { p.signalMain() }))
	return signalGroupLocked(p, sigTerm)
}

// Kill ends the process at once, with everything it started. Killing a
// process that has already exited does nothing.
func (p *Proc) Kill() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.exited {
		return os.ErrProcessDone
	}
	return kill(p)
}

// signalMain kills the main process alone: the last resort when a
// supervisor does not end.
func (p *Proc) signalMain() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.exited {
		// os.Process addresses the process by a descriptor where the
		// system has them, and knows when it has been reaped.
		p.cmd.Process.Kill()
	}
}

// Wait waits until the process has exited and what is left of its group is
// killed, reaps it, and undoes its sandbox. It returns the process's state
// (nil if it could not be waited for) and the error of [exec.Cmd.Wait]. Later
// calls return the same.
func (p *Proc) Wait() (*os.ProcessState, error) {
	p.waitOnce.Do(func() {
		pid := p.cmd.Process.Pid
		// Where the system lets us wait without reaping, the group is
		// swept while the process's id cannot be reused.
		if awaitExit(pid) {
			p.sweep()
		}
		p.waitErr = p.cmd.Wait()
		p.sweep() // elsewhere: just after
		p.stopCtx()
		p.mu.Lock()
		for _, t := range p.timers {
			t.Stop()
		}
		p.mu.Unlock()
		p.state = p.cmd.ProcessState
		p.runCleanup()
	})
	return p.state, p.waitErr
}

// sweep kills what is left of the group, once, and marks the process
// exited: no signal is sent after it.
func (p *Proc) sweep() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.exited {
		return
	}
	signalGroupLocked(p, sigKill)
	p.exited = true
}

func (p *Proc) runCleanup() {
	if p.cleanup != nil {
		p.cleanup()
		p.cleanup = nil
	}
}

// forceBackstop is how long after the grace period lathe waits for the
// supervising init to end a process before it kills the init itself.
const forceBackstop = time.Second

// errNoUnix is the process runtime's error where there are no process
// groups.
var errNoUnix = errors.New("the process runtime needs a Unix system")
