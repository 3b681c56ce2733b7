package process

import (
	"syscall"
	"unsafe"
)

// awaitExit blocks until the process pid has exited, without reaping it
// (waitid with WNOWAIT), and reports true. While the exited process is not
// reaped its id, and so its process group's id, cannot be reused, which
// makes it safe to signal the group afterwards.
func awaitExit(pid int) bool {
	const pPID = 1     // P_PID
	var info [128]byte // siginfo_t
	for {
		_, _, errno := syscall.Syscall6(syscall.SYS_WAITID, pPID, uintptr(pid),
			uintptr(unsafe.Pointer(&info[0])), syscall.WEXITED|syscall.WNOWAIT, 0, 0)
		switch errno {
		case 0:
			return true
		case syscall.EINTR:
			continue
		}
		return false
	}
}
