package bench

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/lathe-tools/lathe"
	"github.com/lathe-tools/lathe/host"
	"github.com/lathe-tools/lathe/runtime/process"
	"github.com/lathe-tools/lathe/runtime/vfs"
	"github.com/lathe-tools/lathe/sandbox"
	"github.com/lathe-tools/lathe/tool"
)

// BenchmarkVFS calls a tool that reads a 4 KiB file of the workspace: as a
// VFS tool, confined and reading through the host API (fs/read over its
// stdio), against the same binary as a process tool reading the file
// itself, under dev (the floor the issue names) and under standard (the
// same sandbox, with the workspace). All go through the engine, in
// alternating rounds of the same run; engine/floor is vfs/process.
func BenchmarkVFS(b *testing.B) {
	if runtime.GOOS != "linux" {
		b.Skip("VFS tools run under the standard sandbox, on Linux")
	}
	bin := filepath.Join(b.TempDir(), "readfile")
	if out, err := exec.Command("go", "build", "-o", bin, "./testdata/readfile").CombinedOutput(); err != nil {
		b.Skipf("cannot build the tool: %v\n%s", err, out)
	}
	ws, err := filepath.EvalSymlinks(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, "data.bin"), make([]byte, 4096), 0o644); err != nil {
		b.Fatal(err)
	}
	def := tool.Definition{Name: "read_size", Source: "local",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}`)}
	cmd := process.Command{Argv: []string{bin}, Dir: ws}

	h, err := host.New(host.Config{Tool: "read_size", Workspace: ws, Perms: host.Permissions{Read: []string{"data.bin"}}})
	if err != nil {
		b.Fatal(err)
	}
	vrt, err := vfs.New(cmd, h, vfs.Options{})
	if err != nil {
		b.Fatal(err)
	}
	engine := func(rt tool.Runtime, name string) *lathe.Engine {
		e := lathe.New(lathe.Options{})
		b.Cleanup(func() { e.Close() })
		d := def
		d.Runtime = name
		if err := e.Register(tool.Tool{Definition: d, Runtime: rt}); err != nil {
			b.Fatal(err)
		}
		return e
	}
	call := func(e *lathe.Engine, path string) func() {
		args, _ := json.Marshal(map[string]string{"path": path})
		return func() {
			out := e.Call(context.Background(), &tool.Call{Name: "read_size", Arguments: args})
			if out.Result == nil || out.Result.IsError || string(out.Result.Structured) != `{"size":4096}` {
				b.Fatalf("call failed: %+v %v", out.Result, out.Err())
			}
		}
	}
	vfsOp := call(engine(vrt, vfs.RuntimeName), "data.bin")
	for _, p := range []sandbox.Profile{sandbox.Dev, sandbox.Standard} {
		b.Run("vfs/process-"+string(p), func(b *testing.B) {
			// The address space of a VFS tool's (vfs.DefaultMemory): a Go
			// binary under the sandbox's default 1 GiB fails now and then.
			sc := sandbox.Config{Profile: p, Workspace: ws, Limits: sandbox.Limits{Memory: vfs.DefaultMemory}}
			prt, err := process.New(cmd, process.Options{Sandbox: func(c *exec.Cmd) (func(), error) {
				s := sc
				s.Perms.Read = []string{filepath.Dir(bin)}
				return s.Wrap(c)
			}})
			if err != nil {
				b.Fatal(err)
			}
			compare(b, 1, call(engine(prt, process.RuntimeName), filepath.Join(ws, "data.bin")), vfsOp)
		})
	}
}
