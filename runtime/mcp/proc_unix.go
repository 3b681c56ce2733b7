//go:build unix

package mcp

import (
	"os/exec"
	"syscall"
)

// setProcessGroup puts a server in a process group of its own, so that
// stopping it stops what it started too (an npx wrapper's node, say), and
// so that a Ctrl-C meant for lathe does not reach it before lathe has
// closed its session.
func setProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

// killGroup kills whatever is left of the server's process group.
func killGroup(cmd *exec.Cmd) {
	if cmd.Process != nil && cmd.Process.Pid > 0 {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
}
