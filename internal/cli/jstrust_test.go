//go:build linux

package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lathe-tools/lathe/internal/ptytest"
)

// On a terminal, lathe call shows a new tool file's code and asks; yes
// trusts it and runs the tool, anything else runs nothing. Changed, it is
// asked about again with the change shown.
func TestCallAsksAboutToolFileOnTerminal(t *testing.T) {
	for _, tc := range []struct {
		answer string
		runs   bool
	}{
		{"y\n", true},
		{"\n", false},
	} {
		t.Run(strings.TrimSpace(tc.answer), func(t *testing.T) {
			root := t.TempDir()
			ws := filepath.Join(root, "ws")
			tools := filepath.Join(ws, ".lathe", "tools")
			if err := os.MkdirAll(tools, 0o755); err != nil {
				t.Fatal(err)
			}
			t.Setenv("HOME", root)
			t.Setenv("XDG_CONFIG_HOME", filepath.Join(root, "config"))
			t.Setenv("XDG_STATE_HOME", filepath.Join(root, "state"))
			t.Setenv("LATHE_CACHE_DIR", filepath.Join(root, "cache"))
			file := filepath.Join(tools, "hi.ts")
			src := "export default {\n  description: \"Says hi.\",\n  annotations: { readOnlyHint: true },\n  execute(): string { return \"hi there\"; },\n};\n"
			if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
				t.Fatal(err)
			}
			master, slave := ptytest.Open(t)
			if _, err := master.Write([]byte(tc.answer)); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			run := func(in *os.File, args ...string) (int, string, string) {
				var out, errs bytes.Buffer
				done := make(chan int, 1)
				go func() {
					done <- Run(ctx, append([]string{"--workspace", ws}, args...), Streams{In: in, Out: &out, Err: &errs})
				}()
				select {
				case code := <-done:
					return code, out.String(), errs.String()
				case <-time.After(40 * time.Second):
					t.Fatal("lathe call did not return: it hung asking on the terminal")
				}
				return 0, "", ""
			}
			code, out, errs := run(slave, "call", "hi")
			if !strings.Contains(errs, "runs the JavaScript tool hi") || !strings.Contains(errs, `return "hi there"`) ||
				!strings.Contains(errs, "Trust "+file+"? [y/N]") {
				t.Errorf("the question did not show the tool's code:\n%s", errs)
			}
			if ran := strings.Contains(out, "hi there"); ran != tc.runs {
				t.Fatalf("answer %q: ran = %v, want %v (exit %d)\n%s", tc.answer, ran, tc.runs, code, errs)
			}
			if !tc.runs {
				if code != ExitUnknownTool {
					t.Errorf("exit %d, want %d", code, ExitUnknownTool)
				}
				return
			}
			changed := strings.Replace(src, "hi there", "hi changed", 1)
			if err := os.WriteFile(file, []byte(changed), 0o644); err != nil {
				t.Fatal(err)
			}
			master.Write([]byte("\n"))
			code, out, errs = run(slave, "call", "hi")
			if !strings.Contains(errs, "is changed since it was trusted") || !strings.Contains(errs, `+   execute(): string { return "hi changed"; },`) {
				t.Errorf("the question about the changed file lacks the change:\n%s", errs)
			}
			if strings.Contains(out, "hi changed") || code != ExitUnknownTool {
				t.Errorf("the changed tool ran without a yes (exit %d): %s", code, out)
			}
		})
	}
}
