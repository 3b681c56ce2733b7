package tools_test

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lathe-tools/lathe/tool"
	"github.com/lathe-tools/lathe/tools"
)

// escapeFixture lays out a workspace beside a directory outside it, with
// every kind of symbolic link a model might try to leave through:
//
//	outside/secret.txt        "OUTSIDE"
//	ws/a.txt                  "alpha"
//	ws/sub/b.txt              "beta"
//	ws/in_file   -> a.txt
//	ws/in_dir    -> sub
//	ws/in_chain  -> in_file (-> a.txt)
//	ws/out_file  -> ../outside/secret.txt
//	ws/out_abs   -> /…/outside/secret.txt
//	ws/out_dir   -> ../outside
//	ws/out_chain -> in_out (-> out_file -> outside)
//	ws/in_out    -> out_file
//	ws/dangling  -> missing.txt
//	ws/dangle_chain -> dangling
//	ws/loop1 <-> ws/loop2
//	ws/sub/up    -> ../.. (the parent of the workspace)
func escapeFixture(t *testing.T) (ws, outside string) {
	t.Helper()
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ws = filepath.Join(base, "ws")
	outside = filepath.Join(base, "outside")
	writeFiles(t, base, map[string]string{
		"outside/secret.txt": "OUTSIDE\n",
		"ws/a.txt":           "alpha\n",
		"ws/sub/b.txt":       "beta\n",
	})
	links := [][2]string{
		{"a.txt", "in_file"},
		{"sub", "in_dir"},
		{"in_file", "in_chain"},
		{"../outside/secret.txt", "out_file"},
		{filepath.Join(outside, "secret.txt"), "out_abs"},
		{"../outside", "out_dir"},
		{"out_file", "in_out"},
		{"in_out", "out_chain"},
		{"missing.txt", "dangling"},
		{"dangling", "dangle_chain"},
		{"loop2", "loop1"},
		{"loop1", "loop2"},
		{"../..", "sub/up"},
	}
	for _, l := range links {
		symlink(t, l[0], filepath.Join(ws, l[1]))
	}
	return ws, outside
}

