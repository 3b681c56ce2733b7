package server_test

import (
	"context"
	"fmt"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/lathe-tools/lathe"
	"github.com/lathe-tools/lathe/runtime/builtin"
	"github.com/lathe-tools/lathe/server"
	"github.com/lathe-tools/lathe/tool"
)

// An engine's tools served over MCP, here to a go-sdk client in memory; a
// program serves them with ServeStdio or Handler instead.
func Example() {
	e := lathe.New(lathe.Options{})
	defer e.Close()
	e.Register(builtin.Must(builtin.Func(tool.Definition{Name: "greet", Summary: "Say hello."},
		func(_ context.Context, in struct {
			Name string `json:"name"`
		}) (string, error) {
			return "hello, " + in.Name, nil
		})))
	srv := server.New(e, server.Options{})
	defer srv.Close()

	ctx := context.Background()
	ct, st := sdk.NewInMemoryTransports()
	ss, _ := srv.MCP().Connect(ctx, st, nil)
	cs, _ := sdk.NewClient(&sdk.Implementation{Name: "client"}, nil).Connect(ctx, ct, nil)
	defer func() {
		cs.Close()
		ss.Wait()
	}()

	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "greet", Arguments: map[string]any{"name": "Ada"}})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.Content[0].(*sdk.TextContent).Text)
	// Output: hello, Ada
}
