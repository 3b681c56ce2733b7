package js_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/lathe-tools/lathe/runtime/js"
)

// Eval runs a script with Go functions bound into it, as code mode does:
// the script awaits them, and what it returns is the result.
func ExampleEval() {
	upper := func(ctx context.Context, arg json.RawMessage) (json.RawMessage, error) {
		var s string
		if err := json.Unmarshal(arg, &s); err != nil {
			return nil, err
		}
		return json.Marshal(strings.ToUpper(s))
	}
	res, err := js.Eval(context.Background(), `
		const words = ["lathe", "runs", "tools"];
		const loud = [];
		for (const w of words) loud.push(await tools.upper(w));
		console.log("done");
		return loud.join(" ");`, js.EvalOptions{
		MemoryLimit: 16 << 20,
		Bindings:    map[string]map[string]js.Func{"tools": {"upper": upper}},
		Console:     func(level, line string) { fmt.Println(level+":", line) },
	})
	fmt.Println(string(res), err)
	// Output:
	// log: done
	// "LATHE RUNS TOOLS" <nil>
}

// New runs a tool file's execute in a fresh engine per call; Describe reads
// its definition without calling execute.
func ExampleDescribe() {
	code := []byte(`var __lathe_tool = { default: {
		description: "Greets someone",
		inputSchema: { type: "object", properties: { name: { type: "string" } } },
		execute(args) { return "hello " + args.name; },
	} };`)
	def, err := js.Describe(context.Background(), code, js.Options{File: "greet.js"})
	fmt.Println(def.Description, string(def.InputSchema), err)
	// Output:
	// Greets someone {"type":"object","properties":{"name":{"type":"string"}}} <nil>
}
