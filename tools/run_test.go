//go:build linux

package tools_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lathe-tools/lathe/sandbox"
	"github.com/lathe-tools/lathe/tool"
	"github.com/lathe-tools/lathe/tools"
)

// standardWorks reports whether the standard profile runs here.
func standardWorks(t *testing.T) {
	t.Helper()
	e := newEngine(t, t.TempDir(), tools.Options{Command: &sandbox.Config{}})
	if r := call(t, e, tools.RunCommand, map[string]string{"command": "true"}); r.IsError {
		t.Skipf("the standard sandbox profile does not run on this kernel: %s", r.Text())
	}
}

func TestRunCommand(t *testing.T) {
	standardWorks(t)
	ws, outside := escapeFixture(t)
	e := newEngine(t, ws, tools.Options{Command: &sandbox.Config{
		Limits: sandbox.Limits{Wall: 3 * time.Second, Output: 4096},
	}})
	out := ok(t, e, tools.RunCommand, map[string]string{"command": "echo hello > made.txt; cat made.txt; pwd"})
	contains(t, out, "hello", ws)
	if got := readFile(t, filepath.Join(ws, "made.txt")); got != "hello\n" {
		t.Errorf("made.txt = %q", got)
	}
	fail(t, e, tools.RunCommand, map[string]string{"command": "echo oops >&2; exit 3"}, tool.KindToolError)
	text := fail(t, e, tools.RunCommand, map[string]string{"command": "cat " + filepath.Join(outside, "secret.txt")}, tool.KindToolError)
	if strings.Contains(text, readFile(t, filepath.Join(outside, "secret.txt"))) {
		t.Errorf("the secret leaked: %s", text)
	}
	fail(t, e, tools.RunCommand, map[string]string{"command": "sleep 30"}, tool.KindTimeout)
	text = fail(t, e, tools.RunCommand, map[string]string{"command": "yes"}, tool.KindToolError)
	contains(t, text, "4096 bytes")
	fail(t, e, tools.RunCommand, map[string]string{"command": " "}, tool.KindInvalidArguments)
	if _, err := os.Stat(filepath.Join(outside, "new.txt")); err == nil {
		t.Error("a file appeared outside")
	}
}

func TestRunCommandHardened(t *testing.T) {
	e := newEngine(t, t.TempDir(), tools.Options{Command: &sandbox.Config{Profile: sandbox.Hardened}})
	r := call(t, e, tools.RunCommand, map[string]string{"command": "true"})
	if !r.IsError && !hasRunsc() {
		t.Fatal("the hardened profile ran without runsc")
	}
}

func hasRunsc() bool {
	for _, d := range filepath.SplitList(os.Getenv("PATH")) {
		if _, err := os.Stat(filepath.Join(d, "runsc")); err == nil {
			return true
		}
	}
	return false
}
