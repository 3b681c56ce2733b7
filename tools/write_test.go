package tools_test

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/lathe-tools/lathe/tool"
	"github.com/lathe-tools/lathe/tools"
)

func TestWriteFile(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"old.txt": "old content\n"})
	e := newEngine(t, dir, tools.Options{})

	got := ok(t, e, "write_file", map[string]any{"path": "new.txt", "content": "hello\n"})
	contains(t, got, `created "new.txt"`, "6 bytes")
	if s := readFile(t, filepath.Join(dir, "new.txt")); s != "hello\n" {
		t.Errorf("new.txt = %q", s)
	}

	got = ok(t, e, "write_file", map[string]any{"path": "old.txt", "content": "new"})
	contains(t, got, `wrote "old.txt"`, "3 bytes")
	if s := readFile(t, filepath.Join(dir, "old.txt")); s != "new" {
		t.Errorf("old.txt = %q", s)
	}

	// Missing parents are created; an absolute path inside is accepted.
	ok(t, e, "write_file", map[string]any{"path": filepath.Join(dir, "a", "b", "c.txt"), "content": "deep"})
	if s := readFile(t, filepath.Join(dir, "a", "b", "c.txt")); s != "deep" {
		t.Errorf("a/b/c.txt = %q", s)
	}

	// Empty content makes an empty file; writing again is idempotent.
	for range 2 {
		contains(t, ok(t, e, "write_file", map[string]any{"path": "empty.txt", "content": ""}), "0 bytes")
	}
	if s := readFile(t, filepath.Join(dir, "empty.txt")); s != "" {
		t.Errorf("empty.txt = %q", s)
	}

	// Through a link inside the workspace, the link's target is written and
	// the link stays a link.
	symlink(t, "old.txt", filepath.Join(dir, "alias"))
	contains(t, ok(t, e, "write_file", map[string]any{"path": "alias", "content": "via link"}), `"old.txt"`)
	if s := readFile(t, filepath.Join(dir, "old.txt")); s != "via link" {
		t.Errorf("old.txt = %q", s)
	}
	if fi, err := os.Lstat(filepath.Join(dir, "alias")); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Error("the link was replaced by a file")
	}

	// A name near the file system's limit still leaves room for the
	// temporary file's name, which is cut at a rune boundary.
	long := "x" + strings.Repeat("é", 120) + ".txt"
	ok(t, e, "write_file", map[string]any{"path": long, "content": "long"})
	if s := readFile(t, filepath.Join(dir, long)); s != "long" {
		t.Errorf("long name = %q", s)
	}

	contains(t, fail(t, e, "write_file", map[string]any{"path": "x.txt"}, tool.KindInvalidArguments), "content")
	if left := tempFiles(t, dir); len(left) > 0 {
		t.Errorf("temporary files left behind: %v", left)
	}
}

func TestWriteFileMode(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no Unix permissions")
	}
	dir := t.TempDir()
	e := newEngine(t, dir, tools.Options{})
	for _, mode := range []os.FileMode{0o600, 0o755, 0o640} {
		p := filepath.Join(dir, "f"+mode.String())
		if err := os.WriteFile(p, []byte("x"), mode); err != nil {
			t.Fatal(err)
		}
		os.Chmod(p, mode) // past the umask
		ok(t, e, "write_file", map[string]any{"path": filepath.Base(p), "content": "rewritten"})
		ok(t, e, "edit_file", map[string]any{"path": filepath.Base(p), "old_string": "rewritten", "new_string": "edited"})
		if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != mode {
			t.Errorf("mode of a rewritten %v file is %v", mode, fi.Mode().Perm())
		}
	}
	ok(t, e, "write_file", map[string]any{"path": "brand-new", "content": "x"})
	if fi, err := os.Stat(filepath.Join(dir, "brand-new")); err != nil || fi.Mode().Perm() != 0o644 {
		t.Errorf("mode of a new file is %v, want 0644", fi.Mode().Perm())
	}
}

// A write whose final rename fails leaves the target as it was and no
// temporary file behind.
func TestWriteFileAtomic(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"target/keep.txt": "kept\n", "file.txt": "original\n"})
	e := newEngine(t, dir, tools.Options{})
	before := snapshot(t, dir)

	// The rename cannot replace a directory.
	contains(t, fail(t, e, "write_file", map[string]any{"path": "target", "content": "x"}, tool.KindToolError),
		`"target"`, "is a directory")
	// A parent that is a file cannot be created.
	contains(t, fail(t, e, "write_file", map[string]any{"path": "file.txt/child", "content": "x"}, tool.KindToolError),
		`"file.txt/child"`, "not a directory")
	contains(t, fail(t, e, "edit_file", map[string]any{"path": "target", "old_string": "a", "new_string": "b"}, tool.KindToolError),
		`"target"`, "is a directory")

	sameSnapshot(t, before, snapshot(t, dir))
	if left := tempFiles(t, dir); len(left) > 0 {
		t.Errorf("temporary files left behind: %v", left)
	}
}

