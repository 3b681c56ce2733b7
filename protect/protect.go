// Package protect names the parts of a workspace that lathe's own tools may
// not create or change: the workspace's configuration, which can start
// programs and widen what is allowed, and lathe's state directory, which
// holds the audit log and the grants a person gave.
//
// One list serves every tool that changes files, so that the builtin file
// tools, the sandbox's mounts and the configuration loader cannot disagree
// about what is protected:
//
//	if protect.Is(rel) {
//		return fmt.Errorf("%s is lathe's configuration", rel)
//	}
//
// [UserDirs] names lathe's per-user directories, which a workspace may hold
// (one that is the home directory): tools may neither read nor write them.
//
// The package imports only the standard library.
package protect

import (
	"os"
	"path/filepath"
	"strings"
)

const (
	// ConfigFile is the workspace's configuration file. It can start
	// programs (local tools, MCP servers) and widen the policy, so it is
	// code: a tool may read it but never write it.
	ConfigFile = "lathe.toml"
	// StateDir is the directory where lathe keeps a workspace's state: the
	// audit log and the grants database. Tools may neither read nor write
	// anything in it.
	StateDir = ".lathe"
)

// Names returns the workspace-relative names of everything lathe's tools may
// not create or change, each a single path element at the workspace's root.
// Anything below a directory in the list is protected too. It returns a new
// slice on every call, so that no caller can change the list for another.
func Names() []string { return []string{ConfigFile, StateDir} }

// Is reports whether rel, a path relative to the workspace root and free of
// "." and ".." elements and of symbolic links (as a resolver returns it),
// is one of [Names] or lies below one.
//
// The comparison ignores case: on a case-insensitive file system (macOS by
// default, Windows, a Linux directory with the casefold attribute)
// "LATHE.TOML" is the configuration file, and refusing that name on a
// case-sensitive one costs nothing worth keeping.
func Is(rel string) bool {
	first, _, _ := strings.Cut(filepath.ToSlash(rel), "/")
	for _, n := range Names() {
		if strings.EqualFold(first, n) {
			return true
		}
	}
	return false
}

// IsState reports whether rel, as for [Is], is [StateDir] or lies below it:
// a part of the workspace that tools may not even read.
func IsState(rel string) bool {
	first, _, _ := strings.Cut(filepath.ToSlash(rel), "/")
	return strings.EqualFold(first, StateDir)
}

// UserDirs returns the directories where lathe keeps what belongs to a user
// rather than to a workspace: its configuration ($XDG_CONFIG_HOME/lathe,
// which holds the user's config file, trusted without asking), its state
// ($XDG_STATE_HOME/lathe) and its data ($XDG_DATA_HOME/lathe), each with the
// XDG default under $HOME where the variable is unset or not absolute. A
// workspace that holds one of them (a workspace that is the home directory)
// must not let a tool read or write it: the user's configuration can start
// programs and widen the policy like a workspace's, and a trust record or a
// server's token there is lathe's to keep. Directories that cannot be named
// (no $HOME) are left out.
func UserDirs() []string {
	home := os.Getenv("HOME")
	var dirs []string
	for _, x := range []struct{ env, def string }{
		{"XDG_CONFIG_HOME", ".config"},
		{"XDG_STATE_HOME", ".local/state"},
		{"XDG_DATA_HOME", ".local/share"},
	} {
		base := os.Getenv(x.env)
		if !filepath.IsAbs(base) {
			if home == "" {
				continue
			}
			base = filepath.Join(home, filepath.FromSlash(x.def))
		}
		dirs = append(dirs, filepath.Join(base, "lathe"))
	}
	return dirs
}
