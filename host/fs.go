package host

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/lathe-tools/lathe/protect"
)

// fsRoot reaches the files of the workspace by paths the host resolved
// and checked (relative, "/" between elements, free of links and of "."
// and ".."), following no symbolic link on the way: a link found where
// the check found none fails with ELOOP. Its implementations are in
// fs_linux.go (openat2 and *at calls on a descriptor of the workspace)
// and fs_other.go (os.Root).
type fsRoot interface {
	// open opens the regular file rel for reading; anything else is
	// refused without being opened (a FIFO cannot block it).
	open(rel string) (file, fs.FileInfo, error)
	// lstat describes rel itself.
	lstat(rel string) (fs.FileInfo, error)
	// list describes the entries of the directory rel, links as links.
	list(rel string, max int) ([]fs.FileInfo, bool, error)
	// write writes data to rel: replacing it whole (atomically, by a
	// rename in its directory) or appending; mkdirs makes missing parents.
	write(rel string, data []byte, append, mkdirs bool) error
	// remove removes rel; a directory with what it holds when recursive.
	remove(rel string, recursive bool) error
	close() error
}

// file is an open file of the workspace.
type file interface {
	io.ReaderAt
	io.Closer
}

// Kinds of file operations, as [Session.Check] takes them and the policy
// and the audit log name them.
const (
	KindRead   = "read"
	KindWrite  = "write"
	KindList   = "list"
	KindStat   = "stat"
	KindRemove = "remove"
)

// resolve resolves path for an operation of kind and checks it against
// the permissions: it returns the path relative to the workspace ("/"
// between elements) and the operation to carry on, or the error the tool
// gets, already recorded.
func (s *Session) resolve(ctx context.Context, kind, path string) (string, *op, *Error) {
	o := s.begin(kind, path)
	if path == "" {
		return "", nil, s.deny(ctx, o, "host", fmt.Sprintf("%s: the path is empty; name a path relative to the workspace", kind))
	}
	r, err := s.h.ws.Resolve(path)
	if err != nil {
		e := fromTool(err)
		if e.Code == CodeDenied {
			return "", nil, s.deny(ctx, o, "host", e.Message)
		}
		o.approval, o.by = "deny", "host"
		return "", nil, s.finish(ctx, o, e)
	}
	rel := filepath.ToSlash(r)
	o.subject = rel
	var ok bool
	key := "read"
	switch kind {
	case KindRead, KindList, KindStat:
		ok = s.h.perms.canRead(rel)
	default:
		key = "write"
		ok = s.h.perms.canWrite(rel)
	}
	if !ok {
		what := fmt.Sprintf("%s of %q", kind, rel)
		if rel != path {
			what = fmt.Sprintf("%s of %q (which %q resolves to)", kind, rel, path)
		}
		return "", nil, s.deny(ctx, o, "permissions", s.h.outside(what, suggest(rel), key))
	}
	if kind == KindWrite || kind == KindRemove {
		if rel == "." {
			return "", nil, s.deny(ctx, o, "host", fmt.Sprintf("%s of the workspace's root itself is refused", kind))
		}
		if protect.Is(rel) {
			return "", nil, s.deny(ctx, o, "host", fmt.Sprintf(
				"%q is lathe's own configuration or state (%s), which a tool may not create, change or remove; a person edits it",
				path, strings.Join(protect.Names(), ", ")))
		}
	}
	if e := s.decide(ctx, o); e != nil {
		return "", nil, e
	}
	return rel, o, nil
}

// Check checks an operation of kind ("read", "write", "list", "stat",
// "remove") on path (relative to the workspace, or absolute) against the
// tool's permissions and the policy, and records it, without doing it:
// for a runtime that does the file's input and output itself (WASI). The
// error is a *[Error] ([CodeDenied], [CodeEnded]).
func (s *Session) Check(ctx context.Context, kind, path string) error {
	switch kind {
	case KindRead, KindWrite, KindList, KindStat, KindRemove:
	default:
		return &Error{Code: codeInvalidParams, Message: fmt.Sprintf("host: no file operation %q", kind)}
	}
	if e := s.enter(); e != nil {
		return e
	}
	defer s.inflight.Done()
	c, cancel := s.opContext(ctx)
	defer cancel()
	_, o, e := s.resolve(c, kind, path)
	if e != nil {
		return e
	}
	s.finish(c, o, nil)
	return nil
}

