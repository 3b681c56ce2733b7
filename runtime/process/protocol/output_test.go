package protocol

import (
	"errors"
	"strings"
	"testing"

	"github.com/lathe-tools/lathe/tool"
)

// TestOutputOutcome: the four ways a run's output is read, the same for
// every runtime that speaks the protocol.
func TestOutputOutcome(t *testing.T) {
	base := Output{Tool: "t", Runtime: "wasm", Exit: "exit status 3", Stderr: []byte("it broke\n")}

	o := base
	o.Stdout = []byte(`{"type":"success","content":"fine"}`)
	out, err := o.Outcome()
	if err != nil || out.Result == nil || out.Result.Content[0].Text != "fine" {
		t.Errorf("an answer after a failing exit: %+v, %v; want the answer", out, err)
	}

	o = base
	o.Stdout = []byte(`{"type":"success","content":7}`)
	_, err = o.Outcome()
	var te *tool.Error
	if !errors.As(err, &te) || te.Kind != tool.KindRuntimeFailure || te.Stage != "decode" ||
		!strings.Contains(te.Message, "breaks protocol v1") || !strings.Contains(te.Message, "it broke") {
		t.Errorf("a broken answer: %v; want a decode runtime_failure with the end of stderr", err)
	}

	o = base
	o.Stdout, o.OK = []byte("plain words\xff"), true
	out, err = o.Outcome()
	if err != nil || out.Result.Content[0].Text != "plain words\uFFFD" {
		t.Errorf("plain output of a tool that ended well: %+v, %v; want it as valid UTF-8 text", out, err)
	}

	o = base
	o.Stdout = []byte("plain words")
	_, err = o.Outcome()
	if !errors.As(err, &te) || te.Stage != "execute" || te.Runtime != "wasm" ||
		!strings.Contains(te.Message, "exit status 3") || !strings.Contains(te.Message, "it broke") {
		t.Errorf("plain output of a failed tool: %v; want an execute runtime_failure naming the exit", err)
	}
}
