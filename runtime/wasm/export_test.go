package wasm

import (
	"context"

	"github.com/lathe-tools/lathe/tool"
)

// WithChecker returns the tool t whose file operations are checked by c
// instead of its host session, to test what the preopens refuse whatever
// the permissions say.
func WithChecker(t tool.Tool, c func(ctx context.Context, kind, path string) error) tool.Tool {
	m := *t.Runtime.(*Module)
	m.check = c
	t.Runtime = &m
	return t
}
