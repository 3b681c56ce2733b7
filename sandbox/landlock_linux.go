package sandbox

import (
	"errors"
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

// rulesetAttr is struct landlock_ruleset_attr up to the scoped field (ABI 6);
// older kernels accept it as long as the fields they do not know are zero.
type rulesetAttr struct {
	fs, net, scoped uint64
}

// landlockABI returns the Landlock ABI version of the kernel, 0 if none.
func landlockABI() int {
	v, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, unix.LANDLOCK_CREATE_RULESET_VERSION)
	if errno != 0 {
		return 0
	}
	return int(v)
}

// landlock restricts the thread, and the program it executes, to the
// paths of the new root: the system paths and the read paths to reading
// and executing, the workspace, the write paths and /tmp to everything.
// With the network off it also denies TCP binds and connections (ABI 4),
// and it scopes signals and abstract Unix sockets to the sandbox (ABI 6).
// On a kernel without Landlock the namespaces alone confine the process.
func landlock(s *spec) error {
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
	rfd, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, uintptr(unsafe.Pointer(&attr)), size, 0)
	if errno != 0 {
		return fmt.Errorf("landlock ruleset: %w", errno)
	}
	fd := int(rfd)
	defer unix.Close(fd)
	allow := func(path string, access uint64) error {
		pfd, err := unix.Open(path, unix.O_PATH|unix.O_CLOEXEC, 0)
		if errors.Is(err, unix.ENOENT) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("landlock %s: %w", path, err)
		}
		defer unix.Close(pfd)
		var st unix.Stat_t
		if err := unix.Fstat(pfd, &st); err != nil {
			return err
		}
		if st.Mode&unix.S_IFMT != unix.S_IFDIR {
			// Directory-only rights do not apply to a file.
			access &= unix.LANDLOCK_ACCESS_FS_EXECUTE | unix.LANDLOCK_ACCESS_FS_READ_FILE |
				unix.LANDLOCK_ACCESS_FS_WRITE_FILE | unix.LANDLOCK_ACCESS_FS_TRUNCATE | unix.LANDLOCK_ACCESS_FS_IOCTL_DEV
			access &= all
		}
		rule := unix.LandlockPathBeneathAttr{Allowed_access: access, Parent_fd: int32(pfd)}
		_, _, errno := unix.Syscall6(unix.SYS_LANDLOCK_ADD_RULE, uintptr(fd), unix.LANDLOCK_RULE_PATH_BENEATH,
			uintptr(unsafe.Pointer(&rule)), 0, 0, 0)
		if errno != 0 {
			return fmt.Errorf("landlock rule %s: %w", path, errno)
		}
		return nil
	}
	paths := map[string]uint64{"/": unix.LANDLOCK_ACCESS_FS_READ_DIR, "/proc": read, "/dev": read, "/tmp": all, s.Workspace: all}
	for _, p := range SystemPaths {
		paths[p] = read
	}
	for _, p := range s.Read {
		paths[p] |= read
	}
	for _, p := range s.Write {
		paths[p] |= all
	}
	for _, p := range []string{"/dev/null", "/dev/zero", "/dev/full", "/dev/tty"} {
		paths[p] = read | unix.LANDLOCK_ACCESS_FS_WRITE_FILE
	}
	for p, a := range paths {
		if err := allow(p, a); err != nil {
			return err
		}
	}
	if _, _, errno := unix.Syscall(unix.SYS_LANDLOCK_RESTRICT_SELF, uintptr(fd), 0, 0); errno != 0 {
		return fmt.Errorf("landlock restrict: %w", errno)
	}
	return nil
}