func TestResolve(t *testing.T) {
	ws, outside := escapeFixture(t)
	w, err := tools.NewWorkspace(ws)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	tests := []struct {
		path string
		want string
	}{
		{"", "."},
		{".", "."},
		{"a.txt", "a.txt"},
		{"./sub//b.txt", "sub/b.txt"},
		{"sub/../a.txt", "a.txt"},
		{"sub/", "sub"},
		{ws, "."},
		{filepath.Join(ws, "sub", "b.txt"), "sub/b.txt"},
		{"new.txt", "new.txt"},
		{"new/dir/file.txt", "new/dir/file.txt"},
		{"missing/../a.txt", "a.txt"},
		{"missing/../in_file", "a.txt"}, // elements after a climb out of a missing one are resolved
		{"missing/x/../../in_dir/b.txt", "sub/b.txt"},
		{"missing/../missing/new.txt", "missing/new.txt"},
		{"missing/..", "."},
		{"in_file", "a.txt"},
		{"in_chain", "a.txt"},
		{"in_dir/b.txt", "sub/b.txt"},
		{"in_dir/new.txt", "sub/new.txt"},
		{"in_dir/../a.txt", "a.txt"}, // .. after a link leaves the link's target, as the kernel does
		{"../ws/a.txt", "a.txt"},     // out and back in again is inside
		{"sub/up/ws/a.txt", "a.txt"},
	}
	for _, tt := range tests {
		got, err := w.Resolve(tt.path)
		if err != nil {
			t.Errorf("Resolve(%q): %v", tt.path, err)
			continue
		}
		if filepath.ToSlash(got) != tt.want {
			t.Errorf("Resolve(%q) = %q, want %q", tt.path, got, tt.want)
		}
	}

	denied := []struct {
		path, msg string
	}{
		{"..", "is outside the workspace"},
		{"../x", `path "../x" is outside the workspace`},
		{"sub/../../x", "is outside the workspace"},
		{"missing/../../x", "is outside the workspace"},
		{"missing/../out_file", "points out of it"},
		{"missing/../dangling", "dangling symbolic link"},
		{"/etc/passwd", "is outside the workspace"},
		{filepath.Join(outside, "secret.txt"), "is outside the workspace"},
		{filepath.Join(outside, "nothing-here.txt"), "is outside the workspace"},
		{"out_file", "a symbolic link on the way points out of it"},
		{"out_abs", "points out of it"},
		{"out_dir", "points out of it"},
		{"out_dir/secret.txt", "points out of it"},
		{"out_dir/new.txt", "points out of it"},
		{"out_chain", "points out of it"},
		{"in_out", "points out of it"},
		{"sub/up", "points out of it"},
		{"sub/up/outside/secret.txt", "points out of it"},
		{"dangling", "dangling symbolic link"},
		{"dangle_chain", "dangling symbolic link"},
		{"dangling/x", "dangling symbolic link"},
	}
	for _, tt := range denied {
		_, err := w.Resolve(tt.path)
		if err == nil {
			t.Errorf("Resolve(%q) succeeded, want a denial", tt.path)
			continue
		}
		if !errors.Is(err, tool.ErrDenied) || tool.KindOf(err) != tool.KindDenied {
			t.Errorf("Resolve(%q): %v is not a denial", tt.path, err)
		}
		if !strings.Contains(err.Error(), tt.msg) {
			t.Errorf("Resolve(%q): %q does not say %q", tt.path, err, tt.msg)
		}
	}

	// A loop is an error, but not a denial: it leads nowhere, outside least of all.
	if _, err := w.Resolve("loop1"); err == nil || !strings.Contains(err.Error(), "too many levels of symbolic links") {
		t.Errorf("Resolve(loop1) = %v, want a link loop error", err)
	}
	if _, err := w.Resolve("a\x00b"); err == nil {
		t.Error("Resolve accepted a path with a NUL byte")
	}
}

// A dangling link that points outside is reported as outside, not as
// dangling: the answer must not tell what exists outside the workspace.
func TestResolveDoesNotProbeOutside(t *testing.T) {
	ws, outside := escapeFixture(t)
	symlink(t, filepath.Join(outside, "nothing-here.txt"), filepath.Join(ws, "out_missing"))
	w, err := tools.NewWorkspace(ws)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	_, errMissing := w.Resolve("out_missing")
	_, errExisting := w.Resolve("out_abs")
	if errMissing == nil || errExisting == nil {
		t.Fatalf("got %v and %v, want two denials", errMissing, errExisting)
	}
	if errMissing.Error() != strings.Replace(errExisting.Error(), "out_abs", "out_missing", 1) {
		t.Errorf("a missing and an existing file outside are told apart:\n%v\n%v", errMissing, errExisting)
	}
}

func TestNewWorkspace(t *testing.T) {
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	real := filepath.Join(base, "real")
	writeFiles(t, real, map[string]string{"f.txt": "x"})
	symlink(t, real, filepath.Join(base, "alias"))

	// The root's own links are resolved once, and paths through the alias
	// still count as inside.
	w, err := tools.NewWorkspace(filepath.Join(base, "alias"))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if w.Dir() != real {
		t.Errorf("Dir() = %q, want %q", w.Dir(), real)
	}
	if got, err := w.Resolve(filepath.Join(base, "alias", "f.txt")); err != nil || got != "f.txt" {
		t.Errorf("Resolve through the root's alias = %q, %v", got, err)
	}

	for _, bad := range []string{filepath.Join(base, "nope"), filepath.Join(real, "f.txt")} {
		if _, err := tools.NewWorkspace(bad); err == nil {
			t.Errorf("NewWorkspace(%q) succeeded", bad)
		}
	}
	if _, err := tools.Standard(filepath.Join(base, "nope"), tools.Options{}); err == nil {
		t.Error("Standard on a missing directory succeeded")
	}
}

