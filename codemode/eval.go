package codemode

import (
	"context"
	"encoding/json"

	"github.com/lathe-tools/lathe/runtime/js"
)

// evalJS runs a script in the embedded engine (package runtime/js): a
// fresh engine per script, its memory limit, the call's deadline, and no
// globals but the bindings and console.
func evalJS(ctx context.Context, s *script) (json.RawMessage, error) {
	b := make(map[string]map[string]js.Func, len(s.Bindings))
	for ns, fns := range s.Bindings {
		m := make(map[string]js.Func, len(fns))
		for name, f := range fns {
			m[name] = js.Func(f)
		}
		b[ns] = m
	}
	// The engine refuses a value past its limit outright; given room, it
	// hands back a larger one, which the result cuts with a note instead.
	return js.Eval(ctx, s.Code, js.EvalOptions{
		MemoryLimit:   s.MemoryLimit,
		Bindings:      b,
		Console:       s.Console,
		MaxOutput:     4 * s.MaxOutput,
		SourceMap:     s.SourceMap,
		MaxConcurrent: s.MaxConcurrent,
	})
}
