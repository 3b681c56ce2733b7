package config

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
)

// WorkspaceFile is the name of the config file in a workspace.
const WorkspaceFile = "lathe.toml"

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
func Load(workspace, explicit string) (*Config, error) {
	type file struct {
		name     string
		required bool
	}
	var files []file
	if u := UserFile(); u != "" {
		files = append(files, file{u, false})
	}
	if explicit != "" {
		files = append(files, file{explicit, true})
	} else {
		files = append(files, file{filepath.Join(workspace, WorkspaceFile), false})
	}

	cfg := &Config{}
	var errs []error
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
		cfg.Merge(c)
	}
	if err := join(errs); err != nil {
		return nil, err
	}
	return cfg, nil
}
