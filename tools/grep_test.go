package tools_test

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lathe-tools/lathe/tool"
	"github.com/lathe-tools/lathe/tools"
)

func TestGrep(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"a.go":          "package a\n\nfunc Alpha() {}\nfunc beta() {}\n",
		"sub/b.go":      "package sub\r\nfunc Gamma() {}\r\n",
		"sub/notes.txt": "func in prose\n",
		"c.bin":         "func\x00binary",
		".git/HEAD":     "func in git\n",
		"long.txt":      strings.Repeat("x", 1000) + "func" + "\n",
	})
	symlink(t, "a.go", filepath.Join(dir, "alias.go"))
	e := newEngine(t, dir, tools.Options{})

	tests := []struct {
		name string
		args map[string]any
		want string
	}{
		{"everywhere", map[string]any{"pattern": `^func [A-Z]`},
			"a.go:3:func Alpha() {}\nsub/b.go:2:func Gamma() {}"},
		{"case insensitive", map[string]any{"pattern": `^FUNC B`, "case_insensitive": true},
			"a.go:4:func beta() {}"},
		{"glob by name", map[string]any{"pattern": "func", "glob": "*.txt"},
			"long.txt:1:" + strings.Repeat("x", 500) + " …\nsub/notes.txt:1:func in prose"},
		{"glob by path", map[string]any{"pattern": "func", "glob": "sub/*.go"},
			"sub/b.go:2:func Gamma() {}"},
		{"one directory", map[string]any{"pattern": "func", "path": "sub", "glob": "**/*.go"},
			"sub/b.go:2:func Gamma() {}"},
		{"one file", map[string]any{"pattern": "func", "path": "a.go"},
			"a.go:3:func Alpha() {}\na.go:4:func beta() {}"},
		{"absolute directory", map[string]any{"pattern": "prose", "path": filepath.Join(dir, "sub")},
			"sub/notes.txt:1:func in prose"},
		{"into .git when asked", map[string]any{"pattern": "func", "path": ".git"},
			".git/HEAD:1:func in git"},
		{"no match", map[string]any{"pattern": "nothing like this"},
			`[no matches for "nothing like this" in "."]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ok(t, e, "grep", tt.args)
			got = strings.TrimSuffix(got, "\n[1 binary files skipped]")
			if got != tt.want {
				t.Errorf("got:\n%q\nwant:\n%q", got, tt.want)
			}
		})
	}
	contains(t, ok(t, e, "grep", map[string]any{"pattern": "func"}), "[1 binary files skipped]")

	failures := []struct {
		args map[string]any
		kind tool.ErrorKind
		want string
	}{
		{map[string]any{"pattern": "func("}, tool.KindInvalidArguments, "bad regular expression"},
		{map[string]any{"pattern": "x", "glob": "["}, tool.KindInvalidArguments, "bad glob pattern"},
		{map[string]any{"pattern": "x", "path": "missing"}, tool.KindToolError, `"missing"`},
		{map[string]any{"pattern": "x", "path": "../"}, tool.KindDenied, "outside the workspace"},
		{map[string]any{}, tool.KindInvalidArguments, "pattern"},
	}
	for _, f := range failures {
		contains(t, fail(t, e, "grep", f.args, f.kind), f.want)
	}
}

func TestGrepCap(t *testing.T) {
	dir := t.TempDir()
	var b strings.Builder
	for i := range 50 {
		fmt.Fprintf(&b, "match %d\n", i)
	}
	writeFiles(t, dir, map[string]string{"a.txt": b.String(), "b.txt": "match b\n"})
	e := newEngine(t, dir, tools.Options{MaxGrepResults: 5})
	got := ok(t, e, "grep", map[string]any{"pattern": "match"})
	lines := strings.Split(got, "\n")
	if len(lines) != 6 || lines[0] != "a.txt:1:match 0" || lines[4] != "a.txt:5:match 4" {
		t.Fatalf("capped grep:\n%s", got)
	}
	contains(t, lines[5], "stopped at 5 matches", "narrow")

	// Exactly at the cap is not over it.
	got = ok(t, e, "grep", map[string]any{"pattern": "match [0-4]$"})
	if strings.Contains(got, "stopped") {
		t.Errorf("grep with exactly the cap of matches says it stopped:\n%s", got)
	}
}

// A line too long to read ends the search of its file, and a note says so.
func TestGrepLongLine(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"big.txt":   "match early\n" + strings.Repeat("x", 2<<20) + "\nmatch late\n",
		"small.txt": "match\n",
	})
	e := newEngine(t, dir, tools.Options{})
	got := ok(t, e, "grep", map[string]any{"pattern": "match"})
	want := "big.txt:1:match early\nsmall.txt:1:match\n[searched only up to a line longer than 1048576 bytes in: big.txt]"
	if got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
}
