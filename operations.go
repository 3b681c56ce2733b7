package lathe

import (
	"context"
	"time"
)

// Operation is one thing a confined tool asked lathe's host to do for it in
// the course of a call (package host): read a file, fetch a URL, run a
// command. The engine keeps a call's operations with the call, so that the
// audit log records them as part of it and subscribers see each as an
// [EventOperation].
type Operation struct {
	// Kind is the operation: "read", "write", "list", "stat", "remove",
	// "fetch", "run", "env", "log", "progress" or "ask".
	Kind string
	// Subject is what it was done to: a path relative to the workspace, a
	// URL, a command line, a variable's name. Never a variable's value.
	Subject string
	// Approval is what the tool's permissions and the policy said:
	// "allow", "ask" (then Answer says who answered) or "deny".
	Approval string
	// By names what decided ("permissions", "rule", "person" …) and Reason
	// says why, in words a person can read.
	By, Reason string
	// Error is why the operation failed, empty when it succeeded.
	Error string
	// Bytes counts the bytes read, written or fetched.
	Bytes int64
	// Started is when it was asked for, Duration how long it took.
	Started  time.Time
	Duration time.Duration
}

// RecordOperation records op as an operation of the call running in ctx.
// Outside a call it does nothing.
//
// (Contract stub: the engine's recording is built on the branch that owns
// this file.)
func RecordOperation(ctx context.Context, op Operation) {}
