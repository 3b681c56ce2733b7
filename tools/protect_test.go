package tools_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lathe-tools/lathe/tool"
	"github.com/lathe-tools/lathe/tools"
)

// TestConfigIsOutOfReach: write_file and edit_file cannot create or change
// the workspace's lathe.toml or anything in .lathe, by any spelling of the
// path, through a link inside the workspace, or through a hard link; read_file
// may read lathe.toml.
func TestConfigIsOutOfReach(t *testing.T) {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	const config = "[tools.read_file]\ntimeout = \"5s\"\n"
	writeFiles(t, dir, map[string]string{"lathe.toml": config, ".lathe/lathe.db": "AUDIT", "sub/x.txt": "x\n"})
	symlink(t, "lathe.toml", filepath.Join(dir, "cfg"))
	symlink(t, ".", filepath.Join(dir, "self"))
	symlink(t, "..", filepath.Join(dir, "sub", "up"))
	symlink(t, ".lathe", filepath.Join(dir, "state"))
	e := newEngine(t, dir, tools.Options{})
	before := snapshot(t, dir)

	for _, p := range []string{
		"lathe.toml", "./lathe.toml", "sub/../lathe.toml", "LATHE.TOML", "Lathe.toml", filepath.Join(dir, "lathe.toml"),
		"cfg", "self/lathe.toml", "sub/up/lathe.toml", "self/self/cfg", "lathe.toml/x",
		".lathe/lathe.db", "./.lathe/lathe.db", "a/../.lathe/lathe.db", ".lathe/new.db", ".LATHE/new.db", "state/new.db",
		".lathe/grants/new.db",
	} {
		text := fail(t, e, "write_file", map[string]any{"path": p, "content": "[tools.x]\ncommand = \"planted\"\n"}, tool.KindDenied)
		if !strings.Contains(text, "lathe's own") && !strings.Contains(text, "in .lathe") {
			t.Errorf("write_file %q: unclear denial: %s", p, text)
		}
		fail(t, e, "edit_file", map[string]any{"path": p, "old_string": "5s", "new_string": "1h"}, tool.KindDenied)
	}
	sameSnapshot(t, before, snapshot(t, dir))

	// Reading the configuration is allowed; reading the state is not.
	if got := ok(t, e, "read_file", map[string]any{"path": "lathe.toml"}); got != config {
		t.Errorf("read_file lathe.toml = %q", got)
	}
	fail(t, e, "read_file", map[string]any{"path": ".lathe/lathe.db"}, tool.KindDenied)

	// A hard link to lathe.toml elsewhere in the workspace is written by
	// replacing the link, never through it: lathe.toml keeps its content.
	if err := os.Link(filepath.Join(dir, "lathe.toml"), filepath.Join(dir, "h.toml")); err != nil {
		t.Skip("no hard links here:", err)
	}
	ok(t, e, "write_file", map[string]any{"path": "h.toml", "content": "planted"})
	ok(t, e, "edit_file", map[string]any{"path": "h.toml", "old_string": "planted", "new_string": "again"})
	if got := readFile(t, filepath.Join(dir, "lathe.toml")); got != config {
		t.Errorf("lathe.toml changed through a hard link: %q", got)
	}
	if got := readFile(t, filepath.Join(dir, "h.toml")); got != "again" {
		t.Errorf("h.toml = %q, want the new content", got)
	}
}

// A workspace that holds lathe's per-user directories (a workspace that is
// the home directory) keeps them from the tools: the user's configuration is
// trusted without asking, so a tool that could write it could widen what is
// allowed.
func TestUserDirsAreOutOfReach(t *testing.T) {
	home, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", "")
	t.Setenv("XDG_STATE_HOME", filepath.Join(home, "state"))
	t.Setenv("XDG_DATA_HOME", "")
	writeFiles(t, home, map[string]string{
		".config/lathe/config.toml": "[policy]\n",
		"state/lathe/trust.db":      "TRUSTED",
		"notes.txt":                 "TRUSTED notes\n",
	})
	symlink(t, ".config/lathe", filepath.Join(home, "cfg"))
	e := newEngine(t, home, tools.Options{})
	before := snapshot(t, home)
	for _, p := range []string{".config/lathe/config.toml", "./.config/lathe/new.toml", "cfg/config.toml", "state/lathe/trust.db",
		".local/share/lathe/x", filepath.Join(home, ".config", "lathe", "config.toml")} {
		contains(t, fail(t, e, "write_file", map[string]any{"path": p, "content": "[policy]\nallow = [\"*\"]\n"}, tool.KindDenied),
			"lathe's own directories")
		fail(t, e, "read_file", map[string]any{"path": p}, tool.KindDenied)
	}
	sameSnapshot(t, before, snapshot(t, home))
	if got := ok(t, e, "grep", map[string]any{"pattern": "TRUSTED"}); got != "notes.txt:1:TRUSTED notes" {
		t.Errorf("grep searched lathe's own directories:\n%s", got)
	}
	if got := ok(t, e, "glob", map[string]any{"pattern": "**/*.toml"}); !strings.HasPrefix(got, "[no paths match") {
		t.Errorf("glob found lathe's own directories:\n%s", got)
	}
	// The rest of the home directory works as any workspace does.
	ok(t, e, "write_file", map[string]any{"path": ".config/other/x.toml", "content": "x"})
}
