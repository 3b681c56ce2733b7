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

// On a terminal, lathe call shows what an untrusted lathe.toml would start
// and asks; yes trusts it and runs the tool, anything else runs nothing of
// it.
func TestCallAsksOnTerminal(t *testing.T) {
	for _, tc := range []struct {
		answer string
		runs   bool
	}{
		{"y\n", true},
		{"\n", false},
		{"no\n", false},
	} {
		t.Run(strings.TrimSpace(tc.answer), func(t *testing.T) {
			root := t.TempDir()
			ws := filepath.Join(root, "ws")
			os.Mkdir(ws, 0o755)
			t.Setenv("HOME", root)
			t.Setenv("XDG_CONFIG_HOME", filepath.Join(root, "config"))
			t.Setenv("XDG_STATE_HOME", filepath.Join(root, "state"))
			toml := "[tools.plant]\ncommand = [\"sh\", \"-c\", \"touch planted; echo ran\"]\nparameters = {}\n"
			if err := os.WriteFile(filepath.Join(ws, "lathe.toml"), []byte(toml), 0o644); err != nil {
				t.Fatal(err)
			}
			master, slave := ptytest.Open(t)
			if _, err := master.Write([]byte(tc.answer)); err != nil {
				t.Fatal(err)
			}
			var out, errs bytes.Buffer
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			done := make(chan int, 1)
			go func() {
				done <- Run(ctx, []string{"--workspace", ws, "call", "plant"}, Streams{In: slave, Out: &out, Err: &errs})
			}()
			var code int
			select {
			case code = <-done:
			case <-time.After(40 * time.Second):
				t.Fatal("lathe call did not return: it hung asking on the terminal")
			}
			if !strings.Contains(errs.String(), "tools.plant.command: starts the program") ||
				!strings.Contains(errs.String(), "Trust "+filepath.Join(ws, "lathe.toml")+"? [y/N]") {
				t.Errorf("the question did not show what the file starts:\n%s", errs.String())
			}
			_, err := os.Stat(filepath.Join(ws, "planted"))
			if ran := err == nil; ran != tc.runs {
				t.Fatalf("answer %q: the tool ran = %v, want %v (exit %d)\n%s", tc.answer, ran, tc.runs, code, errs.String())
			}
			if tc.runs {
				if code != ExitOK || out.String() != "ran\n" {
					t.Errorf("exit %d, output %q", code, out.String())
				}
				// The answer is recorded: the next run asks nothing.
				var errs2 bytes.Buffer
				if code := Run(ctx, []string{"--workspace", ws, "list"}, Streams{In: strings.NewReader(""), Out: &out, Err: &errs2}); code != ExitOK || errs2.Len() > 0 {
					t.Errorf("after yes, list: exit %d, %s", code, errs2.String())
				}
				// Changed by one byte, the file is asked about again, with
				// the change shown; no answer runs nothing.
				changed := strings.Replace(toml, "touch planted", "touch plantex", 1)
				if err := os.WriteFile(filepath.Join(ws, "lathe.toml"), []byte(changed), 0o644); err != nil {
					t.Fatal(err)
				}
				master.Write([]byte("\n"))
				var errs3 bytes.Buffer
				code := Run(ctx, []string{"--workspace", ws, "call", "plant"}, Streams{In: slave, Out: &out, Err: &errs3})
				for _, want := range []string{"is changed since it was trusted", "Changes since it was trusted:",
					`  - command = ["sh", "-c", "touch planted; echo ran"]`, `  + command = ["sh", "-c", "touch plantex; echo ran"]`} {
					if !strings.Contains(errs3.String(), want) {
						t.Errorf("the question about the changed file lacks %q:\n%s", want, errs3.String())
					}
				}
				if _, err := os.Stat(filepath.Join(ws, "plantex")); err == nil || code != ExitUnknownTool {
					t.Errorf("the changed file ran without a yes (exit %d)", code)
				}
			} else if code != ExitUnknownTool || !strings.Contains(errs.String(), "lathe trust --workspace "+shellQuote(ws)) {
				t.Errorf("after %q: exit %d, want %d and the command to trust it:\n%s", tc.answer, code, ExitUnknownTool, errs.String())
			}
		})
	}
}
