//go:build linux

package tools_test

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/lathe-tools/lathe/tool"
	"github.com/lathe-tools/lathe/tools"
)

// flipper swaps the directory name with a symbolic link to target, as fast
// as it can, until stop is called. The swap is one atomic exchange of two
// names (renameat2 RENAME_EXCHANGE), so name always exists and is the
// directory or the link: a call racing it sees one or the other at every step
// of its way, and never finds name missing (which would let a write create a
// fresh directory there and end the race).
func flipper(t *testing.T, name, target string) (stop func()) {
	t.Helper()
	link := name + ".link"
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	exchange := func() error {
		return unix.Renameat2(unix.AT_FDCWD, name, unix.AT_FDCWD, link, unix.RENAME_EXCHANGE)
	}
	if err := exchange(); err != nil {
		t.Skip("no atomic exchange of names here:", err)
	}
	exchange()
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		for {
			select {
			case <-done:
				return
			default:
			}
			// Each state is held for a moment, so that a call sees the
			// link for whole steps of its way, not only between two.
			exchange()
			hold()
			exchange()
			hold()
		}
	}()
	return func() {
		close(done)
		select {
		case <-stopped:
		case <-time.After(10 * time.Second):
			t.Fatal("the goroutine swapping the directory and the link did not stop")
		}
		// Leave the directory in place, whichever state the flips ended in.
		if fi, err := os.Lstat(name); err == nil && fi.Mode()&os.ModeSymlink != 0 {
			exchange()
		}
	}
}

// hold keeps a state of the flipper for a few microseconds.
func hold() {
	for range 20 {
		runtime.Gosched()
	}
}

// TestSwapIntoStateDir races a directory of the workspace against a symbolic
// link to .lathe, where the audit log and the grants live, while tools write,
// edit, read, list and search through the directory, many times over.
// Whatever the interleaving, no call may change, create or show anything in
// .lathe: the symbolic link is inside the workspace, so a confinement to the
// root alone (os.Root) would follow it.
func TestSwapIntoStateDir(t *testing.T) {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	writeFiles(t, dir, map[string]string{
		".lathe/audit.db":  "AUDIT-SECRET\n",
		".lathe/grants.db": "GRANTS\n",
		"d/keep.txt":       "keep\n",
	})
	state := filepath.Join(dir, tools.StateDir)
	before := snapshot(t, state)
	e := newEngine(t, dir, tools.Options{})

	stop := flipper(t, filepath.Join(dir, "d"), tools.StateDir)
	deadline := time.Now().Add(20 * time.Second)
	rounds := 0
	for ; rounds < 600 && time.Now().Before(deadline); rounds++ {
		call(t, e, "write_file", map[string]any{"path": "d/audit.db", "content": "FORGED\n"})
		call(t, e, "write_file", map[string]any{"path": "d/new/planted.db", "content": "FORGED\n"})
		call(t, e, "edit_file", map[string]any{"path": "d/grants.db", "old_string": "GRANTS", "new_string": "pwned"})
		for _, c := range []struct {
			name string
			args map[string]any
		}{
			{"read_file", map[string]any{"path": "d/audit.db"}},
			{"list_dir", map[string]any{"path": "d"}},
			{"grep", map[string]any{"pattern": "AUDIT-SECRET|GRANTS", "path": "d"}},
			{"grep", map[string]any{"pattern": "AUDIT-SECRET|GRANTS"}},
			{"glob", map[string]any{"pattern": "d/**"}},
		} {
			text := call(t, e, c.name, c.args).Text()
			if c.name == "grep" {
				// Only a match shows content; the note for none repeats the pattern.
				text = strings.ReplaceAll(text, fmt.Sprintf("%q", c.args["pattern"]), "")
			}
			if strings.Contains(text, "AUDIT-SECRET") || strings.Contains(text, "GRANTS") || strings.Contains(text, "grants.db") {
				stop()
				t.Fatalf("round %d: %s %v showed the state directory:\n%s", rounds, c.name, c.args, text)
			}
		}
	}
	stop()
	t.Logf("%d rounds", rounds)
	if rounds < 50 {
		t.Fatalf("only %d rounds ran before the deadline; the race was hardly tried", rounds)
	}
	sameSnapshot(t, before, snapshot(t, state))
}

// Calls share the workspace's descriptor of the root; many at once, under
// the race detector, each gets its own answer.
func TestConcurrentCalls(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"a/b/c.txt": "needle\n", "d.txt": "needle\n"})
	e := newEngine(t, dir, tools.Options{})
	done := make(chan string, 64)
	for i := range 64 {
		var name, args string
		switch i % 4 {
		case 0:
			name, args = "read_file", `{"path":"a/b/c.txt"}`
		case 1:
			name, args = "grep", `{"pattern":"needle"}`
		case 2:
			name, args = "list_dir", `{"path":"a/b"}`
		default:
			name, args = "write_file", fmt.Sprintf(`{"path":"w/%d.txt","content":"x"}`, i)
		}
		// Not call: a test may fail only from its own goroutine.
		go func() {
			out := e.Call(t.Context(), &tool.Call{Name: name, Arguments: []byte(args)})
			if out.Result == nil {
				done <- fmt.Sprintf("%s: no result", name)
				return
			}
			done <- out.Result.Text()
		}()
	}
	for range 64 {
		select {
		case got := <-done:
			if got != "needle\n" && got != "a/b/c.txt:1:needle\nd.txt:1:needle" && got != "c.txt" && !strings.HasPrefix(got, `created "w/`) {
				t.Errorf("unexpected answer: %q", got)
			}
		case <-time.After(30 * time.Second):
			t.Fatal("concurrent calls hung")
		}
	}
}
