package codemode

import (
	"context"
	"encoding/json"

	"github.com/lathe-tools/lathe"
	"github.com/lathe-tools/lathe/tool"
)

// GoScript is a script written in Go, for the tests of what run_code does
// around its engine: it gets the functions a script would get.
type GoScript func(ctx context.Context, tools map[string]Func, console func(level, line string)) (json.RawMessage, error)

// NewGo returns run_code whose scripts are ignored and f run instead.
func NewGo(e *lathe.Engine, opts Options, f GoScript) tool.Tool {
	t := New(e, opts)
	// A description of its own, so that the loader's Watch, which keeps
	// only the run_code it registered current, leaves this one alone.
	t.Definition.Description += "\n(The script is Go, for a test.)"
	t.Runtime.(*runtime).eval = func(ctx context.Context, s *script) (json.RawMessage, error) {
		return f(ctx, s.Bindings["tools"], s.Console)
	}
	return t
}