// TestSwappedLink races a directory against a symbolic link to outside while
// tools read and write through it: whatever the interleaving, the tools'
// walk from the root, which follows no link, keeps the operations inside, so
// nothing outside is read or written.
func TestSwappedLink(t *testing.T) {
	ws, outside := escapeFixture(t)
	writeFiles(t, ws, map[string]string{"d/secret.txt": "inside\n"})
	writeFiles(t, outside, map[string]string{"outside-only.txt": "OUTSIDE\n"})
	e := newEngine(t, ws, tools.Options{})
	before := snapshot(t, outside)

	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		d, real := filepath.Join(ws, "d"), filepath.Join(ws, "d.real")
		for {
			select {
			case <-done:
				return
			default:
			}
			os.Rename(d, real)
			os.Symlink(outside, d)
			os.Remove(d)
			os.Rename(real, d)
		}
	}()
	// Bounded in time as well as in rounds: every write_file syncs to disk.
	deadline := time.Now().Add(time.Second)
	for i := 0; i < 300 && time.Now().Before(deadline); i++ {
		r := call(t, e, "read_file", map[string]any{"path": "d/secret.txt"})
		if strings.Contains(r.Text(), "OUTSIDE") {
			t.Fatalf("read_file read outside the workspace: %s", r.Text())
		}
		call(t, e, "write_file", map[string]any{"path": "d/new.txt", "content": "x"})
		call(t, e, "edit_file", map[string]any{"path": "d/secret.txt", "old_string": "OUTSIDE", "new_string": "pwned"})
		if r := call(t, e, "list_dir", map[string]any{"path": "d"}); strings.Contains(r.Text(), "outside-only") {
			t.Fatalf("list_dir listed outside the workspace: %s", r.Text())
		}
		if r := call(t, e, "grep", map[string]any{"pattern": "OUTSIDE", "path": "d"}); strings.Contains(r.Text(), ":1:OUTSIDE") {
			t.Fatalf("grep searched outside the workspace: %s", r.Text())
		}
		if r := call(t, e, "glob", map[string]any{"pattern": "d/*"}); strings.Contains(r.Text(), "outside-only") {
			t.Fatalf("glob listed outside the workspace: %s", r.Text())
		}
	}
	close(done)
	<-stopped
	sameSnapshot(t, before, snapshot(t, outside))
}

// TestStateDirIsOutOfReach: the file tools neither show nor reach into
// .lathe, where the audit log and the grants live, by any path.
func TestStateDirIsOutOfReach(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, tools.StateDir), 0o755)
	os.WriteFile(filepath.Join(dir, tools.StateDir, "lathe.db"), []byte("grants"), 0o644)
	os.WriteFile(filepath.Join(dir, "a.txt"), []byte("grants\n"), 0o644)
	os.Symlink(tools.StateDir, filepath.Join(dir, "state"))
	e := newEngine(t, dir, tools.Options{})
	for _, p := range []string{".lathe/lathe.db", "./.lathe/../.lathe/lathe.db", filepath.Join(dir, ".lathe/lathe.db"), "state/lathe.db"} {
		fail(t, e, "read_file", map[string]any{"path": p}, tool.KindDenied)
		fail(t, e, "write_file", map[string]any{"path": p, "content": "forged"}, tool.KindDenied)
	}
	if got := ok(t, e, "list_dir", map[string]any{}); slices.Contains(strings.Split(got, "\n"), ".lathe/") {
		t.Errorf("list_dir shows the state dir:\n%s", got)
	}
	if got := ok(t, e, "grep", map[string]any{"pattern": "grants"}); strings.Contains(got, "lathe.db") {
		t.Errorf("grep searched the state dir:\n%s", got)
	}
	if got := ok(t, e, "glob", map[string]any{"pattern": "**/*.db"}); strings.Contains(got, "lathe.db") {
		t.Errorf("glob found the state dir:\n%s", got)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, tools.StateDir, "lathe.db")); string(b) != "grants" {
		t.Errorf("state file changed: %q", b)
	}
}
