//go:build linux && amd64

package sandbox

import (
	"encoding/binary"
	"slices"
	"testing"

	"golang.org/x/sys/unix"
)

// runFilter runs a classic BPF seccomp program on one system call, as the
// kernel would, and returns the action.
func runFilter(t *testing.T, prog []unix.SockFilter, arch uint32, nr int32, arg0 uint64) uint32 {
	t.Helper()
	var data [64]byte // struct seccomp_data
	binary.LittleEndian.PutUint32(data[0:], uint32(nr))
	binary.LittleEndian.PutUint32(data[4:], arch)
	binary.LittleEndian.PutUint64(data[16:], arg0)
	var a uint32
	for pc := 0; pc < len(prog); pc++ {
		in := prog[pc]
		switch in.Code {
		case unix.BPF_LD | unix.BPF_W | unix.BPF_ABS:
			a = binary.LittleEndian.Uint32(data[in.K:])
		case unix.BPF_JMP | unix.BPF_JA:
			pc += int(in.K)
		case unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, unix.BPF_JMP | unix.BPF_JGE | unix.BPF_K, unix.BPF_JMP | unix.BPF_JSET | unix.BPF_K:
			var ok bool
			switch in.Code &^ (unix.BPF_JMP | unix.BPF_K) {
			case unix.BPF_JEQ:
				ok = a == in.K
			case unix.BPF_JGE:
				ok = a >= in.K
			case unix.BPF_JSET:
				ok = a&in.K != 0
			}
			if ok {
				pc += int(in.Jt)
			} else {
				pc += int(in.Jf)
			}
		case unix.BPF_RET | unix.BPF_K:
			return in.K
		default:
			t.Fatalf("instruction %d: unexpected code %#x", pc, in.Code)
		}
	}
	t.Fatal("the program ran off its end")
	return 0
}

// TestSeccompProgram runs the filter over every system call number and
// checks that it denies exactly the deny-list, clone with namespace flags
// and clone3, and refuses a foreign architecture outright.
func TestSeccompProgram(t *testing.T) {
	prog := seccompProgram(false)
	deny := uint32(unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM))
	noFamily := uint32(unix.SECCOMP_RET_ERRNO | uint32(unix.EAFNOSUPPORT))
	for nr := int32(0); nr < 1024; nr++ {
		got := runFilter(t, prog, auditArch, nr, 0)
		want := uint32(unix.SECCOMP_RET_ALLOW)
		switch {
		case slices.Contains(deniedSyscalls, int(nr)):
			want = deny
		case nr == unix.SYS_CLONE3:
			want = unix.SECCOMP_RET_ERRNO | uint32(unix.ENOSYS)
		case nr == unix.SYS_SOCKET || nr == unix.SYS_SOCKETPAIR:
			// Argument 0 is AF_UNSPEC, a family no socket has.
			want = noFamily
		}
		if got != want {
			t.Errorf("system call %d: action %#x, want %#x", nr, got, want)
		}
	}
	if got := runFilter(t, prog, auditArch, unix.SYS_GETPID|x32Bit, 0); got != deny {
		t.Errorf("an x32 call: action %#x, want a denial", got)
	}
	if got := runFilter(t, prog, unix.AUDIT_ARCH_I386, unix.SYS_GETPID, 0); got != unix.SECCOMP_RET_KILL_PROCESS {
		t.Errorf("a foreign architecture: action %#x, want the process killed", got)
	}
	for _, c := range []struct {
		flags uint64
		want  uint32
	}{
		{uint64(unix.SIGCHLD), unix.SECCOMP_RET_ALLOW},
		{unix.CLONE_VM | unix.CLONE_THREAD | unix.CLONE_SIGHAND, unix.SECCOMP_RET_ALLOW},
		{unix.CLONE_NEWUSER | uint64(unix.SIGCHLD), deny},
		{unix.CLONE_NEWNS, deny},
		{unix.CLONE_NEWNET | unix.CLONE_NEWPID, deny},
		{unix.CLONE_NEWCGROUP, deny},
		{unix.CLONE_NEWTIME, deny},
	} {
		if got := runFilter(t, prog, auditArch, unix.SYS_CLONE, c.flags); got != c.want {
			t.Errorf("clone(%#x): action %#x, want %#x", c.flags, got, c.want)
		}
	}
}

// TestSeccompSockets checks the filter's allow-list of socket families,
// with the network off and on.
func TestSeccompSockets(t *testing.T) {
	const afVsock, afAlg, afXDP = 40, 38, 44
	deny := uint32(unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM))
	noFamily := uint32(unix.SECCOMP_RET_ERRNO | uint32(unix.EAFNOSUPPORT))
	allow := uint32(unix.SECCOMP_RET_ALLOW)
	for _, network := range []bool{false, true} {
		prog := seccompProgram(network)
		unixWant := deny
		if network {
			unixWant = allow
		}
		for _, c := range []struct {
			nr     int32
			family uint64
			want   uint32
		}{
			{unix.SYS_SOCKET, unix.AF_INET, allow},
			{unix.SYS_SOCKET, unix.AF_INET6, allow},
			{unix.SYS_SOCKET, unix.AF_NETLINK, allow},
			{unix.SYS_SOCKET, unix.AF_UNIX, unixWant},
			{unix.SYS_SOCKET, afVsock, noFamily},
			{unix.SYS_SOCKET, unix.AF_PACKET, noFamily},
			{unix.SYS_SOCKET, afAlg, noFamily},
			{unix.SYS_SOCKET, afXDP, noFamily},
			{unix.SYS_SOCKET, unix.AF_BLUETOOTH, noFamily},
			// Only the low 32 bits are the int argument.
			{unix.SYS_SOCKET, 1<<32 | afVsock, noFamily},
			{unix.SYS_SOCKETPAIR, unix.AF_UNIX, allow},
			{unix.SYS_SOCKETPAIR, afVsock, noFamily},
			{unix.SYS_SOCKETPAIR, unix.AF_INET, noFamily},
			// The block does not disturb what follows it.
			{unix.SYS_CONNECT, unix.AF_UNIX, allow},
			{unix.SYS_BPF, 0, deny},
		} {
			if got := runFilter(t, prog, auditArch, c.nr, c.family); got != c.want {
				t.Errorf("network %v: call %d with family %d: action %#x, want %#x", network, c.nr, c.family, got, c.want)
			}
		}
	}
}