func TestWriteFileReadOnlyDir(t *testing.T) {
	if runtime.GOOS == "windows" || os.Geteuid() == 0 {
		t.Skip("needs Unix permissions that bind")
	}
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"ro/f.txt": "original\n"})
	ro := filepath.Join(dir, "ro")
	os.Chmod(ro, 0o555)
	defer os.Chmod(ro, 0o755)
	e := newEngine(t, dir, tools.Options{})
	contains(t, fail(t, e, "write_file", map[string]any{"path": "ro/f.txt", "content": "x"}, tool.KindToolError),
		`"ro/f.txt"`, "permission denied")
	if s := readFile(t, filepath.Join(ro, "f.txt")); s != "original\n" {
		t.Errorf("f.txt = %q", s)
	}
}

func TestEditFile(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"a.go":    "package a\n\nfunc f() { return 1 }\nfunc g() { return 1 }\nfunc h() { return 1 }\n",
		"b.txt":   "one two\n",
		"bin.dat": "x\x00y",
	})
	e := newEngine(t, dir, tools.Options{})
	path := filepath.Join(dir, "a.go")

	contains(t, ok(t, e, "edit_file", map[string]any{"path": "a.go", "old_string": "func f() { return 1 }", "new_string": "func f() { return 2 }"}),
		`edited "a.go"`, "1 replacement")
	if s := readFile(t, path); !strings.Contains(s, "func f() { return 2 }\nfunc g() { return 1 }") {
		t.Errorf("after one edit:\n%s", s)
	}

	// Two occurrences remain: without replace_all the edit is refused and says how many.
	before := readFile(t, path)
	contains(t, fail(t, e, "edit_file", map[string]any{"path": "a.go", "old_string": "return 1", "new_string": "return 3"}, tool.KindToolError),
		`"a.go"`, "occurs 2 times", "replace_all")
	if readFile(t, path) != before {
		t.Error("a refused edit changed the file")
	}
	contains(t, ok(t, e, "edit_file", map[string]any{"path": "a.go", "old_string": "return 1", "new_string": "return 3", "replace_all": true}),
		"2 replacements")
	if s := readFile(t, path); strings.Count(s, "return 3") != 2 || strings.Contains(s, "return 1") {
		t.Errorf("after replace_all:\n%s", s)
	}

	// A deletion: new_string may be empty.
	ok(t, e, "edit_file", map[string]any{"path": "b.txt", "old_string": " two", "new_string": ""})
	if s := readFile(t, filepath.Join(dir, "b.txt")); s != "one\n" {
		t.Errorf("b.txt = %q", s)
	}

	failures := []struct {
		args map[string]any
		kind tool.ErrorKind
		want []string
	}{
		{map[string]any{"path": "a.go", "old_string": "nowhere", "new_string": "x"}, tool.KindToolError,
			[]string{"old_string does not occur", `"a.go"`}},
		{map[string]any{"path": "a.go", "old_string": "package a", "new_string": "package a"}, tool.KindInvalidArguments,
			[]string{"the same"}},
		{map[string]any{"path": "a.go", "old_string": "", "new_string": "x"}, tool.KindInvalidArguments,
			[]string{"/old_string"}},
		{map[string]any{"path": "missing.go", "old_string": "a", "new_string": "b"}, tool.KindToolError,
			[]string{`"missing.go"`, "no such file"}},
		{map[string]any{"path": "bin.dat", "old_string": "x", "new_string": "z"}, tool.KindToolError,
			[]string{`"bin.dat"`, "binary"}},
		{map[string]any{"path": "a.go", "old_string": "x"}, tool.KindInvalidArguments,
			[]string{"new_string"}},
	}
	for _, f := range failures {
		contains(t, fail(t, e, "edit_file", f.args, f.kind), f.want...)
	}
	if s := readFile(t, filepath.Join(dir, "bin.dat")); s != "x\x00y" {
		t.Errorf("bin.dat = %q", s)
	}
	if left := tempFiles(t, dir); len(left) > 0 {
		t.Errorf("temporary files left behind: %v", left)
	}
}
