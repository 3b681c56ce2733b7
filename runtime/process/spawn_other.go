//go:build !unix

package process

import "os/exec"

const (
	sigTerm = 0
	sigKill = 0
)

func prepare(cmd *exec.Cmd, box func(*exec.Cmd) (func(), error), cleanup *func()) error {
	return errNoUnix
}

func signalGroupLocked(p *Proc, sig int) error { return p.cmd.Process.Kill() }

func kill(p *Proc) error { return p.cmd.Process.Kill() }
