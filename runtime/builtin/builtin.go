// Package builtin runs typed Go functions as tools.
//
// [Func] turns a function of shape
//
//	func(ctx context.Context, in In) (Out, error)
//
// into a [tool.Tool]. The input schema is inferred from In (json tags name the
// properties; `jsonschema:"description=…,enum=…,default=…,minimum=…"` tags add
// the rest), so the engine validates the arguments before the function sees
// them. Out comes back as structured JSON plus readable text; a string Out is
// text alone, and a *tool.Result Out is passed through as it is.
//
// A handler error becomes an error result the model can read, not a failure
// of the engine, and a panic becomes a runtime failure. The function must
// watch its context: the engine runs it on the caller's goroutine, so its
// deadline and cancellation reach it only through ctx. A function that needs input calls [Ask]: on the first run it
// returns a question to the caller, and when the caller calls again with the
// answer, [Ask] returns it.
package builtin

import (
	"context"
	"errors"
	"fmt"
	"reflect"

	"github.com/lathe-tools/lathe/schema/infer"
	"github.com/lathe-tools/lathe/tool"
)

// RuntimeName is the name of this runtime in definitions and errors.
const RuntimeName = "builtin"

// Runtime runs one typed Go function.
type Runtime[In, Out any] struct {
	fn func(context.Context, In) (Out, error)
}

var _ tool.Runtime = (*Runtime[struct{}, string])(nil)

// Func builds a tool from fn. Fields of def left empty are filled in: the
// input schema from In, the output schema from Out when Out is a struct,
// Source and Runtime as "builtin".
func Func[In, Out any](def tool.Definition, fn func(context.Context, In) (Out, error)) (tool.Tool, error) {
	if fn == nil {
		return tool.Tool{}, fmt.Errorf("builtin tool %q: nil function", def.Name)
	}
	if len(def.InputSchema) == 0 {
		s, err := infer.For[In]()
		if err != nil {
			return tool.Tool{}, fmt.Errorf("builtin tool %q: input schema: %w", def.Name, err)
		}
		def.InputSchema = s
	}
	if len(def.OutputSchema) == 0 {
		if t := reflect.TypeFor[Out](); tool.StructuredType(t) {
			s, err := infer.ForType(t)
			if err != nil {
				return tool.Tool{}, fmt.Errorf("builtin tool %q: output schema: %w", def.Name, err)
			}
			def.OutputSchema = s
		}
	}
	if def.Source == "" {
		def.Source = RuntimeName
	}
	def.Runtime = RuntimeName
	return tool.Tool{Definition: def, Runtime: &Runtime[In, Out]{fn: fn}}, nil
}

// Must returns t, and panics if err is not nil. It suits tools built once at
// start-up from code, where a bad schema is a programming error.
func Must(t tool.Tool, err error) tool.Tool {
	if err != nil {
		panic(err)
	}
	return t
}

// Cooperative reports false: a Go function should watch its context, but
// one stuck in a system call (the open of a FIFO, a read from a hung network
// file system) or that simply does not cannot be stopped from outside. The
// engine therefore runs it on a goroutine of its own and returns at the
// deadline or at the caller's cancellation whatever the function does; a
// function that never returns keeps only its own goroutine.
func (r *Runtime[In, Out]) Cooperative() bool { return false }

// Execute decodes the arguments into In, calls the function and renders Out.
func (r *Runtime[In, Out]) Execute(ctx context.Context, def *tool.Definition, call *tool.Call) (*tool.Outcome, error) {
	var in In
	if len(call.Arguments) > 0 {
		if err := infer.Unmarshal(call.Arguments, &in); err != nil {
			return nil, &tool.Error{Kind: tool.KindInvalidArguments, Tool: def.Name, Runtime: RuntimeName,
				Stage: "decode", Message: "arguments do not fit the function's input", Err: err}
		}
	}
	if len(call.Answers) > 0 {
		ctx = context.WithValue(ctx, answersKey{}, call.Answers)
	}
	out, err := r.fn(ctx, in)
	if err != nil {
		var q *needInput
		if errors.As(err, &q) {
			return &tool.Outcome{Question: &q.question}, nil
		}
		return &tool.Outcome{Result: tool.ErrorResult(err)}, nil
	}
	res, err := tool.ResultFor(out)
	if err != nil {
		return nil, &tool.Error{Kind: tool.KindRuntimeFailure, Tool: def.Name, Runtime: RuntimeName,
			Stage: "render", Message: "cannot encode the function's output", Err: err}
	}
	return &tool.Outcome{Result: res}, nil
}

type answersKey struct{}

// needInput is the error [Ask] returns when the call carries no answer yet.
type needInput struct{ question tool.Question }

func (e *needInput) Error() string { return "needs input: " + e.question.Text }

// Ask returns the answer to q if the call carries one. Otherwise it returns
// an error that the function must return as its own; the runtime turns it into
// a question for the caller, who calls again with the answer:
//
//	ok, err := builtin.Ask(ctx, tool.Question{ID: "confirm", Text: "Overwrite?", Kind: tool.QuestionBoolean})
//	if err != nil {
//		return Out{}, err
//	}
//
// Answers to boolean questions arrive as bool when the caller sent JSON
// true/false and as a string otherwise; [AnswerBool] reads both.
func Ask(ctx context.Context, q tool.Question) (any, error) {
	if answers, ok := ctx.Value(answersKey{}).(map[string]any); ok {
		if a, ok := answers[q.ID]; ok {
			// An answer the question does not offer (a select answer that
			// is not one of its options) reaches the caller as an invalid
			// argument it can correct, never the function.
			if err := q.CheckAnswer(a); err != nil {
				return nil, &tool.Error{Kind: tool.KindInvalidArguments, Stage: "answer", Message: err.Error()}
			}
			return a, nil
		}
	}
	if q.Kind == "" {
		q.Kind = tool.QuestionText
	}
	return nil, &needInput{question: q}
}

// AnswerBool reads a boolean answer: true, "true", "yes", "y" and "1" are
// yes; everything else is no.
func AnswerBool(a any) bool {
	switch v := a.(type) {
	case bool:
		return v
	case string:
		switch v {
		case "true", "yes", "y", "1", "True", "Yes", "Y", "TRUE", "YES":
			return true
		}
	}
	return false
}
