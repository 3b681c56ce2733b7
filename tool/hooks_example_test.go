package tool_test

import (
	"context"
	"fmt"

	"github.com/lathe-tools/lathe/tool"
)

// A face that talks to a client hands a call its log hook with the level
// the client asked for; a layer further in that adds only progress
// reporting keeps both, and a runtime reads the level to ask its
// machinery for no less (an MCP server, in the _meta of its requests).
func ExampleHooks_logLevel() {
	ctx := tool.WithHooks(context.Background(), tool.Hooks{
		Log:      func(m tool.LogMessage) { fmt.Println(m.Level, string(m.Data)) },
		LogLevel: "warning",
	})
	ctx = tool.WithHooks(ctx, tool.Hooks{Progress: func(tool.Progress) {}})

	h := tool.HooksFrom(ctx)
	fmt.Println("asks for", h.LogLevel)
	h.Log(tool.LogMessage{Level: "warning", Data: []byte(`"disk almost full"`)})
	// Output:
	// asks for warning
	// warning "disk almost full"
}
