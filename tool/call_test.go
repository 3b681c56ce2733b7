package tool_test

import (
	"testing"

	"github.com/lathe-tools/lathe/tool"
)

// TestTextOfAQuestion: a caller that reads the text of every outcome gets
// "" for a question, not a nil dereference.
func TestTextOfAQuestion(t *testing.T) {
	out := &tool.Outcome{Question: &tool.Question{ID: "confirm", Text: "Go on?", Kind: tool.QuestionBoolean}}
	if got := out.Result.Text(); got != "" {
		t.Errorf("Text of a question's result = %q, want \"\"", got)
	}
	if err := out.Err(); err != nil {
		t.Errorf("Err of a question = %v, want nil", err)
	}
	r := &tool.Result{Content: []tool.Content{{Type: tool.ContentText, Text: "a"}, {Type: tool.ContentImage}, {Type: tool.ContentText, Text: "b"}}}
	if got := r.Text(); got != "a\nb" {
		t.Errorf("Text = %q, want %q", got, "a\nb")
	}
}
