package sandbox

import (
	"encoding/hex"
	"slices"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"
)

// nsFlags are the clone flags that make namespaces. Inside the sandbox a
// clone with any of them fails: a new user namespace would give the
// process back the capabilities the init dropped.
const nsFlags = unix.CLONE_NEWNS | unix.CLONE_NEWUTS | unix.CLONE_NEWIPC | unix.CLONE_NEWUSER |
	unix.CLONE_NEWPID | unix.CLONE_NEWNET | unix.CLONE_NEWCGROUP | unix.CLONE_NEWTIME

// socketFamilies are the address families a sandboxed process may make
// sockets of: IP, which reaches nothing but what the network namespace
// holds, and netlink, which programs and C libraries use to list the
// (empty) namespace's interfaces. Every other family fails with
// EAFNOSUPPORT, as if the kernel lacked it: vsock reaches the hypervisor
// and the host whatever the namespace, and packet, alg, bluetooth, can,
// tipc, xdp and the rest are kernel surface no tool needs. Unix sockets
// are allowed only with the network on (see seccompProgram).
var socketFamilies = []uint32{unix.AF_INET, unix.AF_INET6, unix.AF_NETLINK}

// seccompProgram is the deny-list: system calls a tool has no business
// making, most of them ways to reach the kernel's less-guarded surface or
// to undo the rest of the sandbox, fail with EPERM, and so does a clone
// that asks for new namespaces. clone3, whose flags the filter cannot read
// (they are in memory), fails with ENOSYS, which C libraries and Go answer
// by using clone. Everything else is allowed; a deny-list keeps ordinary
// programs working, at the price of letting through what it does not name
// (docs/security.md).
//
// socket is the exception, an allow-list of address families
// (socketFamilies). With the network off a Unix socket fails too, with
// EPERM: connecting one reaches any listener whose file is in a bound
// path (a host process's socket in the workspace), and Landlock cannot
// yet tell which, nor can the filter, which never sees the path.
// socketpair, which makes a connected pair and reaches no one, stays
// allowed for Unix sockets only.
func seccompProgram(network bool) []unix.SockFilter {
	const (
		ld   = unix.BPF_LD | unix.BPF_W | unix.BPF_ABS
		jeq  = unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K
		jset = unix.BPF_JMP | unix.BPF_JSET | unix.BPF_K
		ret  = unix.BPF_RET | unix.BPF_K
		// Offsets in struct seccomp_data.
		offNr   = 0
		offArch = 4
		offArg0 = 16 // the low 32 bits on a little-endian machine
	)
	deny := uint32(unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM))
	prog := []unix.SockFilter{
		// A foreign architecture's numbers mean other calls, so such calls
		// are refused outright.
		{Code: ld, K: offArch},
		{Code: jeq, Jt: 1, Jf: 0, K: auditArch},
		{Code: ret, K: unix.SECCOMP_RET_KILL_PROCESS},
		{Code: ld, K: offNr},
	}
	if x32Bit != 0 {
		prog = append(prog,
			unix.SockFilter{Code: unix.BPF_JMP | unix.BPF_JGE | unix.BPF_K, Jt: 0, Jf: 1, K: x32Bit},
			unix.SockFilter{Code: ret, K: deny})
	}
	prog = append(prog,
		unix.SockFilter{Code: jeq, Jt: 0, Jf: 1, K: unix.SYS_CLONE3},
		unix.SockFilter{Code: ret, K: uint32(unix.SECCOMP_RET_ERRNO | uint32(unix.ENOSYS))},
		unix.SockFilter{Code: jeq, Jt: 0, Jf: 4, K: unix.SYS_CLONE},
		unix.SockFilter{Code: ld, K: offArg0},
		unix.SockFilter{Code: jset, Jt: 0, Jf: 1, K: nsFlags},
		unix.SockFilter{Code: ret, K: deny},
		unix.SockFilter{Code: ret, K: unix.SECCOMP_RET_ALLOW},
	)
	noFamily := uint32(unix.SECCOMP_RET_ERRNO | uint32(unix.EAFNOSUPPORT))
	unixSocket := deny
	if network {
		unixSocket = unix.SECCOMP_RET_ALLOW
	}
	// socket(family, …): the allowed families jump to the allow at the
	// end of the block, a Unix socket to its own answer, the rest fail.
	fams := len(socketFamilies)
	prog = append(prog,
		unix.SockFilter{Code: jeq, Jt: 0, Jf: uint8(fams + 5), K: unix.SYS_SOCKET},
		unix.SockFilter{Code: ld, K: offArg0})
	for i, f := range socketFamilies {
		prog = append(prog, unix.SockFilter{Code: jeq, Jt: uint8(fams - i + 1), K: f})
	}
	prog = append(prog,
		unix.SockFilter{Code: jeq, Jt: 2, K: unix.AF_UNIX},
		unix.SockFilter{Code: ret, K: noFamily},
		unix.SockFilter{Code: ret, K: unix.SECCOMP_RET_ALLOW},
		unix.SockFilter{Code: ret, K: unixSocket},
		// socketpair(family, …): Unix only.
		unix.SockFilter{Code: jeq, Jt: 0, Jf: 4, K: unix.SYS_SOCKETPAIR},
		unix.SockFilter{Code: ld, K: offArg0},
		unix.SockFilter{Code: jeq, Jt: 1, K: unix.AF_UNIX},
		unix.SockFilter{Code: ret, K: noFamily},
		unix.SockFilter{Code: ret, K: unix.SECCOMP_RET_ALLOW},
	)
	// The denied calls are found by a binary search over their numbers:
	// the kernel compiles the program, and runs it for every system call
	// number to build its cache, on every run, so the program's length is
	// paid for each time.
	nrs := slices.Clone(deniedSyscalls)
	slices.Sort(nrs)
	nrs = slices.Compact(nrs)
	var body []branch
	var search func(nrs []int)
	search = func(nrs []int) {
		if len(nrs) <= 4 {
			for _, nr := range nrs {
				body = append(body, branch{f: unix.SockFilter{Code: jeq, K: uint32(nr)}, jt: toDeny, jf: toNext})
			}
			body = append(body, branch{f: unix.SockFilter{Code: unix.BPF_JMP | unix.BPF_JA}, jt: toAllow})
			return
		}
		mid := len(nrs) / 2
		at := len(body)
		body = append(body, branch{f: unix.SockFilter{Code: unix.BPF_JMP | unix.BPF_JGE | unix.BPF_K, K: uint32(nrs[mid])}, jf: toNext})
		search(nrs[:mid])
		body[at].jt = len(body) // the upper half starts here
		search(nrs[mid:])
	}
	search(nrs)
	allow, denyAt := len(body), len(body)+1
	for i, b := range body {
		target := func(t int) uint32 {
			switch t {
			case toNext:
				t = i + 1
			case toAllow:
				t = allow
			case toDeny:
				t = denyAt
			}
			return uint32(t - i - 1)
		}
		f := b.f
		if f.Code == unix.BPF_JMP|unix.BPF_JA {
			f.K = target(b.jt)
		} else {
			jt, jf := target(b.jt), target(b.jf)
			if jt > 255 || jf > 255 {
				panic("sandbox: seccomp program too long for its jumps")
			}
			f.Jt, f.Jf = uint8(jt), uint8(jf)
		}
		prog = append(prog, f)
	}
	return append(prog,
		unix.SockFilter{Code: ret, K: unix.SECCOMP_RET_ALLOW},
		unix.SockFilter{Code: ret, K: deny})
}

// branch is an instruction of the search whose jump targets are indexes
// in the search's code or one of the to* marks.
type branch struct {
	f      unix.SockFilter
	jt, jf int
}

const (
	toNext  = -1
	toAllow = -2
	toDeny  = -3
)

// seccompArg is the program as the init takes it, in hex.
func seccompArg(network bool) string {
	if network {
		return seccompArgs[1]()
	}
	return seccompArgs[0]()
}

// seccompArgs hold the two programs, with the network off and on, each
// encoded once.
var seccompArgs = [2]func() string{
	sync.OnceValue(func() string { return encodeProgram(seccompProgram(false)) }),
	sync.OnceValue(func() string { return encodeProgram(seccompProgram(true)) }),
}

func encodeProgram(prog []unix.SockFilter) string {
	b := unsafe.Slice((*byte)(unsafe.Pointer(&prog[0])), len(prog)*int(unsafe.Sizeof(prog[0])))
	return hex.EncodeToString(b)
}
