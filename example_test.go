package lathe_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/lathe-tools/lathe"
	"github.com/lathe-tools/lathe/runtime/builtin"
	"github.com/lathe-tools/lathe/tool"
)

func Example() {
	e := lathe.New(lathe.Options{})
	defer e.Close()

	type greetIn struct {
		Name  string `json:"name" jsonschema:"description=who to greet"`
		Times int    `json:"times,omitempty" jsonschema:"default=1,minimum=1,maximum=3"`
	}
	greet := builtin.Must(builtin.Func(tool.Definition{Name: "greet", Summary: "Greet someone."},
		func(_ context.Context, in greetIn) (string, error) {
			return strings.TrimSpace(strings.Repeat("hello, "+in.Name+"! ", in.Times)), nil
		}))
	if err := e.Register(greet); err != nil {
		panic(err)
	}

	ctx := context.Background()
	// "2" is coerced to the integer the schema declares.
	out := e.Call(ctx, &tool.Call{Name: "greet", Arguments: json.RawMessage(`{"name":"ada","times":"2"}`)})
	fmt.Println(out.Result.Text())

	// Every violation comes back, each with its JSON pointer.
	out = e.Call(ctx, &tool.Call{Name: "greet", Arguments: json.RawMessage(`{"times":9}`)})
	fmt.Println(out.Result.ErrorKind)
	fmt.Println(out.Result.Text())
	// Output:
	// hello, ada! hello, ada!
	// invalid_arguments
	// greet: invalid arguments: 2 problems: (root): missing required property "name"; /times: must be <= 3 but found 9
}

func ExampleEngine_Call_question() {
	e := lathe.New(lathe.Options{})
	defer e.Close()
	del := builtin.Must(builtin.Func(tool.Definition{Name: "delete_branch"},
		func(ctx context.Context, in struct {
			Branch string `json:"branch"`
		}) (string, error) {
			a, err := builtin.Ask(ctx, tool.Question{ID: "sure", Text: "Delete " + in.Branch + "?", Kind: tool.QuestionBoolean})
			if err != nil {
				return "", err // the runtime turns this into a question
			}
			if !builtin.AnswerBool(a) {
				return "kept " + in.Branch, nil
			}
			return "deleted " + in.Branch, nil
		}))
	e.Register(del)

	c := &tool.Call{Name: "delete_branch", Arguments: json.RawMessage(`{"branch":"old"}`)}
	out := e.Call(context.Background(), c)
	fmt.Println(out.Question.ID, out.Question.Text)

	// Call again with the answer; the tool runs again from the start.
	c.Answers = map[string]any{"sure": true}
	out = e.Call(context.Background(), c)
	fmt.Println(out.Result.Text())
	// Output:
	// sure Delete old?
	// deleted old
}

// A face follows the engine through its events: the registry's changes, and
// each call from its start to its end, with the progress it reports.
func ExampleEngine_Subscribe() {
	e := lathe.New(lathe.Options{})
	defer e.Close()

	done := make(chan struct{})
	cancel := e.Subscribe(func(ev lathe.Event) {
		// The subscriber runs on a goroutine of its own; the engine never
		// waits for it.
		fmt.Println(ev)
		if ev.Kind == lathe.EventCallFinished {
			close(done)
		}
	})
	defer cancel()

	count := builtin.Must(builtin.Func(tool.Definition{Name: "count", Summary: "Count to n."},
		func(ctx context.Context, in struct{ N int }) (int, error) {
			for i := 1; i <= in.N; i++ {
				tool.ReportProgress(ctx, tool.Progress{Progress: float64(i), Total: float64(in.N)})
			}
			return in.N, nil
		}))
	if err := e.Register(count); err != nil {
		panic(err)
	}
	ctx := lathe.WithSession(context.Background(), "session-1")
	e.Call(ctx, &tool.Call{ID: "a", Name: "count", Arguments: json.RawMessage(`{"N":2}`)})
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		fmt.Println("no call_finished event within 10s")
	}
	// Output:
	// tools_changed added=[count] removed=[]
	// call_started call=1 tool=count
	// progress call=1 tool=count progress=1/2
	// progress call=1 tool=count progress=2/2
	// call_finished call=1 tool=count outcome=ok
}
