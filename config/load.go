package config

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/lathe-tools/lathe/internal/statedir"
	"github.com/lathe-tools/lathe/protect"
)

// WorkspaceFile is the name of the config file in a workspace: protect's
// name, which no tool of lathe's may create or change.
const WorkspaceFile = protect.ConfigFile

// UserFile returns the path of the user's config file:
// $XDG_CONFIG_HOME/lathe/config.toml, or $HOME/.config/lathe/config.toml when
// XDG_CONFIG_HOME is unset or not absolute (as the XDG spec asks). It returns
// "" when neither variable gives a place. The same path is used on every
// system, so that one dotfile serves a user everywhere.
func UserFile() string {
	if dir := os.Getenv("XDG_CONFIG_HOME"); filepath.IsAbs(dir) {
		return filepath.Join(dir, "lathe", "config.toml")
	}
	if home := os.Getenv("HOME"); home != "" {
		return filepath.Join(home, ".config", "lathe", "config.toml")
	}
	return ""
}

// Source is one config file as lathe read it: Data are the exact bytes that
// were parsed into Config, so that what is checked for trust (their hash)
// is what is used, whatever happens to the file afterwards.
type Source struct {
	// Name is the file's path as it was opened.
	Name string
	// Data are the bytes read, once.
	Data []byte
	// Config is what Data say.
	Config *Config
	// User is true for the user's own file (see [UserFile]), which needs no
	// trust: it is the person's own. A user file that lies inside the
	// workspace (a workspace that is the home directory, say) is not: what
	// runs in the workspace could have written it.
	User bool
}

// Load reads the config files and merges them, the later winning key by key:
//
//  1. the user file (see [UserFile]), if it exists;
//  2. workspace/lathe.toml, if it exists ("" is the current directory);
//     or, when explicit is not "", the file explicit, which replaces the
//     workspace file and must exist.
//
// Errors name each file as it is read (explicit as given) and the line of each
// problem; the problems of every file are reported together. A file that
// cannot be read for a reason other than not existing is an error.
//
// Load trusts every file it reads. A program that starts what a workspace's
// file names calls [ReadSources] and [Decide] instead, so that a file that
// widens what is allowed applies only once a person has trusted it.
func Load(workspace, explicit string) (*Config, error) {
	srcs, err := ReadSources(workspace, explicit)
	if err != nil {
		return nil, err
	}
	cfg := &Config{}
	for _, s := range srcs {
		cfg.Merge(s.Config)
	}
	return cfg, nil
}

// ReadSources reads and parses the files [Load] reads, in the same order,
// each exactly once, and returns them unmerged.
func ReadSources(workspace, explicit string) ([]*Source, error) {
	if workspace == "" {
		workspace = "."
	}
	type file struct {
		name     string
		required bool
		user     bool
	}
	var files []file
	if u := UserFile(); u != "" {
		files = append(files, file{u, false, true})
	}
	if explicit != "" {
		files = append(files, file{explicit, true, false})
	} else {
		files = append(files, file{filepath.Join(workspace, WorkspaceFile), false, false})
	}

	var (
		srcs []*Source
		errs []error
	)
	for _, f := range files {
		data, err := os.ReadFile(f.name)
		if err != nil {
			if !f.required && errors.Is(err, fs.ErrNotExist) {
				continue
			}
			errs = append(errs, err)
			continue
		}
		c, err := Parse(f.name, data)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		srcs = append(srcs, &Source{Name: f.name, Data: data, Config: c, User: f.user && !inside(workspace, f.name)})
	}
	if err := join(errs); err != nil {
		return nil, err
	}
	return srcs, nil
}

// inside reports whether the file p lies within the directory root, links
// resolved; when either cannot be resolved, it says yes, the safe answer.
func inside(root, p string) bool {
	r, err := filepath.EvalSymlinks(root)
	if err != nil {
		return true
	}
	if r, err = filepath.Abs(r); err != nil {
		return true
	}
	d, err := filepath.EvalSymlinks(filepath.Dir(p))
	if err != nil {
		return true
	}
	if d, err = filepath.Abs(d); err != nil {
		return true
	}
	return statedir.Within(r, filepath.Join(d, filepath.Base(p)))
}
