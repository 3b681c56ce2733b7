//go:build unix

package mcp

import (
	"os/exec"
	"syscall"

	"github.com/lathe-tools/lathe/sandbox"
)

// setProcessGroup puts a server in a session, and so a process group, of
// its own, so that stopping it stops what it started too (an npx wrapper's
// node, say), so that a Ctrl-C meant for lathe does not reach it before
// lathe has closed its session, and so that it has no terminal to read or
// write. It is supervised (sandbox.Supervise): nothing of it outlives
// lathe, even a lathe killed with SIGKILL.
func setProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	sandbox.Supervise(cmd)
}

// killGroup kills whatever is left of the server's process group.
func killGroup(cmd *exec.Cmd) {
	if cmd.Process != nil && cmd.Process.Pid > 0 {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
}
