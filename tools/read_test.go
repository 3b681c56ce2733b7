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

// numbered returns n lines "line 1\n" … "line n\n".
func numbered(n int) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "line %d\n", i)
	}
	return b.String()
}

func TestReadFile(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"ten.txt":        numbered(10),
		"no-newline.txt": "one\ntwo",
		"empty.txt":      "",
		"crlf.txt":       "a\r\nb\r\n",
		"sub/u.txt":      "héllo wörld ✓\n",
	})
	e := newEngine(t, dir, tools.Options{})

	tests := []struct {
		name string
		args map[string]any
		want string
	}{
		{"whole file", map[string]any{"path": "ten.txt"}, numbered(10)},
		{"no trailing newline", map[string]any{"path": "no-newline.txt"}, "one\ntwo"},
		{"carriage returns kept", map[string]any{"path": "crlf.txt"}, "a\r\nb\r\n"},
		{"unicode", map[string]any{"path": "sub/u.txt"}, "héllo wörld ✓\n"},
		{"absolute path inside", map[string]any{"path": filepath.Join(dir, "sub", "u.txt")}, "héllo wörld ✓\n"},
		{"head", map[string]any{"path": "ten.txt", "limit": 3},
			"line 1\nline 2\nline 3\n[showing lines 1-3 of 10; to read on, call read_file with offset=4]"},
		{"middle", map[string]any{"path": "ten.txt", "offset": 4, "limit": 2},
			"line 4\nline 5\n[showing lines 4-5 of 10; to read on, call read_file with offset=6]"},
		{"tail", map[string]any{"path": "ten.txt", "offset": 9},
			"line 9\nline 10\n[showing lines 9-10 of 10]"},
		{"limit past the end", map[string]any{"path": "ten.txt", "offset": 10, "limit": 50},
			"line 10\n[showing lines 10-10 of 10]"},
		{"last line without newline", map[string]any{"path": "no-newline.txt", "offset": 2},
			"two\n[showing lines 2-2 of 2]"},
		{"offset as a string", map[string]any{"path": "ten.txt", "offset": "10"},
			"line 10\n[showing lines 10-10 of 10]"},
		{"empty file", map[string]any{"path": "empty.txt"}, `["empty.txt" is empty]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ok(t, e, "read_file", tt.args); got != tt.want {
				t.Errorf("got\n%q\nwant\n%q", got, tt.want)
			}
		})
	}
}

func TestReadFileErrors(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"ten.txt":   numbered(10),
		"sub/x.txt": "x\n",
		"empty.txt": "",
	})
	e := newEngine(t, dir, tools.Options{})

	tests := []struct {
		args map[string]any
		kind tool.ErrorKind
		want []string
	}{
		{map[string]any{"path": "nope.txt"}, tool.KindToolError, []string{`"nope.txt"`, "no such file"}},
		{map[string]any{"path": "sub/../missing/x.txt"}, tool.KindToolError, []string{`"missing/x.txt"`, "no such file"}},
		{map[string]any{"path": "sub"}, tool.KindToolError, []string{`"sub"`, "is a directory", "list_dir"}},
		{map[string]any{"path": "ten.txt/x"}, tool.KindToolError, []string{`"ten.txt/x"`, "not a directory"}},
		{map[string]any{"path": "ten.txt", "offset": 11}, tool.KindToolError, []string{"offset 11", `"ten.txt"`, "10 lines"}},
		{map[string]any{"path": "empty.txt", "offset": 2}, tool.KindToolError, []string{"offset 2", "empty"}},
		{map[string]any{"path": "ten.txt", "offset": 0}, tool.KindInvalidArguments, []string{"/offset"}},
		{map[string]any{"path": "ten.txt", "limit": 0}, tool.KindInvalidArguments, []string{"/limit"}},
		{map[string]any{}, tool.KindInvalidArguments, []string{"path"}},
		{map[string]any{"path": "ten.txt", "lines": 3}, tool.KindInvalidArguments, []string{"lines"}},
	}
	for _, tt := range tests {
		contains(t, fail(t, e, "read_file", tt.args, tt.kind), tt.want...)
	}
}

func TestReadFileBinary(t *testing.T) {
	dir := t.TempDir()
	late := strings.Repeat("text line\n", 20000) + "caf\xe9\n" // Latin-1, 200 KB in
	writeFiles(t, dir, map[string]string{
		"nul.bin":    "PK\x03\x04\x00\x00binary",
		"latin1.txt": "caf\xe9\n",
		"late.txt":   late,
		"cut.txt":    "ok\n\xe2\x82", // a rune cut off at the end
	})
	e := newEngine(t, dir, tools.Options{})
	contains(t, fail(t, e, "read_file", map[string]any{"path": "nul.bin"}, tool.KindToolError),
		`"nul.bin"`, "binary file", "NUL")
	contains(t, fail(t, e, "read_file", map[string]any{"path": "latin1.txt"}, tool.KindToolError),
		`"latin1.txt"`, "binary file", "line 1 is not valid UTF-8")
	// The whole file is checked, not only the lines asked for, so that a
	// file reads as text or not the same way whatever the range.
	contains(t, fail(t, e, "read_file", map[string]any{"path": "late.txt", "limit": 1}, tool.KindToolError),
		"line 20001 is not valid UTF-8")
	contains(t, fail(t, e, "read_file", map[string]any{"path": "cut.txt"}, tool.KindToolError), "binary file")
}

// Lines longer than the reader's buffer arrive in pieces that may split a
// rune; they must still read back exactly.
func TestReadFileLongLines(t *testing.T) {
	dir := t.TempDir()
	long := strings.Repeat("€", 60_000) // 180,000 bytes; pieces of 64 KiB split runes
	content := "first\n" + long + "\nlast\n"
	writeFiles(t, dir, map[string]string{"long.txt": content})
	e := newEngine(t, dir, tools.Options{MaxReadBytes: 1 << 20})
	if got := ok(t, e, "read_file", map[string]any{"path": "long.txt"}); got != content {
		t.Errorf("long line read back wrong: %d bytes, want %d", len(got), len(content))
	}
	got := ok(t, e, "read_file", map[string]any{"path": "long.txt", "offset": 3})
	if got != "last\n[showing lines 3-3 of 3]" {
		t.Errorf("after a long line: %q", got)
	}
}

// The reader hands out long lines in pieces of 64 KiB; a rune split across
// two pieces is checked whole.
func TestReadFileSplitRune(t *testing.T) {
	dir := t.TempDir()
	pad := strings.Repeat("a", 64<<10-1)
	writeFiles(t, dir, map[string]string{
		"valid.txt":   pad + "€€\n",
		"invalid.txt": pad + "\xe2\x28\xa1\n",
		"short.txt":   pad + "\xe2\x82",
	})
	e := newEngine(t, dir, tools.Options{})
	if got := ok(t, e, "read_file", map[string]any{"path": "valid.txt"}); got != pad+"€€\n" {
		t.Errorf("a rune split across pieces read back wrong: ...%q", got[len(got)-10:])
	}
	contains(t, fail(t, e, "read_file", map[string]any{"path": "invalid.txt"}, tool.KindToolError), "line 1 is not valid UTF-8")
	contains(t, fail(t, e, "read_file", map[string]any{"path": "short.txt"}, tool.KindToolError), "not valid UTF-8")
}

func TestReadFileCap(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"many.txt": numbered(1000),
		"wide.txt": "short\n" + strings.Repeat("é", 2000) + "\nend\n",
	})
	const limit = 1000
	e := newEngine(t, dir, tools.Options{MaxReadBytes: limit})

	got := ok(t, e, "read_file", map[string]any{"path": "many.txt"})
	if len(got) > limit {
		t.Errorf("output of %d bytes is over the %d-byte cap", len(got), limit)
	}
	body, note, found := strings.Cut(got, "[showing lines 1-")
	if !found {
		t.Fatalf("no note:\n%s", got)
	}
	lines := strings.Count(body, "\n")
	if body != numbered(lines) {
		t.Errorf("capped output is not whole lines from the start:\n%s", body)
	}
	contains(t, note, fmt.Sprintf("%d of 1000", lines), "capped at", fmt.Sprintf("offset=%d", lines+1))

	// Following the note reads on where the last call stopped.
	next := ok(t, e, "read_file", map[string]any{"path": "many.txt", "offset": lines + 1})
	if !strings.HasPrefix(next, fmt.Sprintf("line %d\n", lines+1)) {
		t.Errorf("reading on from the note starts with %q", next[:20])
	}

	// A line longer than the cap comes back cut, at a rune boundary, with a
	// note that moves past it rather than asking for it again.
	got = ok(t, e, "read_file", map[string]any{"path": "wide.txt", "offset": 2})
	if len(got) > limit {
		t.Errorf("output of %d bytes is over the %d-byte cap", len(got), limit)
	}
	body, note, _ = strings.Cut(got, "\n[")
	if strings.Trim(body, "é") != "" || body == "" {
		t.Errorf("cut line is not a whole number of runes: %q", body)
	}
	contains(t, note, "line 2 of 3 is longer than", "offset=3")
}

func TestReadFileNotRegular(t *testing.T) {
	dir := t.TempDir()
	if err := mkfifo(filepath.Join(dir, "fifo")); err != nil {
		t.Skip("no FIFOs here:", err)
	}
	e := newEngine(t, dir, tools.Options{})
	// Opening a FIFO would block until a writer came along; it is refused.
	contains(t, fail(t, e, "read_file", map[string]any{"path": "fifo"}, tool.KindToolError), "not a regular file")
	contains(t, fail(t, e, "write_file", map[string]any{"path": "fifo", "content": "x"}, tool.KindToolError), "not a regular file")
	if fi, err := os.Lstat(filepath.Join(dir, "fifo")); err != nil || fi.Mode()&os.ModeNamedPipe == 0 {
		t.Error("the FIFO was replaced")
	}
}
