package builtin_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/lathe-tools/lathe/runtime/builtin"
	"github.com/lathe-tools/lathe/tool"
)

// TestAskRefusesAnswerNotOffered: an answer to a select question that is
// not one of its options never reaches the function; the caller gets an
// invalid_arguments result naming the options.
func TestAskRefusesAnswerNotOffered(t *testing.T) {
	reached := false
	tl := builtin.Must(builtin.Func(tool.Definition{Name: "pick"}, func(ctx context.Context, _ struct{}) (string, error) {
		a, err := builtin.Ask(ctx, tool.Question{ID: "env", Text: "Where?", Kind: tool.QuestionSelect,
			Options: []string{"staging", "prod"}})
		if err != nil {
			return "", err
		}
		reached = true
		return "to " + a.(string), nil
	}))
	run := func(answers map[string]any) *tool.Outcome {
		t.Helper()
		out, err := tl.Runtime.Execute(t.Context(), &tl.Definition, &tool.Call{Name: "pick", Arguments: json.RawMessage(`{}`), Answers: answers})
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	if out := run(map[string]any{"env": "moon"}); out.Result == nil || out.Result.ErrorKind != tool.KindInvalidArguments ||
		!strings.Contains(out.Result.Text(), `answer "moon" to question "env" is not one of its options: staging, prod`) {
		t.Fatalf("outcome = %+v, want invalid_arguments naming the options", out)
	}
	if reached {
		t.Fatal("the function went on with an answer it did not offer")
	}
	if out := run(map[string]any{"env": "prod"}); out.Result == nil || out.Result.IsError || out.Result.Text() != "to prod" {
		t.Fatalf("outcome = %+v, want to prod", out)
	}
}
