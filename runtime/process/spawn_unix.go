//go:build unix

package process

import (
	"errors"
	"os"
	"os/exec"
	"syscall"

	"github.com/lathe-tools/lathe/sandbox"
)

// haveGroups reports whether the system has process groups and signals,
// which the process runtime needs to end a tool with what it started.
const haveGroups = true

const (
	sigTerm = syscall.SIGTERM
	sigKill = syscall.SIGKILL
)

// prepare sets cmd up to start in a session of its own, supervised or
// sandboxed; *cleanup is set to what undoes the sandbox.
func prepare(cmd *exec.Cmd, box func(*exec.Cmd) (func(), error), cleanup *func()) error {
	// A session of its own: no controlling terminal, and its own process
	// group, which the signals address. The sandbox and the supervisor set
	// the same; this covers the systems where they do nothing.
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setsid = true
	cmd.SysProcAttr.Setpgid, cmd.SysProcAttr.Pgid = false, 0
	cmd.SysProcAttr.Setctty, cmd.SysProcAttr.Foreground = false, false
	if box == nil {
		// Without a profile the process is still supervised: what it
		// starts ends with it, and everything ends with lathe.
		sandbox.Supervise(cmd)
		return nil
	}
	c, err := box(cmd)
	*cleanup = c
	return err
}

// beforeGroupSignal, when set (by tests), is called with the group's id
// just before a signal is sent to it.
var beforeGroupSignal func(pgid int)

// signalGroupLocked sends sig to the process group of p; p.mu is held and
// the process has not been reaped, so the group's id is still its own. A
// group that is already gone is not an error.
func signalGroupLocked(p *Proc, sig syscall.Signal) error {
	pgid := p.cmd.Process.Pid
	if beforeGroupSignal != nil {
		beforeGroupSignal(pgid)
	}
	err := syscall.Kill(-pgid, sig)
	if errors.Is(err, syscall.ESRCH) {
		return os.ErrProcessDone
	}
	return err
}

// kill ends p at once with everything it started; p.mu is held. A
// supervised process is asked through its supervisor (sandbox.Kill), which
// reaches the descendants that left the group too; any other gets SIGKILL
// to its group.
func kill(p *Proc) error {
	if beforeGroupSignal != nil {
		beforeGroupSignal(p.cmd.Process.Pid)
	}
	return sandbox.Kill(p.cmd)
}
