package tools

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/lathe-tools/lathe/protect"
	"github.com/lathe-tools/lathe/tool"
)

// maxLinkHops bounds the symbolic links followed while resolving one path,
// as the kernel's own limit does, so that a link loop ends in an error.
const maxLinkHops = 40

// Workspace confines paths to one directory tree, its root.
//
// [Workspace.Resolve] resolves a path the way the kernel would, symbolic
// links included, before it checks that the path stays inside the root and
// out of what lathe protects, so a link cannot carry a path out. The file
// operations of the standard tools then walk the resolved path from a
// descriptor of the root one element at a time, following no symbolic link
// (openat with O_NOFOLLOW, then renameat in the directory that was opened):
// a link swapped in between the check and the use, even one that stays
// inside the root, fails the operation instead of redirecting it.
type Workspace struct {
	dir string // absolute and free of symbolic links
	top dir    // the root directory, held open
	// private holds lathe's per-user directories that lie inside the root
	// (protect.UserDirs), relative to it: treated as the state directory.
	private []string
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
	top, err := openTop(real)
	if err != nil {
		return nil, fmt.Errorf("workspace %q: %w", dir, err)
	}
	w := &Workspace{dir: real, top: top}
	for _, d := range protect.UserDirs() {
		// The directory need not exist yet: resolve the part that does.
		// A workspace that is itself one of them ("." here) keeps every
		// path from the tools.
		if rel, ok := w.rel(evalExisting(d)); ok {
			w.private = append(w.private, rel)
		}
	}
	return w, nil
}

// Dir returns the workspace's root directory: absolute, with its symbolic
// links resolved.
func (w *Workspace) Dir() string { return w.dir }

// Close releases the directory handle the workspace holds. Tools built on a
// closed workspace fail their calls.
func (w *Workspace) Close() error { return w.top.close() }

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
// forge the grants a person gave. The workspace's configuration file may be
// resolved (read_file reads it); the tools that change files refuse it and
// the rest of [protect.Names] besides.
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
	if protect.IsState(rel) {
		return "", &tool.Error{Kind: tool.KindDenied,
			Message: fmt.Sprintf("path %q is in %s, lathe's own state (audit log, grants), which tools may not touch", path, StateDir)}
	}
	if w.isPrivate(rel) {
		return "", &tool.Error{Kind: tool.KindDenied,
			Message: fmt.Sprintf("path %q is in one of lathe's own directories for this user (configuration, trust, state), which tools may not touch", path)}
	}
	switch {
	case errors.Is(err, errDangling):
		return "", &tool.Error{Kind: tool.KindDenied,
			Message: fmt.Sprintf("path %q goes through a dangling symbolic link", path)}
	case errors.Is(err, errLinkLoop):
		return "", fmt.Errorf("path %q: too many levels of symbolic links", path)
	case errors.Is(err, errChanged):
		return "", fmt.Errorf("path %q changed while it was resolved (a symbolic link was replaced); try again", path)
	case err != nil:
		return "", fmt.Errorf("path %q: %w", path, err)
	}
	return rel, nil
}

// StateDir is the directory of the workspace where lathe keeps its own
// state (the audit log and grants database). The file tools neither show it
// nor let a call reach into it. It is [protect.StateDir].
const StateDir = protect.StateDir

// isHidden reports whether rel, resolved, is lathe's state directory or one
// of lathe's own per-user directories, or lies below one: what the file
// tools neither show nor reach.
func (w *Workspace) isHidden(rel string) bool { return protect.IsState(rel) || w.isPrivate(rel) }

func (w *Workspace) isPrivate(rel string) bool {
	for _, p := range w.private {
		if p == "." || rel == p || strings.HasPrefix(rel, p+string(filepath.Separator)) {
			return true
		}
	}
	return false
}

// evalExisting resolves the symbolic links of the longest part of the
// absolute path p that exists, and joins the rest on as it stands.
func evalExisting(p string) string {
	rest := ""
	for {
		if real, err := filepath.EvalSymlinks(p); err == nil {
			return filepath.Join(real, rest)
		}
		parent := filepath.Dir(p)
		if parent == p {
			return filepath.Join(p, rest)
		}
		rest = filepath.Join(filepath.Base(p), rest)
		p = parent
	}
}

// resolveChange resolves path as [Workspace.Resolve] does, for a tool that
// creates or changes what it names: a path in [protect.Names] (the
// workspace's configuration, lathe's state), however spelt, is refused.
func (w *Workspace) resolveChange(path string) (string, error) {
	rel, err := w.Resolve(path)
	if err != nil {
		return "", err
	}
	if protect.Is(rel) {
		return "", &tool.Error{Kind: tool.KindDenied, Message: fmt.Sprintf(
			"path %q is lathe's own configuration (%s), which tools may read but not create or change; a person edits it",
			path, display(rel))}
	}
	return rel, nil
}

var (
	errDangling = errors.New("dangling symbolic link")
	errLinkLoop = errors.New("too many levels of symbolic links")
	errChanged  = errors.New("changed while it was resolved")
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
		if errors.Is(err, syscall.EINVAL) {
			// No longer a link: the path changed between two looks.
			return next, errChanged
		}
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
// which happens where the tools work through an os.Root (not on Linux) and
// a symbolic link is swapped in after [Workspace.Resolve] checked the path.
// The standard library does not export that error, so its text is matched.
func escaped(err error) bool {
	return err != nil && strings.Contains(err.Error(), "path escapes from parent")
}

// fsError turns an error of a file operation on rel into one a model can act
// on: it names the path relative to the workspace and says what was wrong in
// plain words. A symbolic link met on a path that [Workspace.Resolve] found
// free of them, or a refusal of os.Root, becomes a denial.
func fsError(verb, rel string, err error) error {
	p := display(rel)
	var te *tool.Error
	switch {
	case errors.As(err, &te):
		return err
	case errors.Is(err, syscall.ELOOP):
		return raced(rel)
	case errors.Is(err, errNotRegular):
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return fmt.Errorf("cannot %s %q: %v; only regular files and directories are opened", verb, p, err)
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
