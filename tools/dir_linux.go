package tools

import (
	"io/fs"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// fdDir is a directory held open by its file descriptor. Every operation is
// relative to it (openat, mkdirat, renameat …), with O_NOFOLLOW, so that
// what a call reaches is decided by the descriptors it opened, not by
// names that another process may change meanwhile.
type fdDir struct {
	f *os.File
}

// openTop opens the workspace's root directory.
func openTop(path string) (dir, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	return &fdDir{f: os.NewFile(uintptr(fd), path)}, nil
}

func (d *fdDir) fd() int { return int(d.f.Fd()) }

func pathErr(op, name string, err error) error {
	if err == nil {
		return nil
	}
	return &fs.PathError{Op: op, Path: name, Err: err}
}

func (d *fdDir) openDir(name string) (dir, error) {
	// O_DIRECTORY makes the kernel refuse anything else before opening it:
	// a FIFO is never opened, so the call cannot block on one.
	fd, err := unix.Openat(d.fd(), name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err == unix.ENOTDIR {
		// Linux says ENOTDIR for a link met with O_DIRECTORY|O_NOFOLLOW;
		// a link is what the callers must tell apart (ELOOP). A directory
		// there now was a link a moment ago.
		if fi, lerr := d.lstat(name); lerr == nil && (fi.Mode()&fs.ModeSymlink != 0 || fi.IsDir()) {
			err = unix.ELOOP
		}
	}
	if err != nil {
		return nil, pathErr("open", name, err)
	}
	// The file's name is the directory's whole path: os.File.ReadDir looks
	// up an entry's type by that path where the file system does not say it
	// (a type that is then only shown; no path is opened by it).
	return &fdDir{f: os.NewFile(uintptr(fd), filepath.Join(d.f.Name(), name))}, nil
}

func (d *fdDir) openFile(name string) (*os.File, fs.FileInfo, error) {
	// Look first: opening a device can act on it.
	fi, err := d.lstat(name)
	if err != nil {
		return nil, nil, err
	}
	if err := checkFile(fi); err != nil {
		return nil, nil, pathErr("open", name, err)
	}
	// A FIFO swapped in after the look does not block an O_NONBLOCK open,
	// and the check of what was opened refuses it.
	fd, err := unix.Openat(d.fd(), name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, nil, pathErr("open", name, err)
	}
	f := os.NewFile(uintptr(fd), name)
	fi, err = f.Stat()
	if err == nil {
		err = checkFile(fi)
	}
	if err != nil {
		f.Close()
		return nil, nil, pathErr("open", name, err)
	}
	return f, fi, nil
}

func (d *fdDir) lstat(name string) (fs.FileInfo, error) {
	// An O_PATH descriptor describes the entry itself, link or not, without
	// opening it: no FIFO or device is touched.
	fd, err := unix.Openat(d.fd(), name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, pathErr("lstat", name, err)
	}
	f := os.NewFile(uintptr(fd), name)
	defer f.Close()
	return f.Stat()
}

func (d *fdDir) readlink(name string) (string, error) {
	for size := 256; ; size *= 2 {
		buf := make([]byte, size)
		n, err := unix.Readlinkat(d.fd(), name, buf)
		if err != nil {
			return "", pathErr("readlink", name, err)
		}
		if n < size {
			return string(buf[:n]), nil
		}
	}
}

func (d *fdDir) readDir() ([]fs.DirEntry, error) { return d.f.ReadDir(-1) }

func (d *fdDir) mkdir(name string, perm fs.FileMode) error {
	return pathErr("mkdir", name, unix.Mkdirat(d.fd(), name, uint32(perm.Perm())))
}

func (d *fdDir) create(name string, perm fs.FileMode) (*os.File, error) {
	fd, err := unix.Openat(d.fd(), name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, uint32(perm.Perm()))
	if err != nil {
		return nil, pathErr("create", name, err)
	}
	return os.NewFile(uintptr(fd), name), nil
}

func (d *fdDir) rename(from, to string) error {
	// Both names are in this directory: the file lands where it was made.
	if err := unix.Renameat(d.fd(), from, d.fd(), to); err != nil {
		return &os.LinkError{Op: "rename", Old: from, New: to, Err: err}
	}
	return nil
}

func (d *fdDir) remove(name string) error {
	return pathErr("remove", name, unix.Unlinkat(d.fd(), name, 0))
}

func (d *fdDir) sync() error  { return d.f.Sync() }
func (d *fdDir) close() error { return d.f.Close() }
