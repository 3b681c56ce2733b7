//go:build !linux

package tools

import (
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// rootDir is a directory of the workspace reached through an [os.Root] and
// a path. Elsewhere than on Linux the standard tools rely on os.Root, which
// keeps every operation inside the root but follows symbolic links within
// it; each element is looked at with Lstat before it is used, which narrows
// the window in which a link swapped in is followed, without closing it.
type rootDir struct {
	root *os.Root
	path string
	own  bool // the workspace's own handle, which closes the root
}

func openTop(path string) (dir, error) {
	root, err := os.OpenRoot(path)
	if err != nil {
		return nil, err
	}
	return &rootDir{root: root, path: ".", own: true}, nil
}

func (d *rootDir) join(name string) string { return filepath.Join(d.path, name) }

func (d *rootDir) openDir(name string) (dir, error) {
	fi, err := d.root.Lstat(d.join(name))
	if err != nil {
		return nil, err
	}
	if !fi.IsDir() {
		return nil, &fs.PathError{Op: "open", Path: name, Err: syscall.ENOTDIR}
	}
	return &rootDir{root: d.root, path: d.join(name)}, nil
}

func (d *rootDir) openFile(name string) (*os.File, fs.FileInfo, error) {
	fi, err := d.root.Lstat(d.join(name))
	if err != nil {
		return nil, nil, err
	}
	if err := checkFile(fi); err != nil {
		return nil, nil, &fs.PathError{Op: "open", Path: name, Err: err}
	}
	f, err := d.root.Open(d.join(name))
	if err != nil {
		return nil, nil, err
	}
	if fi, err = f.Stat(); err == nil {
		err = checkFile(fi)
	}
	if err != nil {
		f.Close()
		return nil, nil, &fs.PathError{Op: "open", Path: name, Err: err}
	}
	return f, fi, nil
}

func (d *rootDir) lstat(name string) (fs.FileInfo, error) { return d.root.Lstat(d.join(name)) }
func (d *rootDir) readlink(name string) (string, error)   { return d.root.Readlink(d.join(name)) }

func (d *rootDir) readDir() ([]fs.DirEntry, error) {
	f, err := d.root.Open(d.path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return f.ReadDir(-1)
}

func (d *rootDir) mkdir(name string, perm fs.FileMode) error { return d.root.Mkdir(d.join(name), perm) }

func (d *rootDir) create(name string, perm fs.FileMode) (*os.File, error) {
	return d.root.OpenFile(d.join(name), os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
}

func (d *rootDir) rename(from, to string) error { return d.root.Rename(d.join(from), d.join(to)) }
func (d *rootDir) remove(name string) error     { return d.root.Remove(d.join(name)) }

func (d *rootDir) sync() error {
	f, err := d.root.Open(d.path)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Sync()
}

// close releases the root when d is the workspace's own handle; the
// directories opened from it share the root and hold nothing of their own.
func (d *rootDir) close() error {
	if d.own {
		return d.root.Close()
	}
	return nil
}
