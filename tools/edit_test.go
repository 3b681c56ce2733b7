package tools_test

import (
	"path/filepath"
	"testing"

	"github.com/lathe-tools/lathe/tool"
	"github.com/lathe-tools/lathe/tools"
)

// edit_file matches text written with "\n" in a file whose lines end in
// "\r\n", and the lines it writes end as the file's do.
func TestEditFileCRLF(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"dos.txt":   "one\r\ntwo\r\nthree\r\n",
		"mixed.txt": "a\r\nb\nc\r\nd\n",
		"unix.txt":  "x\ny\n",
	})
	e := newEngine(t, dir, tools.Options{})
	check := func(name, want string) {
		t.Helper()
		if got := readFile(t, filepath.Join(dir, name)); got != want {
			t.Errorf("%s = %q, want %q", name, got, want)
		}
	}

	// A CRLF file: old_string with "\n" matches, new lines get "\r\n".
	contains(t, ok(t, e, "edit_file", map[string]any{"path": "dos.txt", "old_string": "one\ntwo\n", "new_string": "uno\ndos\nzwei\n"}),
		"1 replacement")
	check("dos.txt", "uno\r\ndos\r\nzwei\r\nthree\r\n")
	// One written with "\r\n" matches too, and stays as it is.
	ok(t, e, "edit_file", map[string]any{"path": "dos.txt", "old_string": "dos\r\n", "new_string": "two\r\n"})
	check("dos.txt", "uno\r\ntwo\r\nzwei\r\nthree\r\n")
	// Text without a line end adds lines with the file's ending.
	ok(t, e, "edit_file", map[string]any{"path": "dos.txt", "old_string": "three", "new_string": "three\nfour"})
	check("dos.txt", "uno\r\ntwo\r\nzwei\r\nthree\r\nfour\r\n")

	// A mixed file: what occurs as written is taken as written; what
	// occurs only with "\r\n" is taken so.
	ok(t, e, "edit_file", map[string]any{"path": "mixed.txt", "old_string": "b\nc", "new_string": "B\nC"})
	check("mixed.txt", "a\r\nB\nC\r\nd\n")
	ok(t, e, "edit_file", map[string]any{"path": "mixed.txt", "old_string": "a\nB", "new_string": "A\nB"})
	check("mixed.txt", "A\r\nB\nC\r\nd\n")
	fail(t, e, "edit_file", map[string]any{"path": "mixed.txt", "old_string": "C\nd\r\n", "new_string": "x"}, tool.KindToolError)

	// A file without "\r\n" is edited as written: no "\r" appears.
	ok(t, e, "edit_file", map[string]any{"path": "unix.txt", "old_string": "x\n", "new_string": "x\nw\n"})
	check("unix.txt", "x\nw\ny\n")
}
