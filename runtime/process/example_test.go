package process_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/lathe-tools/lathe"
	"github.com/lathe-tools/lathe/runtime/process"
	"github.com/lathe-tools/lathe/tool"
)

// A plain program becomes a tool through placeholders: each argument is one
// element of the command line, whatever it holds, and no shell reads it.
func ExampleNew() {
	rt, err := process.New(process.Command{Argv: []string{"echo", "{greeting},", "{name}"}}, process.Options{})
	if err != nil {
		panic(err)
	}
	e := lathe.New(lathe.Options{})
	defer e.Close()
	e.Register(tool.Tool{Runtime: rt, Definition: tool.Definition{
		Name:        "greet",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"greeting":{"type":"string","default":"hello"},"name":{"type":"string"}},"required":["name"]}`),
	}})

	out := e.Call(context.Background(), &tool.Call{Name: "greet", Arguments: json.RawMessage(`{"name":"Ada; rm -rf ~"}`)})
	fmt.Print(out.Result.Text())
	// Output:
	// hello, Ada; rm -rf ~
}
