//go:build !linux

package sandbox

import "os/exec"

// Supervise leaves cmd alone outside Linux; callers set its process group.
func Supervise(cmd *exec.Cmd) {}
