package tools_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lathe-tools/lathe/tool"
	"github.com/lathe-tools/lathe/tools"
)

func TestListDir(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"b.txt":        "",
		"a.go":         "",
		".hidden":      "",
		"sub/c.txt":    "",
		"Zeta/d.txt":   "",
		"sub/deep/e.x": "",
	})
	symlink(t, "sub", filepath.Join(dir, "link"))
	writeFiles(t, dir, map[string]string{"empty/.keep": ""})
	e := newEngine(t, dir, tools.Options{})

	want := ".hidden\nZeta/\na.go\nb.txt\nempty/\nlink -> sub\nsub/"
	if got := ok(t, e, "list_dir", map[string]any{}); got != want {
		t.Errorf("list_dir of the root:\n%s\nwant:\n%s", got, want)
	}
	if got := ok(t, e, "list_dir", map[string]any{"path": "."}); got != want {
		t.Errorf("list_dir .:\n%s", got)
	}
	if got := ok(t, e, "list_dir", map[string]any{"path": "sub"}); got != "c.txt\ndeep/" {
		t.Errorf("list_dir sub:\n%s", got)
	}
	// A link to a directory inside lists its target.
	if got := ok(t, e, "list_dir", map[string]any{"path": "link"}); got != "c.txt\ndeep/" {
		t.Errorf("list_dir link:\n%s", got)
	}
	if got := ok(t, e, "list_dir", map[string]any{"path": filepath.Join(dir, "sub", "deep")}); got != "e.x" {
		t.Errorf("list_dir absolute:\n%s", got)
	}
	if err := os.Mkdir(filepath.Join(dir, "vacant"), 0o755); err != nil {
		t.Fatal(err)
	}
	if got := ok(t, e, "list_dir", map[string]any{"path": "vacant"}); got != `["vacant" is empty]` {
		t.Errorf("list_dir of an empty directory: %q", got)
	}
	contains(t, fail(t, e, "list_dir", map[string]any{"path": "nope"}, tool.KindToolError), `"nope"`, "no such file")
	contains(t, fail(t, e, "list_dir", map[string]any{"path": "a.go"}, tool.KindToolError), `"a.go"`, "not a directory", "read_file")
}

func TestGlob(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"main.go":                "",
		"README.md":              "",
		"cmd/lathe/main.go":      "",
		"cmd/lathe/main_test.go": "",
		"internal/cli/cli.go":    "",
		"internal/cli/x.txt":     "",
		".git/config":            "",
		".git/hooks/h.go":        "",
		"docs/a b.md":            "",
	})
	symlink(t, "internal", filepath.Join(dir, "linked"))
	symlink(t, "main.go", filepath.Join(dir, "alias.go"))
	e := newEngine(t, dir, tools.Options{})

	tests := []struct {
		pattern string
		want    []string
	}{
		{"*.go", []string{"alias.go", "main.go"}},
		{"**/*.go", []string{"alias.go", "cmd/lathe/main.go", "cmd/lathe/main_test.go", "internal/cli/cli.go", "main.go"}},
		{"cmd/**/*_test.go", []string{"cmd/lathe/main_test.go"}},
		{"cmd/*", []string{"cmd/lathe/"}},
		{"internal/**", []string{"internal/", "internal/cli/", "internal/cli/cli.go", "internal/cli/x.txt"}},
		{"**/cli", []string{"internal/cli/"}},
		{"./docs/*.md", []string{"docs/a b.md"}},
		{"*/*/[cm]*.go", []string{"cmd/lathe/main.go", "cmd/lathe/main_test.go", "internal/cli/cli.go"}},
		{".git/**/*.go", []string{".git/hooks/h.go"}},
		{"README.md", []string{"README.md"}},
		// Links are listed by their own names but never followed.
		{"linked/**", []string{"linked"}},
		{"linked", []string{"linked"}},
	}
	for _, tt := range tests {
		got := ok(t, e, "glob", map[string]any{"pattern": tt.pattern})
		want := strings.Join(tt.want, "\n")
		if got != want {
			t.Errorf("glob %q:\n%s\nwant:\n%s", tt.pattern, got, want)
		}
	}
	contains(t, ok(t, e, "glob", map[string]any{"pattern": "**/*.rs"}), `no paths match "**/*.rs"`)

	failures := []struct {
		pattern string
		kind    tool.ErrorKind
		want    string
	}{
		{"[", tool.KindInvalidArguments, "bad glob pattern"},
		{"../*", tool.KindDenied, "outside the workspace"},
		{"cmd/../../*", tool.KindDenied, "outside the workspace"},
		{"/etc/*", tool.KindDenied, "outside the workspace"},
		{"", tool.KindInvalidArguments, "empty"},
		{".", tool.KindInvalidArguments, "only the workspace root"},
	}
	for _, f := range failures {
		contains(t, fail(t, e, "glob", map[string]any{"pattern": f.pattern}, f.kind), f.want)
	}
}

func TestGlobCap(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{}
	for i := range 30 {
		files[fmt.Sprintf("f%02d.txt", i)] = ""
	}
	writeFiles(t, dir, files)
	e := newEngine(t, dir, tools.Options{MaxGlobResults: 10})
	got := ok(t, e, "glob", map[string]any{"pattern": "*.txt"})
	lines := strings.Split(got, "\n")
	if len(lines) != 11 || lines[0] != "f00.txt" || lines[9] != "f09.txt" {
		t.Fatalf("capped glob:\n%s", got)
	}
	contains(t, lines[10], "20 more paths", "narrow the pattern")
}
