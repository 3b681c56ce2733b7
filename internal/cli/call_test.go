package cli

import (
	"errors"
	"strings"
	"testing"

	"github.com/lathe-tools/lathe/tool"
)

func TestAsker(t *testing.T) {
	cases := []struct {
		name   string
		q      tool.Question
		input  string
		want   any
		prompt string
	}{
		{"boolean yes", tool.Question{Text: "Go on?", Kind: tool.QuestionBoolean}, "y\n", true, "Go on? (yes/no): "},
		{"boolean retry", tool.Question{Text: "Go on?", Kind: tool.QuestionBoolean}, "maybe\nno\n", false, "Please answer (yes/no)"},
		{"default", tool.Question{Text: "Name?", Kind: tool.QuestionText, Default: "ada"}, "\n", "ada", "Name? (text) [ada]: "},
		{"select", tool.Question{Text: "Pick", Kind: tool.QuestionSelect, Options: []string{"red", "blue"}}, "green\nblue\n", "blue", "Pick (red/blue): "},
		{"text without newline at EOF", tool.Question{Text: "Say", Kind: tool.QuestionText}, "hi", "hi", "Say (text): "},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var out strings.Builder
			got, err := newAsker(strings.NewReader(c.input), &out)(&c.q)
			if err != nil {
				t.Fatal(err)
			}
			if got != c.want {
				t.Errorf("answer = %#v, want %#v", got, c.want)
			}
			if !strings.Contains(out.String(), c.prompt) {
				t.Errorf("prompt = %q, want it to contain %q", out.String(), c.prompt)
			}
		})
	}
}

func TestAskerEndOfInput(t *testing.T) {
	q := &tool.Question{ID: "sure", Text: "Go on?", Kind: tool.QuestionBoolean}
	_, err := newAsker(strings.NewReader(""), &strings.Builder{})(q)
	var ne *needsInputError
	if !errors.As(err, &ne) || exitCode(err) != ExitNeedsInput {
		t.Fatalf("err = %v, want a needs-input error", err)
	}
}

func TestExitCodes(t *testing.T) {
	for kind, want := range map[tool.ErrorKind]int{
		tool.KindToolError: ExitToolError, tool.KindUnknownTool: ExitUnknownTool,
		tool.KindInvalidArguments: ExitInvalidArgs, tool.KindDenied: ExitDenied, tool.KindTimeout: ExitTimeout,
		tool.KindCancelled: ExitCancelled, tool.KindRuntimeFailure: ExitRuntimeFailure,
	} {
		if got := exitCode(&tool.Error{Kind: kind}); got != want {
			t.Errorf("%s: exit %d, want %d", kind, got, want)
		}
	}
	if got := exitCode(errors.New("bug")); got != ExitInternalFailure {
		t.Errorf("plain error: exit %d", got)
	}
	if got := exitCode(&silentError{&usageError{errors.New("x")}}); got != ExitUsage {
		t.Errorf("wrapped usage error: exit %d", got)
	}
}
