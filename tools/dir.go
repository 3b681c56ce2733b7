package tools

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/lathe-tools/lathe/tool"
)

// dir is an open directory of the workspace. Every name passed to its
// methods is one path element, and none is followed if it is a symbolic
// link: a link found where a directory or a file is expected is an error
// (ELOOP or ENOTDIR), never a way somewhere else. Walking a resolved path
// one element at a time through dirs therefore reaches exactly what
// [Workspace.Resolve] checked, or fails, even while another process swaps a
// directory for a link, and a file is then created and renamed in the
// directory that was opened, not in whatever its name leads to by then.
type dir interface {
	// openDir opens the directory name. It never opens what is not a
	// directory (a FIFO, a device), so it cannot block.
	openDir(name string) (dir, error)
	// openFile opens the regular file name for reading. It refuses what is
	// not a regular file without blocking, before and after the open, so a
	// FIFO swapped in between is refused too.
	openFile(name string) (*os.File, fs.FileInfo, error)
	lstat(name string) (fs.FileInfo, error)
	readlink(name string) (string, error)
	// readDir lists the directory's entries, in no particular order.
	readDir() ([]fs.DirEntry, error)
	mkdir(name string, perm fs.FileMode) error
	// create makes the file name, which must not exist, for writing.
	create(name string, perm fs.FileMode) (*os.File, error)
	rename(from, to string) error
	remove(name string) error
	// sync flushes the directory, so that a rename in it survives a crash.
	sync() error
	close() error
}

// errNotRegular is the error for a file that is neither a regular file nor
// a directory: a FIFO, a device or a socket, which the file tools never open.
var errNotRegular = errors.New("not a regular file")

// notRegular names what fi is, for an error about a file the tools will not
// open.
func notRegular(fi fs.FileInfo) error {
	kind := "special file"
	switch m := fi.Mode(); {
	case m&fs.ModeNamedPipe != 0:
		kind = "FIFO"
	case m&fs.ModeSocket != 0:
		kind = "socket"
	case m&fs.ModeDevice != 0:
		kind = "device"
	case m&fs.ModeSymlink != 0:
		kind = "symbolic link"
	}
	return fmt.Errorf("%w (it is a %s)", errNotRegular, kind)
}

// elems splits a resolved path into its elements; "." has none.
func elems(rel string) []string {
	if rel == "." || rel == "" {
		return nil
	}
	return strings.Split(rel, string(filepath.Separator))
}

// openDir opens the directory rel, a path [Workspace.Resolve] returned, one
// element at a time from the root.
func (w *Workspace) openDir(rel string) (dir, error) {
	d, err := w.top.openDir(".")
	if err != nil {
		return nil, err
	}
	for _, e := range elems(rel) {
		next, err := d.openDir(e)
		d.close()
		if err != nil {
			return nil, err
		}
		d = next
	}
	return d, nil
}

// openParent opens the directory that holds rel and returns it with rel's
// last element. With create set, missing directories on the way are made.
// rel must not be the root itself.
func (w *Workspace) openParent(rel string, create bool) (dir, string, error) {
	es := elems(rel)
	if len(es) == 0 {
		return nil, "", &fs.PathError{Op: "open", Path: rel, Err: syscall.EISDIR}
	}
	d, err := w.top.openDir(".")
	if err != nil {
		return nil, "", err
	}
	for _, e := range es[:len(es)-1] {
		next, err := d.openDir(e)
		if create && errors.Is(err, fs.ErrNotExist) {
			if err = d.mkdir(e, 0o755); err == nil || errors.Is(err, fs.ErrExist) {
				next, err = d.openDir(e)
			}
		}
		d.close()
		if err != nil {
			return nil, "", err
		}
		d = next
	}
	return d, es[len(es)-1], nil
}

// lstat describes rel without following a link at any element.
func (w *Workspace) lstat(rel string) (fs.FileInfo, error) {
	if len(elems(rel)) == 0 {
		d, err := w.top.openDir(".")
		if err != nil {
			return nil, err
		}
		defer d.close()
		return d.lstat(".")
	}
	d, base, err := w.openParent(rel, false)
	if err != nil {
		return nil, err
	}
	defer d.close()
	return d.lstat(base)
}

// openFile opens rel, a regular file, for reading; a directory is refused
// with EISDIR and anything else that is not a regular file with
// errNotRegular, unopened.
func (w *Workspace) openFile(rel string) (*os.File, fs.FileInfo, error) {
	d, base, err := w.openParent(rel, false)
	if err != nil {
		return nil, nil, err
	}
	defer d.close()
	return d.openFile(base)
}

// checkFile is shared by the implementations of dir.openFile: fi describes
// what is there, before or after the open.
func checkFile(fi fs.FileInfo) error {
	switch {
	case fi.IsDir():
		return syscall.EISDIR
	case !fi.Mode().IsRegular():
		return notRegular(fi)
	}
	return nil
}

// raced is the error for a symbolic link found where [Workspace.Resolve]
// had found none: something changed the path while the call ran.
func raced(rel string) error {
	return &tool.Error{Kind: tool.KindDenied, Message: fmt.Sprintf(
		"path %q changed while the call ran (a symbolic link appeared on the way, and it is not followed); nothing was done there",
		display(rel))}
}
