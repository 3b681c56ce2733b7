// Package statedir holds what lathe's stores outside the workspace share:
// the place of the user's state directory, the checks that keep other
// users and the workspace out of it, and the atomic write of one record.
// The trust records (package trust) and the grants (package audit) live
// there; both are rules a person made, so nothing a tool can write may
// reach them. The token files of lathe serve --http live there too; a
// token is a secret, not a rule, so its reader checks more than
// [CheckDir] does: that no one else may even read it.
package statedir

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// Dir returns the directory name under the user's state directory:
// $XDG_STATE_HOME/lathe/name, or $HOME/.local/state/lathe/name when
// XDG_STATE_HOME is unset or not absolute (as the XDG spec asks).
func Dir(name string) (string, error) {
	if dir := os.Getenv("XDG_STATE_HOME"); filepath.IsAbs(dir) {
		return filepath.Join(dir, "lathe", name), nil
	}
	if home := os.Getenv("HOME"); filepath.IsAbs(home) {
		return filepath.Join(home, ".local", "state", "lathe", name), nil
	}
	return "", fmt.Errorf("no place for the %s store: set XDG_STATE_HOME or HOME to an absolute path", name)
}

// Inside reports whether dir, which need not exist yet, lies inside the
// directory ws (a real path): with its nearest existing ancestor resolved,
// so that a link out of the workspace and back in is seen through.
func Inside(dir, ws string) (bool, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return false, err
	}
	rest := ""
	for {
		if r, err := filepath.EvalSymlinks(dir); err == nil {
			dir = filepath.Join(r, rest)
			break
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			break
		}
		rest = filepath.Join(filepath.Base(dir), rest)
		dir = parent
	}
	return Within(ws, dir), nil
}

// Within reports whether the path p is root or lies below it, lexically.
func Within(root, p string) bool {
	rel, err := filepath.Rel(root, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

// CheckDir refuses a store directory that is not a directory, that others
// may write, or that another user owns: they could then make rules for
// this user. what names the store in the error ("trust store"). An error
// that wraps fs.ErrNotExist means there is no store yet.
func CheckDir(dir, what string) error {
	fi, err := os.Lstat(dir)
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return fmt.Errorf("%s %s is not a directory", what, dir)
	}
	if fi.Mode().Perm()&0o022 != 0 {
		return fmt.Errorf("%s %s may be written by other users (mode %v); make it 0700", what, dir, fi.Mode().Perm())
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Geteuid() {
		return fmt.Errorf("%s %s belongs to user %d, not to this user (%d)", what, dir, st.Uid, os.Geteuid())
	}
	return nil
}

// MkdirAll creates dir and its missing parents with mode 0700 and checks
// the result with [CheckDir].
func MkdirAll(dir, what string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	return CheckDir(dir, what)
}

// WriteFile replaces the file p with data at once: it writes a temporary
// file of mode 0600 beside it, syncs it, renames it over p and syncs the
// directory. A reader sees the old bytes or the new, never a part.
func WriteFile(p string, data []byte) error {
	return place(p, data, os.Rename)
}

// CreateFile writes the file p with data at once, as [WriteFile] does,
// but only where p does not exist yet: the temporary file is linked into
// place, so that of two writers at the same moment one wins alone and the
// other gets an error that wraps fs.ErrExist.
func CreateFile(p string, data []byte) error {
	return place(p, data, os.Link)
}

// place writes data to a temporary file of mode 0600 beside p, syncs it,
// puts it at p with put (a rename or a link) and syncs the directory.
func place(p string, data []byte, put func(tmp, p string) error) (err error) {
	tmp, err := os.CreateTemp(filepath.Dir(p), ".record-*")
	if err != nil {
		return err
	}
	// After a rename the name is gone and this does nothing; after a link
	// it removes the second name.
	defer os.Remove(tmp.Name())
	defer func() {
		if err != nil {
			tmp.Close()
		}
	}()
	// CreateTemp makes the file 0600 already; say so, whatever the umask.
	if err = tmp.Chmod(0o600); err != nil {
		return err
	}
	if _, err = tmp.Write(data); err != nil {
		return err
	}
	if err = tmp.Sync(); err != nil {
		return err
	}
	if err = tmp.Close(); err != nil {
		return err
	}
	if err = put(tmp.Name(), p); err != nil {
		return err
	}
	// The new name lasts only once the directory is synced.
	if d, err := os.Open(filepath.Dir(p)); err == nil {
		d.Sync()
		d.Close()
	}
	return nil
}

// ReadFile reads the record p, refusing anything but a regular file: a
// link or a FIFO placed in the store is an error, not a record (and a FIFO
// does not hang the reader). An error that wraps fs.ErrNotExist means
// there is no record.
func ReadFile(p string) ([]byte, error) {
	f, fi, err := Open(p)
	if err != nil {
		if errors.Is(err, syscall.ELOOP) {
			return nil, fmt.Errorf("%s is a symbolic link, not a record", p)
		}
		return nil, err
	}
	defer f.Close()
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", p)
	}
	return io.ReadAll(f)
}

// Open opens p for reading without following a symbolic link (the error
// then wraps syscall.ELOOP) and without blocking on a FIFO, and returns
// the information of the file it opened, for the caller's checks: a stat
// of the name could meet another file than the one read.
func Open(p string) (*os.File, fs.FileInfo, error) {
	f, err := os.OpenFile(p, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	return f, fi, nil
}

// ReadPrivate reads the file p as [ReadFile] does, and only if no one but
// this user could have written it: it must belong to this user and be
// writable by no one else. It is for caches whose content decides what
// tools are offered and what they claim, and which are not secrets. A file
// larger than limit is refused.
func ReadPrivate(p string, limit int64) ([]byte, error) {
	f, fi, err := Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	switch {
	case !fi.Mode().IsRegular():
		return nil, fmt.Errorf("%s is not a regular file", p)
	case fi.Mode().Perm()&0o022 != 0:
		return nil, fmt.Errorf("%s may be written by other users (mode %v)", p, fi.Mode().Perm())
	case fi.Size() > limit:
		return nil, fmt.Errorf("%s is larger than %d bytes", p, limit)
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Geteuid() {
		return nil, fmt.Errorf("%s belongs to user %d, not to this user (%d)", p, st.Uid, os.Geteuid())
	}
	return io.ReadAll(io.LimitReader(f, limit))
}

// ClearJSON removes the *.json records in dir and the temporary files whose
// names start with tmpPrefix (left by a write that died), and returns how
// many records it removed. A dir that does not exist holds nothing.
func ClearJSON(dir, tmpPrefix string) (int, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	n := 0
	var errs []error
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !(strings.HasSuffix(name, ".json") || strings.HasPrefix(name, tmpPrefix)) {
			continue
		}
		if err := os.Remove(filepath.Join(dir, name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
			continue
		}
		if strings.HasSuffix(name, ".json") {
			n++
		}
	}
	return n, errors.Join(errs...)
}
