package protocol

import (
	"github.com/lathe-tools/lathe/internal/tail"
	"github.com/lathe-tools/lathe/tool"
)

// Output is what one run of a tool left behind, as every runtime that runs
// a tool's own code on this protocol sees it: a process, a VFS process, a
// WASM module.
type Output struct {
	// Stdout is the tool's standard output, or its answer alone where the
	// runtime has told the answer from other lines.
	Stdout []byte
	// OK says the tool ended well: exit status 0.
	OK bool
	// Exit says how it ended, for a message: "exit status 1", "killed".
	Exit string
	// Stderr is the end of its standard error.
	Stderr []byte
	// Tool and Runtime name the tool and the runtime in a failure.
	Tool, Runtime string
}

// Outcome reads o as the protocol says (docs/protocol.md, "Output that is
// not an answer"): an answer counts whatever the exit status; an answer
// that breaks the rules is a runtime_failure saying what is wrong; without
// an answer, output of a tool that ended well is a text result, and
// anything else a runtime_failure with the end of standard error.
func (o Output) Outcome() (*tool.Outcome, error) {
	ans, ok, err := ParseAnswer(o.Stdout)
	if err == nil && ok {
		var out *tool.Outcome
		if out, err = ans.Outcome(); err == nil {
			return out, nil
		}
	}
	if err != nil {
		return nil, &tool.Error{Kind: tool.KindRuntimeFailure, Tool: o.Tool, Runtime: o.Runtime, Stage: "decode",
			Message: "the tool's answer breaks protocol v1: " + err.Error() + tail.StderrNote(o.Stderr)}
	}
	if o.OK {
		return &tool.Outcome{Result: tool.TextResult(tail.Text(o.Stdout))}, nil
	}
	return nil, &tool.Error{Kind: tool.KindRuntimeFailure, Tool: o.Tool, Runtime: o.Runtime, Stage: "execute",
		Message: "the tool ended (" + o.Exit + ") without an answer" + tail.StderrNote(o.Stderr)}
}
