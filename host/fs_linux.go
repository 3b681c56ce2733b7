package host

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// fdRoot is the workspace held open by a descriptor. Every path is
// reached from it with openat2(RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS), or,
// where the kernel lacks openat2, one element at a time with O_NOFOLLOW:
// either way no symbolic link is followed, so what a request reaches is
// what the host checked, or nothing.
type fdRoot struct {
	f *os.File
	// noOpenat2 is set once openat2 turned out to be missing (ENOSYS) or
	// refused by a seccomp filter (EPERM).
	noOpenat2 atomic.Bool
}

func openRoot(dir string) (fsRoot, error) {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: dir, Err: err}
	}
	return &fdRoot{f: os.NewFile(uintptr(fd), dir)}, nil
}

func (r *fdRoot) close() error { return r.f.Close() }

func (r *fdRoot) fd() int { return int(r.f.Fd()) }

func pathErr(op, name string, err error) error {
	if err == nil {
		return nil
	}
	return &fs.PathError{Op: op, Path: name, Err: err}
}

// openDir opens the directory rel ("." for the root), following no link.
func (r *fdRoot) openDir(rel string) (int, error) {
	const flags = unix.O_RDONLY | unix.O_DIRECTORY | unix.O_CLOEXEC
	if !r.noOpenat2.Load() {
		fd, err := unix.Openat2(r.fd(), rel, &unix.OpenHow{Flags: flags,
			Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS})
		switch {
		case err == nil:
			return fd, nil
		case err == unix.ENOSYS || err == unix.EPERM:
			r.noOpenat2.Store(true)
		case err == unix.ENOTDIR:
			return -1, r.linkOrNotDir(rel)
		default:
			if err == unix.EXDEV {
				// RESOLVE_BENEATH refuses "..": a resolved path has none,
				// so a ".." here came in by a change of the path.
				err = unix.ELOOP
			}
			return -1, pathErr("open", rel, err)
		}
	}
	fd, err := unix.Openat(r.fd(), ".", flags, 0)
	if err != nil {
		return -1, pathErr("open", rel, err)
	}
	for _, e := range elems(rel) {
		next, err := unix.Openat(fd, e, flags|unix.O_NOFOLLOW, 0)
		unix.Close(fd)
		if err == unix.ENOTDIR {
			return -1, r.linkOrNotDir(rel)
		}
		if err != nil {
			return -1, pathErr("open", rel, err)
		}
		fd = next
	}
	return fd, nil
}

// linkOrNotDir tells apart, after an open of rel as a directory failed
// with ENOTDIR, a link met on the way (which Linux reports so with
// O_NOFOLLOW) from a file that is not a directory.
func (r *fdRoot) linkOrNotDir(rel string) error {
	var st unix.Stat_t
	if err := unix.Fstatat(r.fd(), rel, &st, unix.AT_SYMLINK_NOFOLLOW); err == nil && st.Mode&unix.S_IFMT == unix.S_IFLNK {
		return pathErr("open", rel, unix.ELOOP)
	}
	// A link further up makes the fstatat above follow it; walk it.
	cur := ""
	for _, e := range elems(rel) {
		cur = path.Join(cur, e)
		if err := unix.Fstatat(r.fd(), cur, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			break
		}
		if st.Mode&unix.S_IFMT == unix.S_IFLNK {
			return pathErr("open", rel, unix.ELOOP)
		}
	}
	return pathErr("open", rel, unix.ENOTDIR)
}

// elems splits a resolved path into its elements; "." has none.
func elems(rel string) []string {
	if rel == "." || rel == "" {
		return nil
	}
	return strings.Split(rel, "/")
}