func (s *Session) read(ctx context.Context, p ReadParams) (any, *Error) {
	rel, o, e := s.resolve(ctx, KindRead, p.Path)
	if e != nil {
		return nil, e
	}
	max := s.h.cfg.Limits.Read
	switch {
	case p.Offset < 0 || p.Length < 0:
		return nil, s.finish(ctx, o, invalid("offset and length must not be negative"))
	case p.Length > max:
		return nil, s.finish(ctx, o, tooLarge("fs/read: length %d is over the host's limit of %d bytes per request; read it in parts (offset)", p.Length, max))
	}
	f, fi, err := s.h.root.open(rel)
	if err != nil {
		return nil, s.finish(ctx, o, fsError("read", rel, err))
	}
	defer f.Close()
	n := p.Length
	if n == 0 {
		n = max
	}
	if rest := fi.Size() - p.Offset; rest < n {
		n = max64(rest, 0)
	}
	buf := make([]byte, n)
	got, err := f.ReadAt(buf, p.Offset)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, s.finish(ctx, o, fsError("read", rel, err))
	}
	buf = buf[:got]
	o.bytes = int64(got)
	s.finish(ctx, o, nil)
	return ReadResult{Data: buf, EOF: p.Offset+int64(got) >= fi.Size()}, nil
}

func max64(a, b int64) int64 {
	if a > b {
		return a
	}
	return b
}

func (s *Session) write(ctx context.Context, p WriteParams) (any, *Error) {
	if int64(len(p.Data)) > s.h.cfg.Limits.Write {
		o := s.begin(KindWrite, p.Path)
		o.approval, o.by = "deny", "host"
		return nil, s.finish(ctx, o, tooLarge("fs/write: %d bytes are over the host's limit of %d bytes per request; write it in parts (append)",
			len(p.Data), s.h.cfg.Limits.Write))
	}
	rel, o, e := s.resolve(ctx, KindWrite, p.Path)
	if e != nil {
		return nil, e
	}
	if err := s.h.root.write(rel, p.Data, p.Append, p.MakeDirs); err != nil {
		return nil, s.finish(ctx, o, fsError("write", rel, err))
	}
	o.bytes = int64(len(p.Data))
	s.finish(ctx, o, nil)
	return WriteResult{Written: int64(len(p.Data))}, nil
}

func (s *Session) list(ctx context.Context, p PathParams) (any, *Error) {
	rel, o, e := s.resolve(ctx, KindList, p.Path)
	if e != nil {
		return nil, e
	}
	fis, more, err := s.h.root.list(rel, s.h.cfg.Limits.List+len(s.h.private)+1)
	if err != nil {
		return nil, s.finish(ctx, o, fsError("list", rel, err))
	}
	res := ListResult{Entries: []FileInfo{}}
	for _, fi := range fis {
		child := fi.Name()
		if rel != "." {
			child = rel + "/" + child
		}
		if protect.IsState(child) || s.h.isPrivate(child) {
			continue
		}
		if len(res.Entries) == s.h.cfg.Limits.List {
			more = true
			break
		}
		res.Entries = append(res.Entries, info(fi))
	}
	res.Truncated = more
	s.finish(ctx, o, nil)
	return res, nil
}

func (s *Session) stat(ctx context.Context, p PathParams) (any, *Error) {
	rel, o, e := s.resolve(ctx, KindStat, p.Path)
	if e != nil {
		return nil, e
	}
	fi, err := s.h.root.lstat(rel)
	if err != nil {
		return nil, s.finish(ctx, o, fsError("stat", rel, err))
	}
	s.finish(ctx, o, nil)
	r := info(fi)
	r.Name = filepath.Base(rel)
	return r, nil
}

