package sandbox

import (
	"fmt"
	"sort"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"
)

// rulesetAttr is struct landlock_ruleset_attr up to the scoped field (ABI 6);
// older kernels accept it as long as the fields they do not know are zero.
type rulesetAttr struct {
	fs, net, scoped uint64
}

// landlockABI returns the Landlock ABI version of the kernel, 0 if none.
var landlockABI = sync.OnceValue(func() int {
	v, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, unix.LANDLOCK_CREATE_RULESET_VERSION)
	if errno != 0 {
		return 0
	}
	return int(v)
})

// landlockArgs returns the init's Landlock steps for s: the new root (the
// system paths and the read paths) may be read and executed; the
// workspace, the write paths and /tmp allow everything; the few devices
// may be written; nothing else is reachable, should the process find a
// way out of its root. With the
// network off TCP binds and connections are denied (ABI 4), and signals and
// abstract Unix sockets are scoped to the run (ABI 6). On a kernel without
// Landlock there are no steps: the namespaces alone confine the process.
func landlockArgs(s shape) []string {
	abi := landlockABI()
	if abi == 0 {
		return nil
	}
	read := uint64(unix.LANDLOCK_ACCESS_FS_EXECUTE | unix.LANDLOCK_ACCESS_FS_READ_FILE | unix.LANDLOCK_ACCESS_FS_READ_DIR)
	all := uint64(1<<13) - 1
	if abi >= 2 {
		all |= unix.LANDLOCK_ACCESS_FS_REFER
	}
	if abi >= 3 {
		all |= unix.LANDLOCK_ACCESS_FS_TRUNCATE
	}
	if abi >= 5 {
		all |= unix.LANDLOCK_ACCESS_FS_IOCTL_DEV
	}
	// Directory-only rights do not apply to a file.
	file := all & (unix.LANDLOCK_ACCESS_FS_EXECUTE | unix.LANDLOCK_ACCESS_FS_READ_FILE |
		unix.LANDLOCK_ACCESS_FS_WRITE_FILE | unix.LANDLOCK_ACCESS_FS_TRUNCATE | unix.LANDLOCK_ACCESS_FS_IOCTL_DEV)
	attr := rulesetAttr{fs: all}
	size := unsafe.Sizeof(uint64(0)) * 2
	if abi >= 4 && !s.Network {
		attr.net = unix.LANDLOCK_ACCESS_NET_BIND_TCP | unix.LANDLOCK_ACCESS_NET_CONNECT_TCP
	}
	if abi >= 6 {
		attr.scoped = unix.LANDLOCK_SCOPE_SIGNAL | unix.LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET
		size = unsafe.Sizeof(attr)
	}
	if abi < 4 {
		size = unsafe.Sizeof(uint64(0))
	}
	// Everything in the new root may be read and executed: it holds only
	// the system paths, the read paths and the rest listed here. One rule
	// for it rather than one per path keeps the init's work per run small.
	paths := map[string]uint64{"/": read, "/tmp": all}
	if s.Workspace != "" {
		paths[s.Workspace] = all
	}
	for _, p := range s.Write {
		paths[p] |= all
	}
	for _, p := range []string{"/dev/null", "/dev/zero", "/dev/full", "/dev/tty"} {
		paths[p] = read | unix.LANDLOCK_ACCESS_FS_WRITE_FILE
	}
	args := []string{"landlock", fmt.Sprintf("%d %d %d %d %d", attr.fs, attr.net, attr.scoped, size, file)}
	keys := make([]string, 0, len(paths))
	for p := range paths {
		keys = append(keys, p)
	}
	sort.Strings(keys)
	for _, p := range keys {
		args = append(args, "allow", fmt.Sprintf("%d:%s", paths[p], p))
	}
	return append(args, "restrict", "1")
}
