//go:build !linux

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
)

// rootFS reaches the workspace through an os.Root: no path leaves the
// workspace, though a link swapped in between the check and the use may
// redirect a request within it (Linux's fdRoot refuses that too).
type rootFS struct{ r *os.Root }

func openRoot(dir string) (fsRoot, error) {
	r, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	return &rootFS{r: r}, nil
}

func (r *rootFS) close() error { return r.r.Close() }

func (r *rootFS) open(rel string) (file, fs.FileInfo, error) {
	fi, err := r.r.Lstat(rel)
	if err != nil {
		return nil, nil, err
	}
	if err := modeCheck(fi); err != nil {
		return nil, nil, &fs.PathError{Op: "open", Path: rel, Err: err}
	}
	f, err := r.r.Open(rel)
	if err != nil {
		return nil, nil, err
	}
	if fi, err = f.Stat(); err == nil {
		err = modeCheck(fi)
	}
	if err != nil {
		f.Close()
		return nil, nil, &fs.PathError{Op: "open", Path: rel, Err: err}
	}
	return f, fi, nil
}

func modeCheck(fi fs.FileInfo) error {
	switch m := fi.Mode(); {
	case m.IsRegular():
		return nil
	case m.IsDir():
		return errIsDir
	}
	return errNotRegular
}

var errIsDir = errors.New("is a directory")

func (r *rootFS) lstat(rel string) (fs.FileInfo, error) { return r.r.Lstat(rel) }

func (r *rootFS) list(rel string, max int) ([]fs.FileInfo, bool, error) {
	d, err := r.r.Open(rel)
	if err != nil {
		return nil, false, err
	}
	defer d.Close()
	names, err := d.Readdirnames(-1)
	if err != nil {
		return nil, false, err
	}
	slices.Sort(names)
	more := len(names) > max
	if more {
		names = names[:max]
	}
	var out []fs.FileInfo
	for _, n := range names {
		if fi, err := r.r.Lstat(path.Join(rel, n)); err == nil {
			out = append(out, fi)
		}
	}
	return out, more, nil
}

func (r *rootFS) write(rel string, data []byte, appendTo, mkdirs bool) error {
	if mkdirs {
		if dir := path.Dir(rel); dir != "." {
			if err := r.r.MkdirAll(dir, 0o755); err != nil {
				return err
			}
		}
	}
	if appendTo {
		f, err := r.r.OpenFile(rel, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
		if err != nil {
			return err
		}
		if _, err := f.Write(data); err != nil {
			f.Close()
			return err
		}
		return f.Close()
	}
	mode := fs.FileMode(0o644)
	if fi, err := r.r.Lstat(rel); err == nil {
		if err := modeCheck(fi); err != nil {
			return &fs.PathError{Op: "write", Path: rel, Err: err}
		}
		mode = fi.Mode().Perm()
	}
	var b [6]byte
	rand.Read(b[:])
	dir, base := path.Split(rel)
	tmp := dir + "." + strings.TrimPrefix(base, ".") + ".lathe-" + hex.EncodeToString(b[:])
	f, err := r.r.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return err
	}
	_, werr := f.Write(data)
	if err := errors.Join(werr, f.Close()); err != nil {
		r.r.Remove(tmp)
		return err
	}
	if err := r.r.Rename(tmp, rel); err != nil {
		r.r.Remove(tmp)
		return err
	}
	return nil
}

func (r *rootFS) remove(rel string, recursive bool) error {
	fi, err := r.r.Lstat(rel)
	if err != nil {
		return err
	}
	if fi.IsDir() && recursive {
		return r.r.RemoveAll(rel)
	}
	if err := r.r.Remove(rel); err != nil && fi.IsDir() {
		return &fs.PathError{Op: "remove", Path: rel, Err: errNotEmpty}
	}
	return err
}
