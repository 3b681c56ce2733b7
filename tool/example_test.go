package tool_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/lathe-tools/lathe/tool"
)

// gitLog is a runtime that knows how to say, in one line, what a call of
// its tool would do.
type gitLog struct{}

func (gitLog) Execute(context.Context, *tool.Definition, *tool.Call) (*tool.Outcome, error) {
	return &tool.Outcome{Result: tool.TextResult("…")}, nil
}

func (gitLog) FormatArguments(_ context.Context, _ *tool.Definition, c *tool.Call) (string, error) {
	var args struct {
		N int `json:"n"`
	}
	if err := json.Unmarshal(c.Arguments, &args); err != nil {
		return "", err
	}
	return fmt.Sprintf("git log -n %d", args.N), nil
}

// forPerson renders a call's arguments for a person: the runtime's own
// rendering where it offers one, else the JSON.
func forPerson(ctx context.Context, t tool.Tool, c *tool.Call) string {
	if f, ok := t.Runtime.(tool.ArgumentFormatter); ok {
		if s, err := f.FormatArguments(ctx, &t.Definition, c); err == nil && s != "" {
			return s
		}
	}
	return string(c.Arguments)
}

// A runtime that can render arguments for a person says so by implementing
// ArgumentFormatter; whoever shows a call to a person (an approval prompt,
// a log) finds the ability with a type assertion.
func ExampleArgumentFormatter() {
	ctx := context.Background()
	c := &tool.Call{Name: "log", Arguments: json.RawMessage(`{"n":3}`)}

	formatted := tool.Tool{Definition: tool.Definition{Name: "log"}, Runtime: gitLog{}}
	plain := tool.Tool{Definition: tool.Definition{Name: "log"}, Runtime: tool.RuntimeFunc(gitLog{}.Execute)}
	fmt.Println(forPerson(ctx, formatted, c))
	fmt.Println(forPerson(ctx, plain, c))
	// Output:
	// git log -n 3
	// {"n":3}
}
