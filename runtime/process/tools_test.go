package process_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lathe-tools/lathe"
	"github.com/lathe-tools/lathe/runtime/process"
	"github.com/lathe-tools/lathe/runtime/process/protocol"
	"github.com/lathe-tools/lathe/tool"
)

// toolsetScript describes three tools, two of them unusable (a bad name, a
// schema that does not compile), and runs the good one: it says which tool
// the request named, so that a test sees the call reach the binary.
const toolsetScript = `#!/bin/sh
req=$(cat)
case "$req" in
*'"action":"schema"'*)
  echo '{"tools":[
    {"name":"greet","summary":"Greet.","parameters":{"type":"object","properties":{"who":{"type":"string"}}}},
    {"name":"bad name!","parameters":{"type":"object"}},
    {"name":"broken","parameters":{"type":5}}]}' ;;
*'"tool":"greet"'*) echo "greet ran" ;;
*) echo "unexpected request: $req" >&2; exit 3 ;;
esac
`

func TestToolsetTools(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "tools.sh"), []byte(toolsetScript), 0o755); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ts := process.Toolset{Command: process.Command{Argv: []string{"sh", "tools.sh"}, Dir: dir}, Prefix: "my_"}
	tools, leftOut, err := ts.Tools(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(tools) != 1 || tools[0].Definition.Name != "my_greet" {
		t.Fatalf("tools = %+v, want my_greet alone", tools)
	}
	d := tools[0].Definition
	if d.Summary != "Greet." || d.Source != "local" || d.Runtime != process.RuntimeName || !strings.Contains(string(d.InputSchema), `"who"`) {
		t.Errorf("definition = %+v", d)
	}
	if len(leftOut) != 2 {
		t.Fatalf("left out = %v, want the bad name and the broken schema", leftOut)
	}
	for i, want := range []string{"my_bad name!", "my_broken"} {
		var lo *process.LeftOutError
		if !errors.As(leftOut[i], &lo) || lo.Name != want {
			t.Errorf("left out %d = %v, want a LeftOutError for %q", i, leftOut[i], want)
		}
	}
	if !strings.Contains(leftOut[1].Error(), "input schema is refused") {
		t.Errorf("left out %q does not say why", leftOut[1])
	}

	// The tool runs the binary with its own name, not the prefixed one.
	e := lathe.New(lathe.Options{})
	defer e.Close()
	if err := e.Register(tools...); err != nil {
		t.Fatal(err)
	}
	out := e.Call(ctx, &tool.Call{Name: "my_greet", Arguments: json.RawMessage(`{"who":"x"}`)})
	if out.Result == nil || out.Result.IsError || strings.TrimSpace(out.Result.Text()) != "greet ran" {
		t.Fatalf("call = %+v", out.Result)
	}
}

func TestToolsetNotDescribing(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ts := process.Toolset{Command: process.Command{Argv: []string{"sh", "-c", "echo plain words"}, Dir: t.TempDir()}}
	tools, _, err := ts.Tools(ctx)
	if !errors.Is(err, process.ErrNoSchema) || tools != nil {
		t.Fatalf("Tools = %v, %v; want ErrNoSchema", tools, err)
	}
}

func TestNewTool(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	def := tool.Definition{Name: "count", InputSchema: json.RawMessage(
		`{"type":"object","properties":{"word":{"type":"string"}},"required":["word"]}`)}
	tl, err := process.NewTool(def, process.Command{Argv: []string{"echo", "word:", "{word}"}, Dir: t.TempDir()}, process.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if tl.Definition.Runtime != process.RuntimeName || tl.Definition.Source != "local" {
		t.Errorf("definition = %+v, want the process runtime and the local source filled in", tl.Definition)
	}
	e := lathe.New(lathe.Options{})
	defer e.Close()
	if err := e.Register(tl); err != nil {
		t.Fatal(err)
	}
	out := e.Call(ctx, &tool.Call{Name: "count", Arguments: json.RawMessage(`{"word":"a b; rm -rf ~"}`)})
	if out.Result == nil || strings.TrimSpace(out.Result.Text()) != "word: a b; rm -rf ~" {
		t.Fatalf("call = %+v", out.Result)
	}
	if _, err := process.NewTool(def, process.Command{}, process.Options{}); err == nil {
		t.Error("NewTool with an empty command succeeded")
	}
}

func TestDefinitionChecks(t *testing.T) {
	good := protocol.ToolSchema{Name: "x", Parameters: json.RawMessage(`{"type":"object"}`)}
	if _, err := process.Definition(good, "x"); err != nil {
		t.Fatal(err)
	}
	for name, s := range map[string]protocol.ToolSchema{
		"bad/name": good,
		"out":      {Name: "out", Parameters: json.RawMessage(`{"type":"object"}`), OutputSchema: json.RawMessage(`{"type":"nope"}`)},
		"in":       {Name: "in", Parameters: json.RawMessage(`[]`)},
	} {
		if _, err := process.Definition(s, name); err == nil {
			t.Errorf("Definition(%s) accepted %+v", name, s)
		}
	}
}

// A plain program becomes a tool with a definition one writes: each
// placeholder of the command is one argument, never seen by a shell.
func ExampleNewTool() {
	def := tool.Definition{
		Name:        "say",
		Summary:     "Print a message.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"msg":{"type":"string"}},"required":["msg"]}`),
	}
	t, err := process.NewTool(def, process.Command{Argv: []string{"echo", "{msg}"}, Dir: os.TempDir()}, process.Options{})
	if err != nil {
		panic(err)
	}
	e := lathe.New(lathe.Options{})
	defer e.Close()
	if err := e.Register(t); err != nil {
		panic(err)
	}
	out := e.Call(context.Background(), &tool.Call{Name: "say", Arguments: json.RawMessage(`{"msg":"hello; rm -rf ~"}`)})
	fmt.Print(out.Result.Text())
	// Output: hello; rm -rf ~
}
