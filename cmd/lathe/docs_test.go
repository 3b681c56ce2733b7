package main

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lathe-tools/lathe/config"
	"github.com/lathe-tools/lathe/internal/cli"
)

// docFiles are the documents whose TOML blocks TestDocTOMLBlocks loads.
var docFiles = []string{"../../README.md", "../../docs/config.md", "../../docs/policy.md", "../../docs/mcp.md", "../../docs/cli.md"}

// tomlBlock matches a ```toml block and its info string. A block whose info
// string says "fragment" (```toml fragment) is part of a file on purpose,
// or needs what a test does not have (a program of the reader's, a server
// on the network): it must parse, and is not loaded.
var tomlBlock = regexp.MustCompile("(?ms)^```toml([^\n]*)\n(.*?)^```")

// TestDocTOMLBlocks loads every TOML block of the docs as a workspace's
// lathe.toml, as a reader would, so that an example cannot rot: lathe must
// trust it and list its tools without a word on standard error (no unknown
// tool, no program that does not exist, no rule that matches nothing), and a
// tool's timeout must fit in the sandbox's wall time, which would stop the
// run first.
func TestDocTOMLBlocks(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	t.Setenv("LATHE_CACHE_DIR", t.TempDir())
	total := 0
	for _, doc := range docFiles {
		b, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range tomlBlock.FindAllStringSubmatchIndex(string(b), -1) {
			total++
			info, body := string(b[m[2]:m[3]]), string(b[m[4]:m[5]])
			line := 1 + strings.Count(string(b[:m[0]]), "\n")
			where := filepath.Base(doc) + ":" + strconv.Itoa(line)
			if _, err := config.Parse(where, []byte(body)); err != nil {
				t.Errorf("%s: the block does not parse: %v", where, err)
				continue
			}
			if strings.Contains(info, "fragment") {
				continue
			}
			t.Run(where, func(t *testing.T) { loadBlock(t, body) })
		}
	}
	if total < 20 {
		t.Fatalf("found %d TOML blocks in the docs; the pattern no longer finds them", total)
	}
}

// loadBlock loads body as the lathe.toml of a new workspace.
func loadBlock(t *testing.T, body string) {
	ws := t.TempDir()
	if err := os.WriteFile(filepath.Join(ws, "lathe.toml"), []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) {
		t.Helper()
		var out, errOut strings.Builder
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		defer cancel()
		code := cli.Run(ctx, append([]string{"--workspace", ws}, args...), cli.Streams{In: strings.NewReader(""), Out: &out, Err: &errOut})
		if code != 0 || errOut.Len() > 0 {
			t.Errorf("lathe %s: exit %d\n%s\n--- the block:\n%s", strings.Join(args, " "), code, errOut.String(), body)
		}
	}
	run("trust", "--yes")
	run("list")

	cfg, err := config.Load(ws, "")
	if err != nil {
		t.Fatal(err)
	}
	wall := cfg.Sandbox.Limits.WallTime
	if wall == 0 {
		wall = 2 * time.Minute // the documented default of [sandbox.limits] wall_time
	}
	for name, tc := range cfg.Tools {
		// The wall time bounds what runs as a process: run_command and
		// the tools with a command.
		if name != "run_command" && len(tc.Command) == 0 {
			continue
		}
		if d := tc.Timeout; d > wall {
			t.Errorf("[tools.%s] timeout %v is longer than the sandbox's wall time %v, which stops each run first\n--- the block:\n%s", name, d, wall, body)
		}
	}
}
