package tool

import "context"

// Runtime executes calls of the tools it backs. It is deliberately small, in
// the manner of database/sql/driver: further abilities are optional
// interfaces, found by type assertion ([Closer], [Cooperative],
// [ArgumentFormatter]).
//
// Execute receives arguments that the engine has already decoded, coerced,
// completed with defaults and validated against def.InputSchema. A returned
// Go error means the machinery failed (a process would not start, a
// connection was lost); a tool that ran and failed returns a [Result] with
// IsError set. A tool that needs input returns an Outcome with a [Question].
type Runtime interface {
	Execute(ctx context.Context, def *Definition, call *Call) (*Outcome, error)
}

// RuntimeFunc adapts a function to [Runtime].
type RuntimeFunc func(ctx context.Context, def *Definition, call *Call) (*Outcome, error)

// Execute calls f.
func (f RuntimeFunc) Execute(ctx context.Context, def *Definition, call *Call) (*Outcome, error) {
	return f(ctx, def, call)
}

// Closer is implemented by runtimes that hold resources (processes,
// connections) to release when the engine closes.
type Closer interface {
	Close() error
}

// Cooperative is implemented by runtimes whose Execute returns promptly once
// its context ends, whatever the tool does: a process runtime that stops its
// process group, an MCP client that sends notifications/cancelled. The
// engine runs a cooperative runtime on the caller's goroutine, as net/http
// and gRPC run handlers, and any other runtime on a goroutine of its own, so
// that a runtime the engine knows nothing about, or a Go function stuck in a
// system call, cannot hold its caller past the deadline.
type Cooperative interface {
	// Cooperative reports whether Execute returns promptly when its context ends.
	Cooperative() bool
}

// ArgumentFormatter is implemented by runtimes that can render a call's
// arguments for a person: a short line such as the command a tool would
// run, shown where a person approves the call or reads a log, instead of
// the arguments' JSON. The process runtime implements it, for tools that
// answer the protocol's format_arguments action and for commands with
// placeholders.
//
// A caller finds it by type assertion, as database/sql finds a driver's
// Pinger, and falls back to the JSON when the runtime lacks it, returns an
// error or returns "". FormatArguments is called before the call runs, with
// arguments the engine has already validated; it must have none of the
// call's effects, and should return within ctx's deadline, which callers
// keep short.
type ArgumentFormatter interface {
	FormatArguments(ctx context.Context, def *Definition, call *Call) (string, error)
}
