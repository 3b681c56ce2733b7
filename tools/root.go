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

// maxLinkHops bounds the symbolic links followed while resolving one path,
// as the kernel's own limit does, so that a link loop ends in an error.
const maxLinkHops = 40

// Workspace confines paths to one directory tree, its root.
//
// [Workspace.Resolve] resolves a path the way the kernel would, symbolic
// links included, before it checks that the path stays inside the root, so a
// link cannot carry a path out. The file operations of the standard tools then
// go through an [os.Root] opened on the root: a link swapped in between the
// check and the use still cannot reach outside it.
type Workspace struct {
	dir  string // absolute and free of symbolic links
	root *os.Root
}

// NewWorkspace returns a workspace rooted at dir, an existing directory.
// dir's own symbolic links are resolved here, once.
func NewWorkspace(dir string) (*Workspace, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("workspace %q: %w", dir, err)
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return nil, fmt.Errorf("workspace %q: %w", dir, err)
	}
	fi, err := os.Stat(real)
	if err != nil {
		return nil, fmt.Errorf("workspace %q: %w", dir, err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("workspace %q: not a directory", dir)
	}
	root, err := os.OpenRoot(real)
	if err != nil {
		return nil, fmt.Errorf("workspace %q: %w", dir, err)
	}
	return &Workspace{dir: real, root: root}, nil
}

// Dir returns the workspace's root directory: absolute, with its symbolic
// links resolved.
func (w *Workspace) Dir() string { return w.dir }

// Close releases the directory handle the workspace holds. Tools built on a
// closed workspace fail their calls.
func (w *Workspace) Close() error { return w.root.Close() }

// Resolve turns a path a model gave into a path relative to the root, free of
// symbolic links and of "." and ".." elements ("." is the root itself). A
// relative path is taken relative to the root; an absolute one must lead into
// it. The path need not exist, but every symbolic link on the way must point
// at something that does.
//
// A path that leads outside the root, by "..", by being absolute or through a
// symbolic link, is refused with a [*tool.Error] of kind [tool.KindDenied], as
// is a path through a dangling link (writing through one would create its
// target, wherever that is).
//
// Paths in [StateDir] are refused too: a model that could write there could
// forge the grants a person gave.
func (w *Workspace) Resolve(path string) (string, error) {
	if strings.IndexByte(path, 0) >= 0 {
		return "", fmt.Errorf("path %q contains a NUL byte", path)
	}
	start, rest := w.dir, path
	if filepath.IsAbs(path) {
		vol := filepath.VolumeName(path)
		start, rest = vol+string(filepath.Separator), path[len(vol):]
	}
	var hops int
	abs, err := w.walk(start, splitPath(rest), false, &hops)
	rel, ok := w.rel(abs)
	// Outside wins over every other failure, so that the answer for a path
	// outside never tells what exists there.
	if !ok {
		msg := fmt.Sprintf("path %q is outside the workspace", path)
		if hops > 0 {
			msg += " (a symbolic link on the way points out of it)"
		}
		return "", &tool.Error{Kind: tool.KindDenied, Message: msg}
	}
	if first, _, _ := strings.Cut(filepath.ToSlash(rel), "/"); first == StateDir {
		return "", &tool.Error{Kind: tool.KindDenied,
			Message: fmt.Sprintf("path %q is in %s, lathe's own state (audit log, grants), which tools may not touch", path, StateDir)}
	}
	switch {
	case errors.Is(err, errDangling):
		return "", &tool.Error{Kind: tool.KindDenied,
			Message: fmt.Sprintf("path %q goes through a dangling symbolic link", path)}
	case errors.Is(err, errLinkLoop):
		return "", fmt.Errorf("path %q: too many levels of symbolic links", path)
	case err != nil:
		return "", fmt.Errorf("path %q: %w", path, err)
	}
	return rel, nil
}

// StateDir is the directory of the workspace where lathe keeps its own
// state (the audit log and grants database). The file tools neither show it
// nor let a call reach into it.
const StateDir = ".lathe"

var (
	errDangling = errors.New("dangling symbolic link")
	errLinkLoop = errors.New("too many levels of symbolic links")
)

