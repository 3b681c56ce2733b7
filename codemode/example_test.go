package codemode_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/lathe-tools/lathe"
	"github.com/lathe-tools/lathe/codemode"
	"github.com/lathe-tools/lathe/runtime/builtin"
	"github.com/lathe-tools/lathe/tool"
)

// A script calls an engine's tools as async functions and returns only
// what it found.
func ExampleNew() {
	e := lathe.New(lathe.Options{})
	defer e.Close()
	type wordsIn struct {
		Text string `json:"text"`
	}
	words := builtin.Must(builtin.Func(tool.Definition{Name: "count_words", Summary: "Count the words of a text."},
		func(_ context.Context, in wordsIn) (string, error) {
			return fmt.Sprint(len(strings.Fields(in.Text))), nil
		}))
	if err := e.Register(words); err != nil {
		panic(err)
	}
	if err := e.Register(codemode.New(e, codemode.Options{})); err != nil {
		panic(err)
	}
	args, _ := json.Marshal(map[string]string{"code": `
const texts = ["one two", "three four five", "six"];
let total = 0;
for (const text of texts) total += Number(await tools.count_words({text}));
console.log("counted", texts.length, "texts");
return {total};`})
	out := e.Call(context.Background(), &tool.Call{Name: codemode.Name, Arguments: args})
	fmt.Print(out.Result.Text())
	// Output:
	// {"total":6}
	// console:
	// counted 3 texts
}

func ExampleDeclaration() {
	def := tool.Definition{
		Name:        "search",
		Summary:     "Search the docs.",
		InputSchema: json.RawMessage(`{"type":"object","required":["query"],"properties":{"query":{"type":"string","description":"What to look for"},"limit":{"type":"integer"}}}`),
	}
	fmt.Print(codemode.Declaration(def))
	// Output:
	// /** Search the docs. */
	// search(args: {
	//   limit?: number;
	//   /** What to look for */
	//   query: string;
	// }): Promise<string>;
}
