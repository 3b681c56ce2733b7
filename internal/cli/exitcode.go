package cli

import (
	"errors"

	"github.com/lathe-tools/lathe/tool"
)

// Exit codes, one per way a command can end. docs/cli.md documents this
// table; it is the only place that maps errors to codes.
const (
	ExitOK              = 0
	ExitToolError       = 1  // the tool ran and reported a failure
	ExitUsage           = 2  // bad flags or command-line arguments
	ExitConfig          = 3  // a configuration file is invalid
	ExitUnknownTool     = 4  // no tool of that name
	ExitInvalidArgs     = 5  // the arguments do not fit the tool's schema
	ExitDenied          = 6  // policy or a person refused the call
	ExitTimeout         = 7  // the call ran past its deadline
	ExitCancelled       = 8  // the call was cancelled (Ctrl-C)
	ExitRuntimeFailure  = 9  // the machinery failed: a panic, a crash, a lost connection
	ExitNeedsInput      = 10 // the tool asked a question and nobody could answer it here
	ExitUntrusted       = 11 // the workspace configuration needs `lathe trust`, or the trust store or the grants are unusable
	ExitInternalFailure = 70 // anything else: a bug in lathe
)

// usageError marks errors in how a command was invoked.
type usageError struct{ err error }

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }

// configError marks errors in configuration files.
type configError struct{ err error }

func (e *configError) Error() string { return e.err.Error() }
func (e *configError) Unwrap() error { return e.err }

// needsInputError reports a question that could not be asked.
type needsInputError struct{ q *tool.Question }

func (e *needsInputError) Error() string { return "the tool needs input: " + e.q.Text }

// exitCode maps an error to the process's exit code.
func exitCode(err error) int {
	if err == nil {
		return ExitOK
	}
	var (
		ue *usageError
		ce *configError
		ne *needsInputError
		te *tool.Error
		ut *untrustedError
	)
	switch {
	case errors.As(err, &ue):
		return ExitUsage
	case errors.As(err, &ce):
		return ExitConfig
	case errors.As(err, &ne):
		return ExitNeedsInput
	case errors.As(err, &ut):
		return ExitUntrusted
	case errors.As(err, &te):
		return kindCode(te.Kind)
	}
	return ExitInternalFailure
}

func kindCode(k tool.ErrorKind) int {
	switch k {
	case tool.KindUnknownTool:
		return ExitUnknownTool
	case tool.KindInvalidArguments:
		return ExitInvalidArgs
	case tool.KindDenied:
		return ExitDenied
	case tool.KindTimeout:
		return ExitTimeout
	case tool.KindCancelled:
		return ExitCancelled
	case tool.KindRuntimeFailure:
		return ExitRuntimeFailure
	}
	return ExitToolError
}