// walk resolves comps one element at a time from cur, an absolute path free
// of links, and returns where they lead. A link's target is resolved in turn
// (inLink set), and must exist to its end; in the caller's own path, the
// elements from the first missing one on need not.
func (w *Workspace) walk(cur string, comps []string, inLink bool, hops *int) (string, error) {
	for i, c := range comps {
		switch c {
		case "", ".":
			continue
		case "..":
			cur = filepath.Dir(cur)
			continue
		}
		next := filepath.Join(cur, c)
		fi, err := os.Lstat(next)
		if err != nil {
			missing := errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR)
			if !missing || inLink {
				if missing {
					err = errDangling
				}
				return filepath.Join(append([]string{next}, comps[i+1:]...)...), err
			}
			// Nothing below a missing element exists, so what stays below it
			// holds no links and is joined on as it stands. A ".." that climbs
			// back out of it ("new/../x") leads to elements that may exist
			// and be links: those are walked again.
			tail := filepath.Clean(filepath.Join(comps[i:]...))
			if first, _, _ := strings.Cut(tail, string(filepath.Separator)); first == c {
				return filepath.Join(cur, tail), nil
			}
			return w.walk(cur, splitPath(tail), false, hops)
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			cur = next
			continue
		}
		*hops++
		if *hops > maxLinkHops {
			return next, errLinkLoop
		}
		target, err := os.Readlink(next)
		if err != nil {
			return next, err
		}
		base := cur
		if filepath.IsAbs(target) {
			base = filepath.VolumeName(target) + string(filepath.Separator)
			target = target[len(filepath.VolumeName(target)):]
		}
		cur, err = w.walk(base, splitPath(target), true, hops)
		if err != nil {
			return filepath.Join(append([]string{cur}, comps[i+1:]...)...), err
		}
	}
	return cur, nil
}

func splitPath(p string) []string {
	return strings.FieldsFunc(p, func(r rune) bool { return r < 0x80 && os.IsPathSeparator(uint8(r)) })
}

// rel returns abs relative to the root, and whether abs lies inside it.
func (w *Workspace) rel(abs string) (string, bool) {
	rel, err := filepath.Rel(w.dir, abs)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return "", false
	}
	return rel, true
}

// display names a resolved path as a model should read it: relative to the
// root, with forward slashes.
func display(rel string) string { return filepath.ToSlash(rel) }

// escaped reports whether err is os.Root refusing a path that escapes it,
// which happens when a symbolic link is swapped in after [Workspace.Resolve]
// checked the path. The standard library does not export that error, so its
// text is matched.
func escaped(err error) bool {
	return err != nil && strings.Contains(err.Error(), "path escapes from parent")
}

// fsError turns an error of a file operation on rel into one a model can act
// on: it names the path relative to the workspace and says what was wrong in
// plain words, and a refusal of os.Root becomes a denial.
func fsError(verb, rel string, err error) error {
	p := display(rel)
	switch {
	case escaped(err):
		return &tool.Error{Kind: tool.KindDenied,
			Message: fmt.Sprintf("path %q is outside the workspace (a symbolic link on the way points out of it)", p)}
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("cannot %s %q: no such file or directory", verb, p)
	case errors.Is(err, syscall.ENOTDIR):
		return fmt.Errorf("cannot %s %q: a parent of it is not a directory", verb, p)
	case errors.Is(err, syscall.EISDIR):
		return fmt.Errorf("cannot %s %q: it is a directory", verb, p)
	case errors.Is(err, fs.ErrPermission):
		return fmt.Errorf("cannot %s %q: permission denied", verb, p)
	case errors.Is(err, syscall.ELOOP):
		return fmt.Errorf("cannot %s %q: too many levels of symbolic links", verb, p)
	}
	// The operation's own wrapping names a path relative to nothing the
	// model knows (or a temporary file); the cause alone is what matters.
	var pe *fs.PathError
	var le *os.LinkError
	switch {
	case errors.As(err, &pe):
		err = pe.Err
	case errors.As(err, &le):
		err = le.Err
	}
	return fmt.Errorf("cannot %s %q: %v", verb, p, err)
}
