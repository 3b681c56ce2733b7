package wasm

import (
	"context"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/lathe-tools/lathe/host"
	experimentalsys "github.com/tetratelabs/wazero/experimental/sys"
	"github.com/tetratelabs/wazero/experimental/sysfs"
	"github.com/tetratelabs/wazero/sys"
)

// checker checks one file operation of a call against the tool's
// permissions and the policy and records it (host.Session.Check).
type checker func(ctx context.Context, kind, path string) error

// mount is one WASI preopen: the host directory dir, seen by the guest at
// the same absolute path, writable or not.
type mount struct {
	dir      string // absolute, symlinks resolved
	writable bool
}

// mounts returns the preopens of a tool: the workspace, the only place
// the host's permissions may name, writable when some write permission
// lies in it. What each path may do is still checked path by path, so the
// preopen only bounds what can be reached.
func mounts(workspace string, perms host.Permissions) []mount {
	if workspace == "" {
		return nil
	}
	dir, err := filepath.EvalSymlinks(workspace)
	if err != nil {
		return nil
	}
	return []mount{{dir: dir, writable: len(perms.Write) > 0}}
}

// confinedFS is a preopen. Every path is opened through an os.Root, so
// that neither "..", nor an absolute symlink, nor a link planted while the
// tool runs leads out of the directory; and every operation is checked
// (and so recorded) with the call's host session before it is done.
// wazero's own directory file system follows links wherever they lead,
// which is why lathe does not use it.
type confinedFS struct {
	experimentalsys.UnimplementedFS
	ctx      context.Context
	root     *os.Root
	dir      string
	writable bool
	check    checker
}

func (c *confinedFS) host(p string) string {
	return filepath.Join(c.dir, filepath.FromSlash(p))
}

// rel turns the guest's path, relative to the preopen, into one os.Root
// takes, refusing what climbs out lexically (os.Root would refuse it too;
// refusing here gives the guest EPERM rather than a puzzling error).
func rel(p string) (string, experimentalsys.Errno) {
	if p == "" {
		p = "."
	}
	if path.IsAbs(p) {
		return "", experimentalsys.EPERM
	}
	clean := path.Clean(p)
	if clean == ".." || strings.HasPrefix(clean, "../") {
		return "", experimentalsys.EPERM
	}
	return clean, 0
}

// allow checks kind on the guest path p.
func (c *confinedFS) allow(kind, p string) (string, experimentalsys.Errno) {
	r, errno := rel(p)
	if errno != 0 {
		return "", errno
	}
	if (kind == "write" || kind == "remove") && !c.writable {
		if err := c.check(c.ctx, kind, c.host(r)); err != nil {
			return "", deniedErrno(err)
		}
		return "", experimentalsys.EROFS
	}
	if err := c.check(c.ctx, kind, c.host(r)); err != nil {
		return "", deniedErrno(err)
	}
	return r, 0
}

// deniedErrno maps a refusal of the host (denied, or the call ended) to
// what the guest sees.
func deniedErrno(error) experimentalsys.Errno { return experimentalsys.EPERM }

func errno(err error) experimentalsys.Errno {
	if err == nil {
		return 0
	}
	if strings.Contains(err.Error(), "path escapes from parent") {
		return experimentalsys.EPERM
	}
	return experimentalsys.UnwrapOSError(err)
}

