package lathe_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/lathe-tools/lathe"
	"github.com/lathe-tools/lathe/runtime/builtin"
	"github.com/lathe-tools/lathe/tool"
)

// TestOuterSeesEveryCall: Options.Outer runs before resolve, so it sees
// calls that never reach Options.Middleware, in the order given.
func TestOuterSeesEveryCall(t *testing.T) {
	var seen []string
	outer := func(tag string) lathe.Middleware {
		return func(next lathe.Handler) lathe.Handler {
			return func(ctx context.Context, inv *lathe.Invocation) (*tool.Outcome, error) {
				if inv.Tool != nil {
					t.Error("the tool is resolved before Outer runs")
				}
				out, err := next(ctx, inv)
				seen = append(seen, tag+":"+inv.Call.Name+":"+string(tool.KindOf(err)))
				return out, err
			}
		}
	}
	inner := 0
	e := lathe.New(lathe.Options{
		Outer: []lathe.Middleware{outer("a"), outer("b")},
		Middleware: []lathe.Middleware{func(next lathe.Handler) lathe.Handler {
			return func(ctx context.Context, inv *lathe.Invocation) (*tool.Outcome, error) {
				inner++
				return next(ctx, inv)
			}
		}},
	})
	defer e.Close()
	e.Register(builtin.Must(builtin.Func(tool.Definition{Name: "echo"},
		func(_ context.Context, in struct{ S string }) (string, error) { return in.S, nil })))
	e.Call(context.Background(), &tool.Call{Name: "nosuch"})
	e.Call(context.Background(), &tool.Call{Name: "echo", Arguments: json.RawMessage(`{"S":1}`)})
	want := []string{"b:nosuch:unknown_tool", "a:nosuch:unknown_tool", "b:echo:invalid_arguments", "a:echo:invalid_arguments"}
	if len(seen) != len(want) || inner != 0 {
		t.Fatalf("seen %q, inner %d; want %q, 0", seen, inner, want)
	}
	for i := range want {
		if seen[i] != want[i] {
			t.Fatalf("seen %q, want %q", seen, want)
		}
	}
}
