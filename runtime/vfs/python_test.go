package vfs_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lathe-tools/lathe/host"
	"github.com/lathe-tools/lathe/runtime/process"
	"github.com/lathe-tools/lathe/runtime/vfs"
	"github.com/lathe-tools/lathe/runtimetest"
	"github.com/lathe-tools/lathe/sandbox"
	"github.com/lathe-tools/lathe/tool"
)

// pythonCommand runs the project's Python example, a VFS tool written with
// the standard library only, from ws. It needs a python3 in the system
// paths: one elsewhere (a version manager's shim in the home directory)
// would not be inside the sandbox.
func pythonCommand(t *testing.T, ws string) process.Command {
	t.Helper()
	var py string
	for _, c := range []string{"python3", "/usr/bin/python3", "/usr/local/bin/python3"} {
		p, err := exec.LookPath(c)
		if err != nil {
			continue
		}
		if real, err := filepath.EvalSymlinks(p); err == nil && inSystem(real) {
			py = p
			break
		}
	}
	if py == "" {
		t.Skip("no python3 in the system paths (a VFS tool sees only those)")
	}
	script, err := filepath.Abs("../../examples/vfs-python/tool.py")
	if err != nil {
		t.Fatal(err)
	}
	return process.Command{Argv: []string{py, script}, Dir: ws}
}

func inSystem(p string) bool {
	for _, d := range sandbox.SystemPaths() {
		if real, err := filepath.EvalSymlinks(d); err == nil {
			d = real
		}
		if strings.HasPrefix(p, d+"/") {
			return true
		}
	}
	return false
}

// pythonTool builds the Python tool name, described by the script.
func pythonTool(t *testing.T, cmd process.Command, name string, perms host.Permissions) tool.Tool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	schemas, err := vfs.Describe(ctx, cmd, testOpts)
	if err != nil {
		t.Fatalf("describing the Python tool: %v", err)
	}
	h, err := host.New(host.Config{Tool: name, Workspace: cmd.Dir, Perms: perms})
	if err != nil {
		t.Fatal(err)
	}
	opts := testOpts
	opts.Tool = name
	rt, err := vfs.New(cmd, h, opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range schemas {
		if s.Name == name {
			return tool.Tool{Runtime: rt, Definition: tool.Definition{Name: name, Summary: s.Summary,
				InputSchema: s.Parameters, Source: "local", Runtime: vfs.RuntimeName}}
		}
	}
	rt.Close()
	t.Fatalf("the Python tool does not describe %q", name)
	return tool.Tool{}
}

// TestConformancePython runs the conformance suite against the Python
// example.
func TestConformancePython(t *testing.T) {
	requireStandard(t)
	ws := tempRoot(t)
	cmd := pythonCommand(t, ws)
	runtimetest.Run(t, func(t *testing.T, name string) tool.Tool {
		return pythonTool(t, cmd, name, host.Permissions{Write: []string{ws + "/**"}})
	})
}

// TestPythonHost: the Python example reads a file of the workspace through
// its host client, and is refused one its permissions leave out.
func TestPythonHost(t *testing.T) {
	requireStandard(t)
	ws, _ := workspace(t)
	os.WriteFile(filepath.Join(ws, "poem.txt"), []byte("one two\nthree\n"), 0o644)
	cmd := pythonCommand(t, ws)
	tl := pythonTool(t, cmd, "wordcount", host.Permissions{Read: []string{"poem.txt"}})
	defer tl.Runtime.(tool.Closer).Close()
	if m := structured(t, execute(t, tl.Runtime, "wordcount", map[string]any{"path": "poem.txt"})); m["lines"] != 2.0 || m["words"] != 3.0 {
		t.Errorf("wordcount poem.txt = %v, want 2 lines and 3 words", m)
	}
	out := execute(t, tl.Runtime, "wordcount", map[string]any{"path": "secret.txt"})
	if out.Result == nil || !out.Result.IsError || !strings.Contains(out.Result.Text(), "refused") {
		t.Errorf("wordcount secret.txt = %+v, want the host's refusal", out.Result)
	}
}
