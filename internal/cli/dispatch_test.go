package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A program built on package cli without a runtime for task queues (no
// import of cli/temporalcli) loads a configuration that routes a tool to a
// queue with a warning that says what is missing, and serves the rest;
// lathe worker refuses with the same words.
func TestNoDispatchRuntime(t *testing.T) {
	if dispatchRuntimeOf() != nil {
		t.Fatal("package cli's own tests must not have a dispatch runtime")
	}
	root := t.TempDir()
	ws := filepath.Join(root, "ws")
	os.Mkdir(ws, 0o755)
	t.Setenv("HOME", root)
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(root, "config"))
	t.Setenv("XDG_STATE_HOME", filepath.Join(root, "state"))
	t.Setenv("XDG_CACHE_HOME", filepath.Join(root, "cache"))
	toml := "[temporal]\naddress = \"127.0.0.1:1\"\n\n[tools.far]\nqueue = \"gpu\"\n"
	if err := os.WriteFile(filepath.Join(ws, "lathe.toml"), []byte(toml), 0o644); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) (int, string, string) {
		var out, errb bytes.Buffer
		code := Run(t.Context(), append([]string{"--workspace", ws}, args...), Streams{In: strings.NewReader(""), Out: &out, Err: &errb})
		return code, out.String(), errb.String()
	}
	if code, _, errs := run("trust", "--yes"); code != 0 {
		t.Fatalf("trust: exit %d: %s", code, errs)
	}
	code, out, errs := run("list")
	if !strings.Contains(errs, "no runtime for task queues") || !strings.Contains(out, "read_file") || strings.Contains(out, "far ") {
		t.Errorf("list: exit %d\nstdout: %s\nstderr: %s", code, out, errs)
	}
	if code, _, errs := run("worker", "--queue", "other"); code == 0 || !strings.Contains(errs, "no runtime for task queues") {
		t.Errorf("worker: exit %d, stderr: %s", code, errs)
	}
}