// parent opens the directory that holds rel, and returns rel's last
// element. With mkdirs, missing directories on the way are made.
func (r *fdRoot) parent(rel string, mkdirs bool) (int, string, error) {
	dir, base := path.Split(rel)
	dir = strings.TrimSuffix(dir, "/")
	if dir == "" {
		dir = "."
	}
	fd, err := r.openDir(dir)
	if err == nil || !mkdirs || !errors.Is(err, fs.ErrNotExist) {
		return fd, base, err
	}
	// Make what is missing, one element at a time, following no link.
	fd, err = unix.Openat(r.fd(), ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, "", pathErr("open", rel, err)
	}
	for _, e := range elems(dir) {
		next, err := unix.Openat(fd, e, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err == unix.ENOENT {
			if err = unix.Mkdirat(fd, e, 0o755); err == nil || err == unix.EEXIST {
				next, err = unix.Openat(fd, e, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
			}
		}
		unix.Close(fd)
		if err == unix.ENOTDIR {
			return -1, "", r.linkOrNotDir(dir)
		}
		if err != nil {
			return -1, "", pathErr("mkdir", rel, err)
		}
		fd = next
	}
	return fd, base, nil
}

func (r *fdRoot) open(rel string) (file, fs.FileInfo, error) {
	pfd, base, err := r.parent(rel, false)
	if err != nil {
		return nil, nil, err
	}
	defer unix.Close(pfd)
	// Look first: opening a device can act on it.
	var st unix.Stat_t
	if err := unix.Fstatat(pfd, base, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return nil, nil, pathErr("stat", rel, err)
	}
	if err := checkRegular(st.Mode); err != nil {
		return nil, nil, pathErr("open", rel, err)
	}
	// A FIFO swapped in after the look does not block an O_NONBLOCK open,
	// and the check of what was opened refuses it.
	fd, err := unix.Openat(pfd, base, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, nil, pathErr("open", rel, err)
	}
	f := os.NewFile(uintptr(fd), base)
	fi, err := f.Stat()
	if err == nil {
		err = checkRegular(uint32(unixMode(fi)))
	}
	if err != nil {
		f.Close()
		return nil, nil, pathErr("open", rel, err)
	}
	return f, fi, nil
}

// unixMode returns the S_IFMT bits of fi.
func unixMode(fi fs.FileInfo) uint32 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return st.Mode
	}
	return unix.S_IFREG
}

func checkRegular(mode uint32) error {
	switch mode & unix.S_IFMT {
	case unix.S_IFREG:
		return nil
	case unix.S_IFDIR:
		return unix.EISDIR
	case unix.S_IFLNK:
		return unix.ELOOP
	}
	return errNotRegular
}

func (r *fdRoot) lstat(rel string) (fs.FileInfo, error) {
	if rel == "." {
		return r.f.Stat()
	}
	pfd, base, err := r.parent(rel, false)
	if err != nil {
		return nil, err
	}
	defer unix.Close(pfd)
	return statAt(pfd, base)
}

func statAt(dirfd int, name string) (fs.FileInfo, error) {
	var st unix.Stat_t
	if err := unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return nil, pathErr("stat", name, err)
	}
	return &statInfo{name: name, st: st}, nil
}

// statInfo is an fs.FileInfo of a stat of the host's own.
type statInfo struct {
	name string
	st   unix.Stat_t
}

func (s *statInfo) Name() string { return s.name }
func (s *statInfo) Size() int64  { return s.st.Size }
func (s *statInfo) Mode() fs.FileMode {
	m := fs.FileMode(s.st.Mode & 0o777)
	switch s.st.Mode & unix.S_IFMT {
	case unix.S_IFDIR:
		m |= fs.ModeDir
	case unix.S_IFLNK:
		m |= fs.ModeSymlink
	case unix.S_IFIFO:
		m |= fs.ModeNamedPipe
	case unix.S_IFSOCK:
		m |= fs.ModeSocket
	case unix.S_IFCHR:
		m |= fs.ModeDevice | fs.ModeCharDevice
	case unix.S_IFBLK:
		m |= fs.ModeDevice
	}
	return m
}
func (s *statInfo) ModTime() time.Time { return time.Unix(s.st.Mtim.Unix()) }
func (s *statInfo) IsDir() bool        { return s.st.Mode&unix.S_IFMT == unix.S_IFDIR }
func (s *statInfo) Sys() any           { return &s.st }

func (r *fdRoot) list(rel string, max int) ([]fs.FileInfo, bool, error) {
	fd, err := r.openDir(rel)
	if err != nil {
		return nil, false, err
	}
	d := os.NewFile(uintptr(fd), rel)
	defer d.Close()
	names, err := d.Readdirnames(-1)
	if err != nil {
		return nil, false, pathErr("list", rel, err)
	}
	slices.Sort(names)
	more := false
	if len(names) > max {
		names, more = names[:max], true
	}
	out := make([]fs.FileInfo, 0, len(names))
	for _, n := range names {
		fi, err := statAt(fd, n)
		if err != nil {
			// Gone since it was listed.
			continue
		}
		out = append(out, fi)
	}
	return out, more, nil
}

