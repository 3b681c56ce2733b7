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
