// Package lathe is a tool-execution engine for LLM agents.
//
// An [Engine] holds a registry of tools from any source and runs every call
// through one pipeline: it finds the tool, decodes the arguments (repairing
// string-encoded JSON a model may have sent), fills in defaults, validates the
// arguments against the tool's precompiled schema, runs the tool with a
// deadline, cancellation, panic recovery and an output cap, and hands back a
// [tool.Outcome] a model can read: a result, or a question the tool needs
// answered before it can go on.
//
// A minimal engine with one typed Go tool:
//
//	e := lathe.New(lathe.Options{})
//	defer e.Close()
//	e.Register(builtin.Must(builtin.Func(tool.Definition{Name: "add"},
//		func(ctx context.Context, in struct{ A, B int }) (int, error) { return in.A + in.B, nil })))
//	out := e.Call(ctx, &tool.Call{Name: "add", Arguments: json.RawMessage(`{"A":1,"B":2}`)})
//
// Failures come back as error results carrying a [tool.ErrorKind]; a caller
// that wants a Go error asks the outcome for one with [tool.Outcome.Err].
//
// [Engine.CallBatch] runs the several calls a model sends in one turn:
// concurrently where they do not conflict (two writes of one file, a write and
// a read of it, a tool of unknown effects), in the model's order where they do.
//
// The pipeline is a chain of [Middleware] around one [Handler], in the manner
// of net/http; [Options.Middleware] inserts stages of one's own (policy,
// approval, audit) between validation and execution.
//
// Faces follow the engine through its events: [Engine.Subscribe] delivers an
// [Event] when the tools change, and for each call its start, the approvals
// the policy asks for, its progress and its end, with the caller's session
// ([WithSession]). A subscriber never holds up a call; nobody subscribed costs
// a call nothing.
//
// A confined tool asks lathe's host for its files, fetches and commands
// (package host); the host records each such [Operation] with the running
// call through [RecordOperation], and the call's [Invocation.Operations]
// are what the audit log writes with it and what [EventOperation] reports.
package lathe
