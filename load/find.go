package load

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/lathe-tools/lathe/config"
)

// ErrForeign is matched (errors.Is) by the error of [Find] when the nearest
// workspace it finds belongs to another user.
var ErrForeign = errors.New("the directory belongs to another user")

// Find returns the workspace of the directory dir: the nearest of dir and
// its parents that holds a lathe.toml, or is the root of a repository (it
// holds .git, a directory or, for a worktree, a file), as git and cargo find
// theirs. When none does, the workspace is dir itself.
//
// A workspace lets its tools reach every file in it, so a directory that
// another user could have chosen is refused: a candidate whose directory or
// whose lathe.toml or .git is owned by someone else (neither the current
// user nor, for a directory, root) ends the search with an error that
// matches [ErrForeign], names the directory, and says how to choose the
// workspace instead. Without that, a lathe.toml another user planted in
// /tmp would make /tmp the workspace of everyone who runs lathe in
// /tmp/theirs. The search does not go above the user's home directory when
// dir is inside it.
func Find(dir string) (string, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return "", &WorkspaceError{Dir: dir, Err: err}
	}
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return "", &WorkspaceError{Dir: dir, Err: fmt.Errorf("workspace %s is not a directory", dir)}
	}
	home := homeDir()
	for d := dir; ; {
		marker, err := markerIn(d)
		if err != nil {
			return "", &WorkspaceError{Dir: d, Err: err}
		}
		if marker != "" {
			if err := owned(d, marker); err != nil {
				return "", &WorkspaceError{Dir: d, Err: fmt.Errorf(
					"%w: lathe found the workspace %s (it holds %s) above %s, and %v; "+
						"choose the workspace with --workspace DIR (or load.Options.Dir), or put a lathe.toml in your own directory",
					ErrForeign, d, filepath.Base(marker), dir, err)}
			}
			return d, nil
		}
		if d == home {
			return dir, nil
		}
		parent := filepath.Dir(d)
		if parent == d {
			return dir, nil
		}
		d = parent
	}
}

// markerIn returns the path of what makes d a workspace (its lathe.toml,
// else its .git), or "" when it holds neither.
func markerIn(d string) (string, error) {
	for _, name := range []string{config.WorkspaceFile, ".git"} {
		p := filepath.Join(d, name)
		_, err := os.Lstat(p)
		if err == nil {
			return p, nil
		}
		if !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, fs.ErrPermission) {
			return "", err
		}
	}
	return "", nil
}

// homeDir is the user's home directory, cleaned, or "" when unknown.
func homeDir() string {
	h, err := os.UserHomeDir()
	if err != nil || !filepath.IsAbs(h) {
		return ""
	}
	return filepath.Clean(h)
}
