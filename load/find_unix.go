//go:build unix

package load

import (
	"fmt"
	"os"
	"syscall"
)

// owned checks that the directory d and its marker belong to the current
// user. The directory may also be root's (a repository in /srv, say, set up
// by the administrator); the marker, which says what the workspace is, must
// be the user's own. A marker is not followed: a symbolic link is judged
// by its own owner.
func owned(d, marker string) error {
	uid := uint32(os.Geteuid())
	dfi, err := os.Lstat(d)
	if err != nil {
		return err
	}
	mfi, err := os.Lstat(marker)
	if err != nil {
		return err
	}
	if o := ownerOf(mfi); o != uid {
		return fmt.Errorf("%s is owned by uid %d, not by you (uid %d)", marker, o, uid)
	}
	if o := ownerOf(dfi); o != uid && o != 0 {
		return fmt.Errorf("%s is owned by uid %d, not by you (uid %d)", d, o, uid)
	}
	return nil
}

func ownerOf(fi os.FileInfo) uint32 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return st.Uid
	}
	return ^uint32(0)
}
