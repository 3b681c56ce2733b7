package sandbox

import (
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

// seccomp installs the deny-list: system calls a tool has no business
// making, most of them ways to reach the kernel's less-guarded surface or
// to undo the rest of the sandbox, fail with EPERM. Everything else is
// allowed; a deny-list keeps ordinary programs working, at the price of
// letting through what it does not name (docs/security.md).
func seccomp() error {
	const (
		ld  = unix.BPF_LD | unix.BPF_W | unix.BPF_ABS
		jeq = unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K
		ret = unix.BPF_RET | unix.BPF_K
	)
	deny := uint32(unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM))
	prog := []unix.SockFilter{
		// seccomp_data.arch: a foreign architecture's numbers mean other
		// calls, so such calls are refused outright.
		{Code: ld, K: 4},
		{Code: jeq, Jt: 1, Jf: 0, K: auditArch},
		{Code: ret, K: unix.SECCOMP_RET_KILL_PROCESS},
		// seccomp_data.nr
		{Code: ld, K: 0},
	}
	if x32Bit != 0 {
		prog = append(prog,
			unix.SockFilter{Code: unix.BPF_JMP | unix.BPF_JGE | unix.BPF_K, Jt: 0, Jf: 1, K: x32Bit},
			unix.SockFilter{Code: ret, K: deny})
	}
	for _, nr := range deniedSyscalls {
		prog = append(prog,
			unix.SockFilter{Code: jeq, Jt: 0, Jf: 1, K: uint32(nr)},
			unix.SockFilter{Code: ret, K: deny})
	}
	prog = append(prog, unix.SockFilter{Code: ret, K: unix.SECCOMP_RET_ALLOW})
	fprog := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	if _, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, 0, uintptr(unsafe.Pointer(&fprog))); errno != 0 {
		return fmt.Errorf("seccomp: %w", errno)
	}
	return nil
}