func (s *Session) remove(ctx context.Context, p RemoveParams) (any, *Error) {
	rel, o, e := s.resolve(ctx, KindRemove, p.Path)
	if e != nil {
		return nil, e
	}
	if p.Recursive {
		for _, d := range s.h.private {
			if strings.HasPrefix(d, rel+"/") {
				return nil, s.finish(ctx, o, &Error{Code: CodeDenied, Message: fmt.Sprintf(
					"%q holds one of lathe's own directories for this user (%s), which a tool may not remove", rel, d)})
			}
		}
	}
	if err := s.h.root.remove(rel, p.Recursive); err != nil {
		return nil, s.finish(ctx, o, fsError("remove", rel, err))
	}
	s.finish(ctx, o, nil)
	return struct{}{}, nil
}

// isPrivate reports whether rel is one of lathe's per-user directories
// inside the workspace or lies below one.
func (h *Host) isPrivate(rel string) bool {
	for _, p := range h.private {
		if p == "." || rel == p || strings.HasPrefix(rel, p+"/") {
			return true
		}
	}
	return false
}

// info describes fi on the wire.
func info(fi fs.FileInfo) FileInfo {
	t := "other"
	switch m := fi.Mode(); {
	case m.IsRegular():
		t = "file"
	case m.IsDir():
		t = "dir"
	case m&fs.ModeSymlink != 0:
		t = "symlink"
	}
	return FileInfo{Name: fi.Name(), Type: t, Size: fi.Size(), Mode: uint32(fi.Mode().Perm()),
		ModTime: fi.ModTime().UTC().Format(time.RFC3339)}
}

// errNotRegular refuses a file that is neither regular nor a directory.
var errNotRegular = errors.New("not a regular file")

// errHardLinked refuses appending to a file with more than one name.
var errHardLinked = errors.New("the file has other names (hard links), one of which may be lathe's own; replace it whole instead of appending")

// errNotEmpty says that a directory removed without recursive holds files.
var errNotEmpty = errors.New("the directory is not empty; set recursive to remove it with what it holds")

// fsError turns the error of a file operation on rel into the tool's: a
// link met where the check found none is a denial (the path changed
// between the check and the use); anything else is a failure that names
// its cause, with an errno-like reason in Data.
func fsError(verb, rel string, err error) *Error {
	var reason, msg string
	switch {
	case errors.Is(err, syscall.ELOOP), escaped(err):
		return &Error{Code: CodeDenied, Message: fmt.Sprintf(
			"%q changed while the request ran (a symbolic link appeared on the way, and it is not followed); nothing was done there", rel)}
	case errors.Is(err, errHardLinked):
		return &Error{Code: CodeDenied, Message: fmt.Sprintf("cannot %s %q: %v", verb, rel, errHardLinked)}
	case errors.Is(err, errNotRegular):
		reason, msg = "EINVAL", "it is not a regular file; only regular files and directories are opened"
	case errors.Is(err, errNotEmpty):
		reason, msg = "ENOTEMPTY", errNotEmpty.Error()
	case errors.Is(err, syscall.ENOTEMPTY), errors.Is(err, syscall.EEXIST) && verb == "remove":
		reason, msg = "ENOTEMPTY", errNotEmpty.Error()
	case errors.Is(err, fs.ErrNotExist):
		reason, msg = "ENOENT", "no such file or directory"
	case errors.Is(err, syscall.ENOTDIR):
		reason, msg = "ENOTDIR", "a part of the path is not a directory"
	case errors.Is(err, syscall.EISDIR):
		reason, msg = "EISDIR", "it is a directory"
	case errors.Is(err, fs.ErrPermission):
		reason, msg = "EACCES", "permission denied"
	case errors.Is(err, fs.ErrExist):
		reason, msg = "EEXIST", "it exists"
	default:
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		reason, msg = "EIO", err.Error()
	}
	return &Error{Code: CodeFailed, Message: fmt.Sprintf("cannot %s %q: %s", verb, rel, msg),
		Data: []byte(fmt.Sprintf(`{"reason":%q}`, reason))}
}

// escaped reports whether err is os.Root refusing a path that escapes it
// (where the host works through one): the standard library does not export
// that error, so its text is matched.
func escaped(err error) bool {
	return err != nil && strings.Contains(err.Error(), "path escapes from parent")
}