func (c *confinedFS) OpenFile(p string, flag experimentalsys.Oflag, perm fs.FileMode) (experimentalsys.File, experimentalsys.Errno) {
	writes := flag&(experimentalsys.O_WRONLY|experimentalsys.O_RDWR|experimentalsys.O_CREAT|experimentalsys.O_TRUNC|experimentalsys.O_APPEND) != 0
	r, e := rel(p)
	switch {
	case e != 0:
		return nil, e
	case writes:
		r, e = c.allow("write", p)
	case r != ".":
		r, e = c.allow("read", p)
	}
	// The preopen's own directory is opened unchecked (wazero opens it for
	// the guest to find its preopens, and fails hard if it cannot); what is
	// in it is checked entry by entry, and reading the list of its entries
	// is checked as "list" by Readdir.
	if e != 0 {
		return nil, e
	}
	if flag&experimentalsys.O_DIRECTORY != 0 && writes {
		return nil, experimentalsys.EISDIR
	}
	var of int
	switch {
	case flag&experimentalsys.O_RDWR != 0:
		of = os.O_RDWR
	case flag&experimentalsys.O_WRONLY != 0:
		of = os.O_WRONLY
	default:
		of = os.O_RDONLY
	}
	if flag&experimentalsys.O_APPEND != 0 {
		of |= os.O_APPEND
	}
	if flag&experimentalsys.O_CREAT != 0 {
		of |= os.O_CREATE
	}
	if flag&experimentalsys.O_EXCL != 0 {
		of |= os.O_EXCL
	}
	if flag&experimentalsys.O_TRUNC != 0 {
		of |= os.O_TRUNC
	}
	if flag&experimentalsys.O_NOFOLLOW != 0 {
		if fi, err := c.root.Lstat(r); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
			return nil, experimentalsys.ELOOP
		}
	}
	// O_NONBLOCK: a FIFO put in place of a file must not block the open;
	// it is refused below.
	f, err := c.root.OpenFile(r, of|syscall.O_NONBLOCK, perm)
	if err != nil {
		return nil, errno(err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, errno(err)
	}
	if flag&experimentalsys.O_DIRECTORY != 0 && !fi.IsDir() {
		f.Close()
		return nil, experimentalsys.ENOTDIR
	}
	if !fi.IsDir() && !fi.Mode().IsRegular() {
		// A FIFO or a device would let the guest block lathe or reach
		// what no permission names.
		f.Close()
		return nil, experimentalsys.EPERM
	}
	fl, e := wrap(c.root, r, f, fi.IsDir(), of&os.O_APPEND != 0)
	if fl != nil && fi.IsDir() {
		fl.(*file).list = func() error { return c.check(c.ctx, "list", c.host(r)) }
	}
	return fl, e
}

func (c *confinedFS) Lstat(p string) (sys.Stat_t, experimentalsys.Errno) {
	r, e := c.allow("stat", p)
	if e != 0 {
		return sys.Stat_t{}, e
	}
	fi, err := c.root.Lstat(r)
	if err != nil {
		return sys.Stat_t{}, errno(err)
	}
	return sys.NewStat_t(fi), 0
}

func (c *confinedFS) Stat(p string) (sys.Stat_t, experimentalsys.Errno) {
	r, e := c.allow("stat", p)
	if e != 0 {
		return sys.Stat_t{}, e
	}
	fi, err := c.root.Stat(r)
	if err != nil {
		return sys.Stat_t{}, errno(err)
	}
	return sys.NewStat_t(fi), 0
}

func (c *confinedFS) Mkdir(p string, perm fs.FileMode) experimentalsys.Errno {
	r, e := c.allow("write", p)
	if e != 0 {
		return e
	}
	return errno(c.root.Mkdir(r, perm))
}

func (c *confinedFS) Chmod(p string, perm fs.FileMode) experimentalsys.Errno {
	r, e := c.allow("write", p)
	if e != 0 {
		return e
	}
	return errno(c.root.Chmod(r, perm&0o777))
}

func (c *confinedFS) Rename(from, to string) experimentalsys.Errno {
	rf, e := c.allow("remove", from)
	if e != 0 {
		return e
	}
	rt, e := c.allow("write", to)
	if e != 0 {
		return e
	}
	return errno(c.root.Rename(rf, rt))
}

func (c *confinedFS) Rmdir(p string) experimentalsys.Errno {
	r, e := c.allow("remove", p)
	if e != 0 {
		return e
	}
	fi, err := c.root.Lstat(r)
	if err != nil {
		return errno(err)
	}
	if !fi.IsDir() {
		return experimentalsys.ENOTDIR
	}
	return errno(c.root.Remove(r))
}

