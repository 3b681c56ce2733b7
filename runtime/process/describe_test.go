package process_test

import (
	"context"
	"errors"
	"os"
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
	process.NewCache(cacheDir).Describe(context.Background(), cmd, map[string]any{"x": 1})
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
