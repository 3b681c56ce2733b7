package provider_test

import (
	"encoding/json"
	"fmt"
	"log"

	"github.com/lathe-tools/lathe/provider"
	"github.com/lathe-tools/lathe/tool"
)

// Example converts a definition for OpenAI's strict mode, reads a model's
// call of it, and answers the call.
func Example() {
	defs := []tool.Definition{{
		Name:        "read_file",
		Description: "Read a file.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"},"limit":{"type":"integer","minimum":1}},"required":["path"]}`),
	}}
	ts, err := provider.Convert(provider.OpenAI, defs, nil)
	if err != nil {
		log.Fatal(err)
	}
	tools, _ := json.Marshal(ts)
	fmt.Println(string(tools))

	// Strict mode made the model send null for the limit it left out.
	response := `{"choices":[{"message":{"role":"assistant","tool_calls":[{"id":"call_1","type":"function",
		"function":{"name":"read_file","arguments":"{\"path\":\"go.mod\",\"limit\":null}"}}]}}]}`
	calls, format, err := provider.ParseCalls([]byte(response))
	if err != nil {
		log.Fatal(err)
	}
	ts.Resolve(calls)
	fmt.Println(format, calls[0].Name, string(calls[0].Arguments))

	out := &tool.Outcome{Result: tool.TextResult("module example")}
	msgs, err := ts.Results([]provider.Reply{{Call: calls[0], Outcome: out}})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(string(msgs))
	// Output:
	// [{"type":"function","function":{"name":"read_file","description":"Read a file.","parameters":{"additionalProperties":false,"properties":{"limit":{"minimum":1,"type":["integer","null"]},"path":{"type":"string"}},"required":["limit","path"],"type":"object"},"strict":true}}]
	// openai read_file {"path":"go.mod"}
	// [{"content":"module example","role":"tool","tool_call_id":"call_1"}]
}