func (r *fdRoot) write(rel string, data []byte, appendTo, mkdirs bool) error {
	pfd, base, err := r.parent(rel, mkdirs)
	if err != nil {
		return err
	}
	defer unix.Close(pfd)
	if appendTo {
		fd, err := unix.Openat(pfd, base, unix.O_WRONLY|unix.O_APPEND|unix.O_CREAT|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_NOCTTY|unix.O_CLOEXEC, 0o644)
		if err != nil {
			return pathErr("open", rel, err)
		}
		f := os.NewFile(uintptr(fd), base)
		defer f.Close()
		fi, err := f.Stat()
		if err == nil {
			err = checkRegular(unixMode(fi))
		}
		if err != nil {
			return pathErr("open", rel, err)
		}
		// Appending writes into the file itself, under all its names: one
		// with another name may be lathe.toml or a file of .lathe/ seen
		// through a hard link. (A replacing write renames a new file over
		// the name and leaves the other names alone.)
		if st, ok := fi.Sys().(*syscall.Stat_t); ok && st.Nlink > 1 {
			return pathErr("append", rel, errHardLinked)
		}
		if _, err := f.Write(data); err != nil {
			return pathErr("write", rel, err)
		}
		return nil
	}
	// Replace it whole: write a new file beside it and rename it over,
	// so that a reader never sees half of it and a failure leaves the old.
	mode := uint32(0o644)
	var st unix.Stat_t
	switch err := unix.Fstatat(pfd, base, &st, unix.AT_SYMLINK_NOFOLLOW); {
	case err == nil:
		if err := checkRegular(st.Mode); err != nil {
			return pathErr("write", rel, err)
		}
		mode = st.Mode & 0o777
	case err != unix.ENOENT:
		return pathErr("write", rel, err)
	}
	var tmp string
	var fd int
	for range 10 {
		var b [6]byte
		rand.Read(b[:])
		tmp = "." + base + ".lathe-" + hex.EncodeToString(b[:])
		if len(tmp) > 255 {
			tmp = ".lathe-" + hex.EncodeToString(b[:])
		}
		fd, err = unix.Openat(pfd, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, mode)
		if err != unix.EEXIST {
			break
		}
	}
	if err != nil {
		return pathErr("create", rel, err)
	}
	f := os.NewFile(uintptr(fd), tmp)
	_, werr := f.Write(data)
	if werr == nil {
		// The creation mode passed the umask; the file's own is kept.
		werr = f.Chmod(fs.FileMode(mode))
	}
	cerr := f.Close()
	if err := errors.Join(werr, cerr); err != nil {
		unix.Unlinkat(pfd, tmp, 0)
		return pathErr("write", rel, err)
	}
	if err := unix.Renameat(pfd, tmp, pfd, base); err != nil {
		unix.Unlinkat(pfd, tmp, 0)
		return pathErr("rename", rel, err)
	}
	return nil
}

// maxDepth bounds how deep a recursive remove goes.
const maxDepth = 256

func (r *fdRoot) remove(rel string, recursive bool) error {
	pfd, base, err := r.parent(rel, false)
	if err != nil {
		return err
	}
	defer unix.Close(pfd)
	var st unix.Stat_t
	if err := unix.Fstatat(pfd, base, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return pathErr("remove", rel, err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return pathErr("remove", rel, unix.Unlinkat(pfd, base, 0))
	}
	if !recursive {
		err := unix.Unlinkat(pfd, base, unix.AT_REMOVEDIR)
		if err == unix.ENOTEMPTY || err == unix.EEXIST {
			return pathErr("remove", rel, errNotEmpty)
		}
		return pathErr("remove", rel, err)
	}
	if err := removeAllAt(pfd, base, 0); err != nil {
		return pathErr("remove", rel, err)
	}
	return nil
}

// removeAllAt removes the directory name of dirfd and what it holds,
// opening each directory below with O_NOFOLLOW: a link is removed, never
// followed.
func removeAllAt(dirfd int, name string, depth int) error {
	if depth > maxDepth {
		return errors.New("the directory is nested too deep")
	}
	fd, err := unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	d := os.NewFile(uintptr(fd), name)
	defer d.Close()
	for {
		names, err := d.Readdirnames(1024)
		for _, n := range names {
			var st unix.Stat_t
			if err := unix.Fstatat(fd, n, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
				if err == unix.ENOENT {
					continue
				}
				return err
			}
			if st.Mode&unix.S_IFMT == unix.S_IFDIR {
				if err := removeAllAt(fd, n, depth+1); err != nil {
					return err
				}
				continue
			}
			if err := unix.Unlinkat(fd, n, 0); err != nil && err != unix.ENOENT {
				return err
			}
		}
		if err != nil || len(names) == 0 {
			break
		}
	}
	return unix.Unlinkat(dirfd, name, unix.AT_REMOVEDIR)
}
