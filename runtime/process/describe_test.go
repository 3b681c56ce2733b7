package process_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lathe-tools/lathe/runtime/process"
)

const describingTool = `#!/bin/sh
echo asked >> asked.log
echo '{"tools":[{"name":"a","summary":"A.","parameters":{"type":"object"}},{"name":"b"}]}'
`

func TestCache(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(dir, "tool.sh")
	if err := os.WriteFile(script, []byte(describingTool), 0o755); err != nil {
		t.Fatal(err)
	}
	cacheDir := filepath.Join(t.TempDir(), "schemas")
	cmd := process.Command{Argv: []string{"sh", "tool.sh"}, Dir: dir}
	asked := func() int {
		b, _ := os.ReadFile(filepath.Join(dir, "asked.log"))
		return strings.Count(string(b), "asked")
	}
	describe := func(c *process.Cache) {
		t.Helper()
		tools, err := c.Describe(context.Background(), cmd, nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(tools) != 2 || tools[0].Name != "a" || tools[0].Summary != "A." || tools[1].Name != "b" {
			t.Fatalf("tools = %+v", tools)
		}
	}

	c := process.NewCache(cacheDir)
	describe(c)
	describe(c)
	if n := asked(); n != 1 {
		t.Errorf("one cache: the tool was asked %d times, want 1", n)
	}
	describe(process.NewCache(cacheDir))
	if n := asked(); n != 1 {
		t.Errorf("a second cache on the same directory: the tool was asked %d times, want 1", n)
	}
	// Another workspace, or other options, is another entry.
	process.NewCache(cacheDir).Describe(context.Background(), cmd, &process.Options{Options: map[string]any{"x": 1}})
	if n := asked(); n != 2 {
		t.Errorf("other options: the tool was asked %d times, want 2", n)
	}

	// Editing the script replaces the entry.
	if err := os.WriteFile(script, []byte(describingTool+"# edited\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	describe(process.NewCache(cacheDir))
	if n := asked(); n != 3 {
		t.Errorf("after an edit: the tool was asked %d times, want 3", n)
	}
	n, err := process.NewCache(cacheDir).Clear()
	if err != nil || n != 2 {
		t.Errorf("Clear = %d, %v; want 2 entries (one per command and options)", n, err)
	}
	describe(process.NewCache(cacheDir))
	if n := asked(); n != 4 {
		t.Errorf("after Clear: the tool was asked %d times, want 4", n)
	}
}

func TestDescribeErrors(t *testing.T) {
	dir := t.TempDir()
	for script, want := range map[string]string{
		"#!/bin/sh\necho 'usage: tool FILE'\n":            `it wrote "usage: tool FILE", not a JSON object`,
		"#!/bin/sh\necho '{\"type\":\"success\"}'\n":      `has no "tools" list`,
		"#!/bin/sh\necho 'bad flag' >&2\nexit 2\n":        "bad flag",
		"#!/bin/sh\necho '{\"tools\":[{\"name\":\"\"}]}'": "a tool without a name",
	} {
		path := filepath.Join(dir, "tool.sh")
		os.WriteFile(path, []byte(script), 0o755)
		_, err := process.Describe(context.Background(), process.Command{Argv: []string{path}, Dir: dir}, nil)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: err = %v, want it to say %q", script, err, want)
		}
	}
	_, err := process.Describe(context.Background(), process.Command{Argv: []string{"/bin/echo", "hi"}}, nil)
	if !errors.Is(err, process.ErrNoSchema) {
		t.Errorf("err = %v, want ErrNoSchema", err)
	}
	_, err = process.Describe(context.Background(), process.Command{Argv: []string{"echo", "{x}"}}, nil)
	if err == nil || !strings.Contains(err.Error(), "placeholders") {
		t.Errorf("err = %v", err)
	}
}

// TestDescribeSandbox checks that discovery runs under the Sandbox of the
// options, as a call does: the hook sees the command and may rewrite it,
// and a hook that fails stops the binary from running at all.
func TestDescribeSandbox(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(dir, "tool.sh")
	const tool = `#!/bin/sh
echo asked >> asked.log
echo '{"tools":[{"name":"a","summary":"'"$BOXED"'"}]}'
`
	if err := os.WriteFile(script, []byte(tool), 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := process.Command{Argv: []string{script}, Dir: dir}
	asked := func() int {
		b, _ := os.ReadFile(filepath.Join(dir, "asked.log"))
		return strings.Count(string(b), "asked")
	}
	var wrapped, cleaned int
	box := &process.Options{Sandbox: func(c *exec.Cmd) (func(), error) {
		wrapped++
		if c.Path != script {
			t.Errorf("the sandbox was given %s, want %s", c.Path, script)
		}
		c.Env = append(c.Env, "BOXED=yes")
		return func() { cleaned++ }, nil
	}}
	tools, err := process.Describe(context.Background(), cmd, box)
	if err != nil {
		t.Fatal(err)
	}
	if len(tools) != 1 || tools[0].Summary != "yes" {
		t.Errorf("tools = %+v, want the summary the sandboxed command saw", tools)
	}
	if wrapped != 1 || cleaned != 1 {
		t.Errorf("the sandbox wrapped %d commands and cleaned up %d, want 1 and 1", wrapped, cleaned)
	}

	errBox := errors.New("no sandbox here")
	failing := &process.Options{Sandbox: func(*exec.Cmd) (func(), error) { return nil, errBox }}
	cache := process.NewCache(t.TempDir())
	before := asked()
	for _, describe := range []func() error{
		func() error { _, err := process.Describe(context.Background(), cmd, failing); return err },
		func() error { _, err := cache.Describe(context.Background(), cmd, failing); return err },
	} {
		if err := describe(); !errors.Is(err, errBox) {
			t.Errorf("err = %v, want the sandbox's error", err)
		}
	}
	if n := asked() - before; n != 0 {
		t.Errorf("with a failing sandbox the tool ran %d times, want never", n)
	}

	// A failure is not cached; an answer is, and a cached answer runs
	// nothing, so it needs no sandbox.
	if tools, err := cache.Describe(context.Background(), cmd, box); err != nil || len(tools) != 1 {
		t.Fatalf("after a failure: %+v, %v", tools, err)
	}
	if tools, err := cache.Describe(context.Background(), cmd, failing); err != nil || tools[0].Summary != "yes" {
		t.Errorf("from the cache: %+v, %v", tools, err)
	}
	if wrapped != 2 {
		t.Errorf("the sandbox wrapped %d commands, want 2", wrapped)
	}
}
