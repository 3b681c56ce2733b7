//go:build !linux

package sandbox

import "os/exec"

// Supervise leaves cmd alone outside Linux; callers set its process group.
func Supervise(cmd *exec.Cmd) {}

// Kill kills the command's process outside Linux; callers kill its process
// group themselves.
func Kill(cmd *exec.Cmd) error {
	if cmd.Process == nil {
		return nil
	}
	return cmd.Process.Kill()
}
