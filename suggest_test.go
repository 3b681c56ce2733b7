package lathe_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/lathe-tools/lathe"
	"github.com/lathe-tools/lathe/runtime/builtin"
	"github.com/lathe-tools/lathe/tool"
)

func named(name string) tool.Tool {
	return builtin.Must(builtin.Func(tool.Definition{Name: name}, func(context.Context, struct{}) (string, error) {
		return name, nil
	}))
}

// An unknown tool's error names the registered tools closest to it, so
// that a model repairs a misspelt or unprefixed name at once.
func TestUnknownToolSuggests(t *testing.T) {
	e := newEngine(t, lathe.Options{}, named("read_file"), named("read_dir"), named("write_file"),
		named("files__grep"), named("Deploy"), named("list_dir"))
	for _, c := range []struct {
		call string
		want string // "" for no suggestion
	}{
		{"raed_file", "did you mean read_file?"},
		{"read_fil", "did you mean read_file, read_dir?"},
		{"READ_FILE", "did you mean read_file?"},
		{"grep", "did you mean files__grep?"},
		{"other__list_dir", "did you mean list_dir?"},
		{"deploy", "did you mean Deploy?"},
		{"fetch_url", ""},
		{"x", ""},
		{strings.Repeat("read_file", 100), ""},
	} {
		out := e.Call(t.Context(), &tool.Call{Name: c.call, Arguments: json.RawMessage(`{}`)})
		if out.Result == nil || out.Result.ErrorKind != tool.KindUnknownTool {
			t.Fatalf("%s: outcome %+v, want unknown_tool", c.call, out)
		}
		text := out.Result.Text()
		if c.want == "" {
			if strings.Contains(text, "did you mean") {
				t.Errorf("%s: %q suggests a tool, want none", c.call, text)
			}
			continue
		}
		if !strings.Contains(text, c.want) {
			t.Errorf("%s: %q, want it to contain %q", c.call, text, c.want)
		}
	}

	// A batch says the same.
	outs := e.CallBatch(t.Context(), []*tool.Call{{Name: "raed_file"}}, nil)
	if r := outs[0].Result; r == nil || !strings.Contains(r.Text(), "did you mean read_file?") {
		t.Errorf("batch: %+v, want a suggestion of read_file", outs[0])
	}
}

// BenchmarkUnknownTool measures the error path of an unknown name among
// many registered tools, against a known call's resolve as the baseline.
func BenchmarkUnknownTool(b *testing.B) {
	tools := make([]tool.Tool, 0, 500)
	for i := range 500 {
		tools = append(tools, named(fmt.Sprintf("server%d__tool_%d", i%7, i)))
	}
	e := lathe.New(lathe.Options{})
	defer e.Close()
	if err := e.Register(tools...); err != nil {
		b.Fatal(err)
	}
	for _, bc := range []struct{ name, call string }{{"known", "server0__tool_0"}, {"unknown", "server0__tool_O"}} {
		c := &tool.Call{Name: bc.call, Arguments: json.RawMessage(`{}`)}
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				e.Call(b.Context(), c)
			}
		})
	}
}
