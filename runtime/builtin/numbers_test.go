package builtin_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lathe-tools/lathe"
	"github.com/lathe-tools/lathe/runtime/builtin"
	"github.com/lathe-tools/lathe/tool"
	"github.com/lathe-tools/lathe/tools"
)

// TestWholeNumberArguments: JSON Schema counts 1.0, 1e2 and -0.0 as
// integers, so validation passes them; the typed decode must then accept
// them too, not fail with encoding/json's message about Go struct fields. A
// number with a fraction is refused by validation, with its JSON pointer.
func TestWholeNumberArguments(t *testing.T) {
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "f.txt"), []byte("one\ntwo\nthree\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	std, err := tools.Standard(root, tools.Options{})
	if err != nil {
		t.Fatal(err)
	}
	e := lathe.New(lathe.Options{})
	defer e.Close()
	if err := e.Register(std...); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	call := func(args string) *tool.Result {
		out := e.Call(ctx, &tool.Call{Name: "read_file", Arguments: json.RawMessage(args)})
		if out.Result == nil {
			t.Fatalf("read_file %s: no result", args)
		}
		return out.Result
	}
	for _, args := range []string{`{"path":"f.txt","limit":1.0}`, `{"path":"f.txt","limit":1e0}`, `{"path":"f.txt","limit":1.0,"offset":2.000}`} {
		r := call(args)
		if r.IsError {
			t.Fatalf("read_file %s failed: %s", args, r.Text())
		}
		if got := r.Text(); !strings.Contains(got, "one") && !strings.Contains(got, "two") || strings.Contains(got, "three") {
			t.Fatalf("read_file %s = %q, want one line", args, got)
		}
	}
	r := call(`{"path":"f.txt","limit":1.5}`)
	if !r.IsError || r.ErrorKind != tool.KindInvalidArguments || !strings.Contains(r.Text(), "/limit") {
		t.Fatalf("limit 1.5 should be invalid arguments naming /limit, got %v %q", r.ErrorKind, r.Text())
	}
	if strings.Contains(r.Text(), "Go struct") {
		t.Fatalf("the message leaks encoding/json's wording: %q", r.Text())
	}
}

// TestNumberOutOfRange: a whole number too large for the Go field passes
// validation when the schema sets no maximum; the decode names the argument
// and the type instead of encoding/json's message.
func TestNumberOutOfRange(t *testing.T) {
	type in struct {
		N int8 `json:"n"`
	}
	tl, err := builtinTool(func(_ context.Context, in in) (string, error) { return "ran", nil })
	if err != nil {
		t.Fatal(err)
	}
	e := lathe.New(lathe.Options{})
	defer e.Close()
	if err := e.Register(tl); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out := e.Call(ctx, &tool.Call{Name: "small", Arguments: json.RawMessage(`{"n":1e3}`)})
	if out.Result == nil || !out.Result.IsError || !strings.Contains(out.Result.Text(), "/n: number 1000 does not fit the Go type int8") {
		t.Fatalf("got %+v", out.Result)
	}
}

func builtinTool[In any](fn func(context.Context, In) (string, error)) (tool.Tool, error) {
	return builtin.Func(tool.Definition{Name: "small", Summary: "Take a small number."}, fn)
}
