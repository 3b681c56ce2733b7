//go:build unix

package audit

import (
	"errors"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// errLocked says another open file (of a live process, or of another
// store of this one) holds a journal's lock.
var errLocked = errors.New("locked")

// tryLock takes f's exclusive lock without waiting. flock locks belong to
// the open file, so the kernel drops them when the process holding them
// dies: a journal whose lock can be taken is one nobody writes any more.
func tryLock(f *os.File) error {
	err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
	if errors.Is(err, unix.EWOULDBLOCK) {
		return errLocked
	}
	return err
}

// openFlags are added to every open of a journal: O_NOFOLLOW refuses a
// symbolic link planted under a journal's name, O_NONBLOCK keeps a FIFO
// planted there from blocking the open (it is then refused as not a
// regular file).
const openFlags = unix.O_NOFOLLOW | unix.O_NONBLOCK

// owned reports whether fi is a file this process's user made for itself:
// a regular file it owns, which nobody else can read or write, with no
// other name (a hard link planted under a journal's name to another of
// the user's files is not one).
func owned(fi os.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return false
	}
	return fi.Mode().IsRegular() && int(st.Uid) == os.Geteuid() && fi.Mode().Perm()&0o077 == 0 && st.Nlink == 1
}

// lockOwn takes the lock of a journal this store has just created.
func lockOwn(f *os.File) error { return tryLock(f) }
