//go:build !unix

package process

import "os/exec"

// haveGroups reports whether the system has process groups and signals,
// which the process runtime needs to end a tool with what it started.
const haveGroups = false

const (
	sigTerm = 0
	sigKill = 0
)

// prepare runs the sandbox, if any: without process groups there is no
// session to set up and no supervisor.
func prepare(cmd *exec.Cmd, box func(*exec.Cmd) (func(), error), cleanup *func()) error {
	if box == nil {
		return nil
	}
	c, err := box(cmd)
	*cleanup = c
	return err
}

// signalGroupLocked kills the process: there are no groups to signal, nor
// a gentler signal to send.
func signalGroupLocked(p *Proc, sig int) error { return p.cmd.Process.Kill() }

func kill(p *Proc) error { return p.cmd.Process.Kill() }
