package tool

import (
	"errors"
	"strings"
)

// ErrorKind classifies a failed call so that a model, a CLI and a log can
// each react to it without parsing messages.
type ErrorKind string

const (
	// KindUnknownTool: no tool has the called name.
	KindUnknownTool ErrorKind = "unknown_tool"
	// KindInvalidArguments: the arguments do not fit the input schema.
	KindInvalidArguments ErrorKind = "invalid_arguments"
	// KindDenied: policy or a person refused the call.
	KindDenied ErrorKind = "denied"
	// KindTimeout: the call ran past its deadline and was stopped.
	KindTimeout ErrorKind = "timeout"
	// KindCancelled: the caller cancelled the call.
	KindCancelled ErrorKind = "cancelled"
	// KindRuntimeFailure: the machinery failed (a panic, a process that would
	// not start, a lost connection), not the tool's own logic.
	KindRuntimeFailure ErrorKind = "runtime_failure"
	// KindToolError: the tool ran and reported a failure.
	KindToolError ErrorKind = "tool_error"
)

// Kinds returns every error kind, in a stable order. The result is a new
// slice at each call, so that no package a program imports can change the
// kinds another one sees.
func Kinds() []ErrorKind {
	return []ErrorKind{
		KindUnknownTool, KindInvalidArguments, KindDenied, KindTimeout,
		KindCancelled, KindRuntimeFailure, KindToolError,
	}
}

// Sentinels, one per kind. An [*Error] of a kind matches its sentinel with
// errors.Is.
var (
	ErrUnknownTool      = &sentinel{KindUnknownTool, "unknown tool"}
	ErrInvalidArguments = &sentinel{KindInvalidArguments, "invalid arguments"}
	ErrDenied           = &sentinel{KindDenied, "denied"}
	ErrTimeout          = &sentinel{KindTimeout, "timed out"}
	ErrCancelled        = &sentinel{KindCancelled, "cancelled"}
	ErrRuntimeFailure   = &sentinel{KindRuntimeFailure, "runtime failure"}
	ErrToolError        = &sentinel{KindToolError, "tool error"}
)

type sentinel struct {
	kind ErrorKind
	msg  string
}

func (s *sentinel) Error() string { return s.msg }

// Error is a failed call: its kind, where it failed, and why.
type Error struct {
	Kind ErrorKind
	// Tool and Runtime name the tool and its runtime, where known.
	Tool    string
	Runtime string
	// Stage names the pipeline stage that failed ("resolve", "validate", "execute" …).
	Stage string
	// Message is the text a model reads; when empty, Err's text is used.
	Message string
	// Err is the underlying cause, if any.
	Err error
}

func (e *Error) Error() string {
	var b strings.Builder
	if e.Tool != "" {
		b.WriteString(e.Tool)
		b.WriteString(": ")
	}
	switch {
	case e.Message != "" && e.Err != nil:
		b.WriteString(e.Message)
		b.WriteString(": ")
		b.WriteString(e.Err.Error())
	case e.Message != "":
		b.WriteString(e.Message)
	case e.Err != nil:
		b.WriteString(e.Err.Error())
	default:
		b.WriteString(string(e.Kind))
	}
	return b.String()
}

func (e *Error) Unwrap() error { return e.Err }

// Is matches the sentinel of e's kind.
func (e *Error) Is(target error) bool {
	s, ok := target.(*sentinel)
	return ok && s.kind == e.Kind
}

// KindOf returns the kind of the first [*Error] in err's chain, the kind of
// a sentinel, or [KindToolError] when err carries no kind.
func KindOf(err error) ErrorKind {
	var e *Error
	if errors.As(err, &e) {
		return e.Kind
	}
	var s *sentinel
	if errors.As(err, &s) {
		return s.kind
	}
	return KindToolError
}
