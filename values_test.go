package lathe_test

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/lathe-tools/lathe"
	"github.com/lathe-tools/lathe/runtime/builtin"
	"github.com/lathe-tools/lathe/tool"
)

// cloneResult is a deep copy of r, to compare a shared value with what it
// was before the engine saw it.
func cloneResult(r *tool.Result) *tool.Result {
	c := *r
	if r.Content != nil {
		c.Content = append([]tool.Content{}, r.Content...)
	}
	if r.Structured != nil {
		c.Structured = append(json.RawMessage{}, r.Structured...)
	}
	return &c
}

// A builtin that hands back one shared result on every call must find it
// as it was: the output cap cuts a copy, so the second call is cut the same
// way as the first, and the shared value keeps its whole text.
func TestSharedResultSurvivesTheOutputCap(t *testing.T) {
	shared := &tool.Result{Content: []tool.Content{{Type: tool.ContentText, Text: strings.Repeat("x", 200)}}}
	want := cloneResult(shared)
	long := builtin.Must(builtin.Func(tool.Definition{Name: "long"}, func(context.Context, struct{}) (*tool.Result, error) {
		return shared, nil
	}))
	e := newEngine(t, lathe.Options{MaxOutputBytes: 50}, long)
	first := call(t, e, "long", `{}`)
	second := call(t, e, "long", `{}`)
	for i, out := range []*tool.Outcome{first, second} {
		if err := out.Err(); err != nil {
			t.Fatalf("call %d: %v", i+1, err)
		}
		c := out.Result.Content
		if len(c) != 2 || c[0].Text != strings.Repeat("x", 50) || !strings.Contains(c[1].Text, "text cut at 50 of 200 bytes") {
			t.Errorf("call %d: content = %+v, want 50 bytes of text and a note that says 200 were cut", i+1, c)
		}
	}
	if !reflect.DeepEqual(shared, want) {
		t.Errorf("the shared result was changed by the engine: %+v, want %+v", shared, want)
	}
}

// The cap drops blocks that do not fit and keeps those after them; it must
// not do so in the runtime's own slice, whose first element it would
// overwrite, nor drop the runtime's structured output.
func TestSharedContentSliceSurvivesTheOutputCap(t *testing.T) {
	shared := &tool.Result{
		Content: []tool.Content{
			{Type: tool.ContentImage, Data: make([]byte, 100), MIMEType: "image/png"},
			{Type: tool.ContentText, Text: "ok"},
		},
		Structured: json.RawMessage(`{"x":"` + strings.Repeat("a", 100) + `"}`),
	}
	want := cloneResult(shared)
	rt := tool.RuntimeFunc(func(context.Context, *tool.Definition, *tool.Call) (*tool.Outcome, error) {
		return &tool.Outcome{Result: shared}, nil
	})
	e := newEngine(t, lathe.Options{MaxOutputBytes: 50}, tool.Tool{Definition: tool.Definition{Name: "img"}, Runtime: rt})
	for i := range 2 {
		out := call(t, e, "img", `{}`)
		if out.Result.Structured != nil || len(out.Result.Content) != 2 || out.Result.Content[0].Text != "ok" {
			t.Errorf("call %d: result = %+v, want the text block and a note", i+1, out.Result)
		}
	}
	if !reflect.DeepEqual(shared, want) {
		t.Errorf("the shared result was changed by the engine: %+v, want %+v", shared, want)
	}
}

// Normalisation completes an outcome (content from structured output, an
// error kind, a question's kind) in a copy: the runtime's values stay as
// they were, and calls that read them at the same time do not race (run
// with -race).
func TestNormalizeLeavesTheRuntimesValuesAlone(t *testing.T) {
	structured := &tool.Result{Structured: json.RawMessage(`{"n":1}`)}
	failed := &tool.Result{IsError: true, Content: []tool.Content{{Type: tool.ContentText, Text: "no"}}}
	empty := &tool.Result{}
	question := &tool.Question{ID: "q", Text: "which?"}
	wants := []any{cloneResult(structured), cloneResult(failed), cloneResult(empty), *question}
	outcomes := map[string]*tool.Outcome{
		"structured": {Result: structured}, "failed": {Result: failed}, "empty": {Result: empty}, "question": {Question: question},
	}
	var tools []tool.Tool
	for name, out := range outcomes {
		tools = append(tools, tool.Tool{Definition: tool.Definition{Name: name},
			Runtime: tool.RuntimeFunc(func(context.Context, *tool.Definition, *tool.Call) (*tool.Outcome, error) { return out, nil })})
	}
	e := newEngine(t, lathe.Options{}, tools...)
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			if out := call(t, e, "structured", `{}`); len(out.Result.Content) != 1 || out.Result.Content[0].Text != `{"n":1}` {
				t.Errorf("structured: content = %+v, want the structured output as text", out.Result.Content)
			}
			if out := call(t, e, "failed", `{}`); out.Result.ErrorKind != tool.KindToolError {
				t.Errorf("failed: error kind = %q, want %q", out.Result.ErrorKind, tool.KindToolError)
			}
			if out := call(t, e, "empty", `{}`); out.Result.Content == nil {
				t.Error("empty: content is nil, want an empty list")
			}
			if out := call(t, e, "question", `{}`); out.Question == nil || out.Question.Kind != tool.QuestionText {
				t.Errorf("question: %+v, want kind %q", out.Question, tool.QuestionText)
			}
		})
	}
	wg.Wait()
	got := []any{structured, failed, empty, *question}
	for i := range got {
		if g, ok := got[i].(*tool.Result); ok && !reflect.DeepEqual(g, wants[i]) {
			t.Errorf("result %d was changed by the engine: %+v, want %+v", i, g, wants[i])
		}
	}
	if !reflect.DeepEqual(*question, wants[3]) {
		t.Errorf("the question was changed by the engine: %+v, want %+v", *question, wants[3])
	}
}

// The arguments the caller sent stay its own: coercion and defaults work on
// the engine's decoded copy, and the runtime gets arguments encoded anew.
func TestCallersArgumentsAreLeftAlone(t *testing.T) {
	e := newEngine(t, lathe.Options{}, addTool())
	args := json.RawMessage(`{"a":"1","b":2}`) // a string-encoded number, and scale left to its default
	before := string(args)
	c := &tool.Call{Name: "add", Arguments: args, Answers: map[string]any{}}
	if out := e.Call(context.Background(), c); out.Err() != nil {
		t.Fatal(out.Err())
	}
	if string(c.Arguments) != before || string(args) != before || c.Name != "add" || len(c.Answers) != 0 {
		t.Errorf("the caller's call was changed: %+v (arguments %s), want arguments %s", c, c.Arguments, before)
	}
}
