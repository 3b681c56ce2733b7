package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/lathe-tools/lathe"
	"github.com/lathe-tools/lathe/runtime/process"
	"github.com/lathe-tools/lathe/runtime/process/protocol"
	"github.com/lathe-tools/lathe/tool"
)

// buildExample builds examples/multitool, a tool binary written with the Go
// SDK, into a temporary directory.
func buildExample(b *testing.B) string {
	b.Helper()
	if runtime.GOOS == "windows" {
		b.Skip("the process runtime needs a Unix system")
	}
	bin := filepath.Join(b.TempDir(), "multitool")
	cmd := exec.Command("go", "build", "-o", bin, "../examples/multitool")
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Skipf("cannot build the example tool: %v\n%s", err, out)
	}
	return bin
}

// minimalEnv is the environment the process runtime gives a tool, which the
// floors use too, so that they do the same work but lathe's.
func minimalEnv() []string {
	var env []string
	for _, n := range process.DefaultEnv() {
		if v, ok := os.LookupEnv(n); ok {
			env = append(env, n+"="+v)
		}
	}
	return env
}

// execFloor runs argv with stdin and returns its standard output: one
// fork/exec of the same binary with the same input and output, the least a
// process tool call can cost.
func execFloor(b *testing.B, dir string, argv []string, stdin []byte) func() {
	return func() {
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.Dir = dir
		cmd.Env = minimalEnv()
		if stdin != nil {
			cmd.Stdin = bytes.NewReader(stdin)
		}
		var out bytes.Buffer
		cmd.Stdout = &out
		if err := cmd.Run(); err != nil || out.Len() == 0 {
			b.Errorf("floor: %v, %q", err, out.String())
		}
	}
}

// BenchmarkProcess calls word_count of the SDK example binary through the
// engine, and runs the same binary with the same request on standard input
// (the floor), in alternating rounds of the same run; it reports both and
// engine/floor.
func BenchmarkProcess(b *testing.B) {
	bin := buildExample(b)
	dir := b.TempDir()
	args := json.RawMessage(`{"text":"the quick brown fox jumps over the lazy dog"}`)
	cmd := process.Command{Argv: []string{bin}, Dir: dir}
	schemas, err := process.Describe(context.Background(), cmd, nil)
	if err != nil {
		b.Fatal(err)
	}
	var def tool.Definition
	for _, s := range schemas {
		if s.Name == "word_count" {
			def = tool.Definition{Name: s.Name, InputSchema: s.Parameters, OutputSchema: s.OutputSchema,
				Source: "local", Runtime: process.RuntimeName}
		}
	}
	rt, err := process.New(cmd, process.Options{})
	if err != nil {
		b.Fatal(err)
	}
	e := lathe.New(lathe.Options{})
	b.Cleanup(func() { e.Close() })
	if err := e.Register(tool.Tool{Definition: def, Runtime: rt}); err != nil {
		b.Fatal(err)
	}
	// The floor's input is the very request the runtime sends.
	req, err := protocol.NewRequest(&protocol.Request{Action: protocol.ActionRun, Tool: "word_count", Arguments: args,
		Context: protocol.Context{Root: dir}})
	if err != nil {
		b.Fatal(err)
	}
	for _, callers := range []int{1, 2} {
		b.Run(map[int]string{1: "callers=1", 2: "callers=2"}[callers], func(b *testing.B) {
			compare(b, callers, execFloor(b, dir, []string{bin}, req), func() {
				out := e.Call(context.Background(), &tool.Call{Name: "word_count", Arguments: args})
				if out.Result == nil || out.Result.IsError || len(out.Result.Structured) == 0 {
					b.Errorf("engine call failed: %+v", out.Result)
				}
			})
		})
	}
}

// BenchmarkProcessCommand calls a plain program through a placeholder,
// ["/bin/echo", "{text}"], against running /bin/echo with the same argument:
// the cheapest program there is, so lathe's share shows most.
func BenchmarkProcessCommand(b *testing.B) {
	if runtime.GOOS == "windows" {
		b.Skip("the process runtime needs a Unix system")
	}
	echo, err := exec.LookPath("echo")
	if err != nil {
		b.Skip("no echo")
	}
	dir := b.TempDir()
	rt, err := process.New(process.Command{Argv: []string{echo, "{text}"}, Dir: dir}, process.Options{})
	if err != nil {
		b.Fatal(err)
	}
	e := lathe.New(lathe.Options{})
	b.Cleanup(func() { e.Close() })
	def := tool.Definition{Name: "echo", Source: "local", Runtime: process.RuntimeName,
		InputSchema: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}},"required":["text"],"additionalProperties":false}`)}
	if err := e.Register(tool.Tool{Definition: def, Runtime: rt}); err != nil {
		b.Fatal(err)
	}
	args := json.RawMessage(`{"text":"hello, world"}`)
	cpuCompare(b, execFloor(b, dir, []string{echo, "hello, world"}, nil), func() {
		out := e.Call(context.Background(), &tool.Call{Name: "echo", Arguments: args})
		if out.Result == nil || out.Result.IsError || out.Result.Text() != "hello, world\n" {
			b.Errorf("engine call failed: %+v", out.Result)
		}
	})
}