func (c *confinedFS) Unlink(p string) experimentalsys.Errno {
	r, e := c.allow("remove", p)
	if e != 0 {
		return e
	}
	fi, err := c.root.Lstat(r)
	if err != nil {
		return errno(err)
	}
	if fi.IsDir() {
		return experimentalsys.EISDIR
	}
	return errno(c.root.Remove(r))
}

// Link and Symlink are refused: a link made by the guest could name a file
// its permissions do not reach under a name they do, and a later open
// through the link would be checked by the wrong name.
func (c *confinedFS) Link(_, _ string) experimentalsys.Errno    { return experimentalsys.EPERM }
func (c *confinedFS) Symlink(_, _ string) experimentalsys.Errno { return experimentalsys.EPERM }

func (c *confinedFS) Readlink(p string) (string, experimentalsys.Errno) {
	r, e := c.allow("stat", p)
	if e != 0 {
		return "", e
	}
	s, err := c.root.Readlink(r)
	return s, errno(err)
}

func (c *confinedFS) Utimens(p string, atim, mtim int64) experimentalsys.Errno {
	r, e := c.allow("write", p)
	if e != 0 {
		return e
	}
	if atim == experimentalsys.UTIME_OMIT || mtim == experimentalsys.UTIME_OMIT {
		fi, err := c.root.Stat(r)
		if err != nil {
			return errno(err)
		}
		if atim == experimentalsys.UTIME_OMIT {
			atim = fi.ModTime().UnixNano()
		}
		if mtim == experimentalsys.UTIME_OMIT {
			mtim = fi.ModTime().UnixNano()
		}
	}
	return errno(c.root.Chtimes(r, time.Unix(0, atim), time.Unix(0, mtim)))
}

// file is an open file of a preopen: wazero's adapter of an fs.File over
// the *os.File opened through the os.Root, with what the adapter lacks
// (truncation, sync) done on the same *os.File. A directory rewound by the
// guest is opened again through the os.Root, so it stays confined too.
type file struct {
	experimentalsys.File
	f      *os.File
	append bool
	// list, for a directory, checks reading its entries; nil once passed.
	list func() error
}

func (f *file) Readdir(n int) ([]experimentalsys.Dirent, experimentalsys.Errno) {
	if f.list != nil {
		if err := f.list(); err != nil {
			return nil, deniedErrno(err)
		}
		f.list = nil
	}
	return f.File.Readdir(n)
}

// wrap returns the guest's file of f, opened through root as name.
func wrap(root *os.Root, name string, f *os.File, dir, appending bool) (experimentalsys.File, experimentalsys.Errno) {
	flag := experimentalsys.O_RDONLY
	if dir {
		flag |= experimentalsys.O_DIRECTORY
	}
	inner, e := (&sysfs.AdaptFS{FS: &reopenFS{root: root, first: f}}).OpenFile(name, flag, 0)
	if e != 0 {
		f.Close()
		return nil, e
	}
	return &file{File: inner, f: f, append: appending}, 0
}

// reopenFS hands the adapter the file already opened, then opens again
// (to rewind a directory) through the os.Root.
type reopenFS struct {
	root  *os.Root
	first *os.File
}

func (r *reopenFS) Open(name string) (fs.File, error) {
	if f := r.first; f != nil {
		r.first = nil
		return f, nil
	}
	return r.root.Open(name)
}

func (f *file) IsAppend() bool { return f.append }

// SetAppend is refused: wazero's way reopens the file by name, and a name
// could lead elsewhere by now.
func (f *file) SetAppend(enable bool) experimentalsys.Errno {
	if enable == f.append {
		return 0
	}
	return experimentalsys.ENOSYS
}

func (f *file) Truncate(size int64) experimentalsys.Errno { return errno(f.f.Truncate(size)) }
func (f *file) Sync() experimentalsys.Errno               { return errno(f.f.Sync()) }
func (f *file) Datasync() experimentalsys.Errno           { return errno(f.f.Sync()) }

// Utimens on an open file is refused: the os package sets times by name
// only, and a name could lead elsewhere by now. Setting them by path
// (confinedFS.Utimens) goes through the preopen's checks.
func (f *file) Utimens(atim, mtim int64) experimentalsys.Errno { return experimentalsys.ENOSYS }
