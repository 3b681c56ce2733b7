//go:build unix

package runtimetest

import (
	"bytes"
	"os"
	"strconv"
	"syscall"
)

// Alive reports whether the process pid is running: it exists and, where
// /proc says so, is not a zombie waiting for its parent (a process whose
// parent has died waits for the system's init, which in a container may
// never come).
func Alive(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	// The state follows the command name, which is in parentheses and may
	// itself hold any character.
	if i := bytes.LastIndexByte(b, ')'); i >= 0 && i+2 < len(b) {
		return b[i+2] != 'Z'
	}
	return true
}
