package tools_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lathe-tools/lathe"
	"github.com/lathe-tools/lathe/tool"
	"github.com/lathe-tools/lathe/tools"
)

// callWithin runs one call and fails the test, naming the call, if it does
// not return within d.
func callWithin(t *testing.T, e *lathe.Engine, d time.Duration, name string, args map[string]any) *tool.Result {
	t.Helper()
	raw, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan *tool.Outcome, 1)
	go func() { done <- e.Call(context.Background(), &tool.Call{Name: name, Arguments: raw}) }()
	select {
	case out := <-done:
		if out.Result == nil {
			t.Fatalf("%s %s: no result: %+v", name, raw, out)
		}
		return out.Result
	case <-time.After(d):
		t.Fatalf("%s %s hung for %s", name, raw, d)
		return nil
	}
}

// TestEditFileSparseBomb: a sparse file of 10 TiB costs nothing on disk;
// edit_file must refuse it by its size, at once and without reading it.
func TestEditFileSparseBomb(t *testing.T) {
	dir := t.TempDir()
	big := filepath.Join(dir, "big.txt")
	f, err := os.Create(big)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("needle\n")
	f.Close()
	if err := os.Truncate(big, 10<<40); err != nil {
		t.Skip("no sparse 10 TiB file here:", err)
	}
	e := newEngine(t, dir, tools.Options{})
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	r := callWithin(t, e, 10*time.Second, "edit_file", map[string]any{"path": "big.txt", "old_string": "needle", "new_string": "x"})
	runtime.ReadMemStats(&after)
	if !r.IsError {
		t.Fatalf("edit_file of a 10 TiB file succeeded: %s", r.Text())
	}
	contains(t, r.Text(), `"big.txt"`, "10995116277760 bytes", "more than the")
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 16<<20 {
		t.Errorf("edit_file allocated %d bytes to refuse the file", grew)
	}

	// The cap holds for what the edit would write, too.
	small := "x" + strings.Repeat("a", 999)
	writeFiles(t, dir, map[string]string{"small.txt": small})
	e = newEngine(t, dir, tools.Options{MaxEditBytes: 4096})
	contains(t, fail(t, e, "edit_file", map[string]any{"path": "small.txt", "old_string": "a", "new_string": "bbbbb", "replace_all": true},
		tool.KindToolError), "the result would be 4996 bytes")
	contains(t, fail(t, e, "edit_file", map[string]any{"path": "small.txt", "old_string": "x", "new_string": strings.Repeat("b", 5000)},
		tool.KindToolError), "more than the 4096 bytes")
	if got := readFile(t, filepath.Join(dir, "small.txt")); got != small {
		t.Error("a refused edit changed the file")
	}
}

// TestSpecialFiles puts a FIFO (and, where it can be made, a device) in the
// workspace: no tool may open one, so no call blocks on it; tools named it
// refuse it, and walks pass over it.
func TestSpecialFiles(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"a.txt": "needle\n", "sub/b.txt": "needle\n"})
	if err := mkfifo(filepath.Join(dir, "sub", "fifo.txt")); err != nil {
		t.Skip("no FIFOs here:", err)
	}
	special := []string{"sub/fifo.txt"}
	// A device node needs root; /dev/zero's numbers (1, 5) never end a read.
	if err := syscall.Mknod(filepath.Join(dir, "zero.txt"), syscall.S_IFCHR|0o666, 1<<8|5); err == nil {
		special = append(special, "zero.txt")
	}
	e := newEngine(t, dir, tools.Options{})
	const limit = 10 * time.Second

	for _, p := range special {
		for _, c := range []struct {
			name string
			args map[string]any
		}{
			{"read_file", map[string]any{"path": p}},
			{"edit_file", map[string]any{"path": p, "old_string": "a", "new_string": "b"}},
			{"write_file", map[string]any{"path": p, "content": "x"}},
			{"grep", map[string]any{"pattern": "needle", "path": p}},
			{"list_dir", map[string]any{"path": p}},
		} {
			r := callWithin(t, e, limit, c.name, c.args)
			if !r.IsError || !strings.Contains(r.Text(), "not a regular file") {
				t.Errorf("%s %s: want a refusal naming it not a regular file, got: %s", c.name, p, r.Text())
			}
		}
	}
	if got := callWithin(t, e, limit, "grep", map[string]any{"pattern": "needle"}).Text(); got != "a.txt:1:needle\nsub/b.txt:1:needle" {
		t.Errorf("grep over a tree with special files:\n%s", got)
	}
	if got := callWithin(t, e, limit, "glob", map[string]any{"pattern": "**/*.txt"}).Text(); !strings.Contains(got, "sub/fifo.txt") {
		t.Errorf("glob does not list the FIFO by name:\n%s", got)
	}
	if got := callWithin(t, e, limit, "list_dir", map[string]any{"path": "sub"}).Text(); got != "b.txt\nfifo.txt" {
		t.Errorf("list_dir sub:\n%s", got)
	}
	if fi, err := os.Lstat(filepath.Join(dir, "sub", "fifo.txt")); err != nil || fi.Mode()&os.ModeNamedPipe == 0 {
		t.Error("the FIFO was replaced")
	}
}

// TestNamesShownUnambiguously: a name holding a newline, or bytes that are
// not UTF-8, is shown quoted, so that it reads as one name and not as two.
func TestNamesShownUnambiguously(t *testing.T) {
	dir := t.TempDir()
	names := map[string]string{
		"a\nb.txt":       `"a\nb.txt"`,
		"bad\xff.txt":    `"bad\xff.txt"`,
		"x -> y.txt":     `"x -> y.txt"`,
		"plain é.txt":    "plain é.txt",
		"tab\there.txt":  `"tab\there.txt"`,
		`"quoted".txt`:   `"\"quoted\".txt"`,
		"esc\x1b[2J.txt": `"esc\x1b[2J.txt"`,
	}
	for n := range names {
		if err := os.WriteFile(filepath.Join(dir, n), []byte("needle\n"), 0o644); err != nil {
			t.Skip("the file system refuses the name:", err)
		}
	}
	e := newEngine(t, dir, tools.Options{})
	list := strings.Split(ok(t, e, "list_dir", map[string]any{}), "\n")
	glob := strings.Split(ok(t, e, "glob", map[string]any{"pattern": "*.txt"}), "\n")
	grep := strings.Split(ok(t, e, "grep", map[string]any{"pattern": "needle"}), "\n")
	for _, out := range [][]string{list, glob, grep} {
		if len(out) != len(names) {
			t.Errorf("%d lines for %d names:\n%s", len(out), len(names), strings.Join(out, "\n"))
		}
	}
	for n, shown := range names {
		if !containsLine(list, shown) || !containsLine(glob, shown) || !containsLine(grep, shown+":1:needle") {
			t.Errorf("%q is not shown as %s:\nlist_dir:\n%s\nglob:\n%s\ngrep:\n%s", n, shown,
				strings.Join(list, "\n"), strings.Join(glob, "\n"), strings.Join(grep, "\n"))
		}
	}
}

func containsLine(lines []string, want string) bool {
	for _, l := range lines {
		if l == want {
			return true
		}
	}
	return false
}
