package config

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// setup makes a home with an XDG config dir and a workspace, and points the
// environment at them. It returns the user file's path and the workspace.
func setup(t *testing.T) (userFile, workspace string) {
	t.Helper()
	root := t.TempDir()
	xdg := filepath.Join(root, "xdg")
	t.Setenv("XDG_CONFIG_HOME", xdg)
	t.Setenv("HOME", filepath.Join(root, "home"))
	workspace = filepath.Join(root, "ws")
	if err := os.MkdirAll(workspace, 0o755); err != nil {
		t.Fatal(err)
	}
	return filepath.Join(xdg, "lathe", "config.toml"), workspace
}

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestLoadNoFiles(t *testing.T) {
	_, ws := setup(t)
	cfg, err := Load(ws, "")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(cfg, &Config{}) {
		t.Errorf("Load with no files = %s", dump(cfg))
	}
}

func TestLoadPrecedence(t *testing.T) {
	user, ws := setup(t)
	write(t, user, lines(
		`[defaults]`,
		`timeout = "10s"`,
		`[tools.read_file]`,
		`timeout = "30s"`,
		`summary = "from user"`,
	))
	wsFile := filepath.Join(ws, "lathe.toml")
	write(t, wsFile, lines(
		`[tools.read_file]`,
		`summary = "from workspace"`,
	))
	cfg, err := Load(ws, "")
	if err != nil {
		t.Fatal(err)
	}
	want := &Config{
		Defaults: Defaults{Timeout: 10 * time.Second},
		Tools: map[string]*Tool{"read_file": {
			Name:    "read_file",
			Timeout: 30 * time.Second,
			Summary: "from workspace",
			Pos:     Pos{wsFile, 1},
		}},
		Files: []string{user, wsFile},
	}
	if !reflect.DeepEqual(withoutOrigins(cfg), want) {
		t.Errorf("Load:\n got %s\nwant %s", dump(cfg), dump(want))
	}
}

func TestLoadUserOnly(t *testing.T) {
	user, ws := setup(t)
	write(t, user, "[defaults]\nmax_output_bytes = 10\n")
	cfg, err := Load(ws, "")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Defaults.MaxOutputBytes != 10 || !reflect.DeepEqual(cfg.Files, []string{user}) {
		t.Errorf("Load = %s", dump(cfg))
	}
}

func TestLoadHomeFallback(t *testing.T) {
	for _, xdg := range []string{"", "relative/dir"} {
		root := t.TempDir()
		t.Setenv("XDG_CONFIG_HOME", xdg)
		t.Setenv("HOME", root)
		user := filepath.Join(root, ".config", "lathe", "config.toml")
		write(t, user, "[tools.x]\nenable = false\n")
		if got := UserFile(); got != user {
			t.Errorf("XDG_CONFIG_HOME=%q: UserFile() = %q, want %q", xdg, got, user)
		}
		cfg, err := Load(t.TempDir(), "")
		if err != nil {
			t.Fatal(err)
		}
		if cfg.Tools["x"] == nil || !reflect.DeepEqual(cfg.Files, []string{user}) {
			t.Errorf("XDG_CONFIG_HOME=%q: Load = %s", xdg, dump(cfg))
		}
	}

	t.Setenv("XDG_CONFIG_HOME", "")
	t.Setenv("HOME", "")
	if got := UserFile(); got != "" {
		t.Errorf("without HOME: UserFile() = %q", got)
	}
}

func TestLoadExplicit(t *testing.T) {
	user, ws := setup(t)
	write(t, user, "[tools.a]\nsummary = \"user\"\ntimeout = \"1s\"\n")
	write(t, filepath.Join(ws, "lathe.toml"), "[tools.a]\nsummary = \"workspace\"\n")
	explicit := filepath.Join(t.TempDir(), "other.toml")
	write(t, explicit, "\n[tools.a]\ndescription = \"explicit\"\n")

	cfg, err := Load(ws, explicit)
	if err != nil {
		t.Fatal(err)
	}
	want := &Tool{Name: "a", Summary: "user", Description: "explicit", Timeout: time.Second, Pos: Pos{explicit, 2}}
	if !reflect.DeepEqual(cfg.Tools["a"], want) || !reflect.DeepEqual(cfg.Files, []string{user, explicit}) {
		t.Errorf("the explicit file should replace the workspace file: %s", dump(cfg))
	}

	// The explicit file must exist.
	missing := filepath.Join(ws, "missing.toml")
	_, err = Load(ws, missing)
	if !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), missing) {
		t.Errorf("Load with a missing explicit file: %v", err)
	}
}

func TestLoadErrors(t *testing.T) {
	user, ws := setup(t)
	write(t, user, "[defaults]\ntimeout = 5\n")
	write(t, filepath.Join(ws, "lathe.toml"), "\n\n[tools.read_file]\ntimout = \"1s\"\n")
	_, err := Load(ws, "")
	want := strings.Join([]string{
		user + `:2: defaults.timeout: expected a duration string such as "30s", got integer 5`,
		filepath.Join(ws, "lathe.toml") + `:4: [tools.read_file] unknown key "timout" (did you mean "timeout"?)`,
	}, "\n")
	if err == nil || err.Error() != want {
		t.Errorf("Load:\n got %v\nwant %s", err, want)
	}
}

// TestLoadRelative checks that files are named as given: a workspace of "."
// gives "lathe.toml", an explicit path stays as it was written.
func TestLoadRelative(t *testing.T) {
	_, ws := setup(t)
	t.Chdir(ws)
	write(t, "lathe.toml", "[tools.a]\nenable = \"no\"\n")
	write(t, "sub/my.toml", "[tools.a]\nenable = 1\n")

	for _, tt := range []struct{ workspace, explicit, want string }{
		{".", "", `lathe.toml:2: tools.a.enable: expected true or false, got string "no"`},
		{"", "", `lathe.toml:2: tools.a.enable: expected true or false, got string "no"`},
		{".", "sub/my.toml", `sub/my.toml:2: tools.a.enable: expected true or false, got integer 1`},
	} {
		_, err := Load(tt.workspace, tt.explicit)
		if err == nil || err.Error() != tt.want {
			t.Errorf("Load(%q, %q):\n got %v\nwant %s", tt.workspace, tt.explicit, err, tt.want)
		}
	}
}

func TestLoadUnreadable(t *testing.T) {
	user, ws := setup(t)
	// A directory where the user file should be cannot be read: that is an
	// error, not a missing file.
	if err := os.MkdirAll(user, 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(ws, ""); err == nil || !strings.Contains(err.Error(), user) {
		t.Errorf("Load with a directory as the user file: %v", err)
	}
}
