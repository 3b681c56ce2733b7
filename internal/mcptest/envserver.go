package mcptest

import (
	"context"
	"fmt"
	"os"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// ServeEnv runs, over stdio until its client goes, an upstream MCP server
// named name whose tools show what a server can reach: "environ" returns
// its environment, one variable a line, and "cat" the text of the file at
// "path". A test binary calls it from TestMain under its own environment
// switch, so that re-running the binary gives a server without a prebuilt
// fixture. A failure to serve is printed to stderr and exits 1.
func ServeEnv(name string) {
	srv := sdk.NewServer(&sdk.Implementation{Name: name, Version: "1"}, nil)
	sdk.AddTool(srv, &sdk.Tool{Name: "environ", Description: "Its environment, one variable a line."},
		func(context.Context, *sdk.CallToolRequest, struct{}) (*sdk.CallToolResult, any, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: strings.Join(os.Environ(), "\n")}}}, nil, nil
		})
	sdk.AddTool(srv, &sdk.Tool{Name: "cat", Description: "The text of a file."},
		func(_ context.Context, _ *sdk.CallToolRequest, in struct {
			Path string `json:"path"`
		}) (*sdk.CallToolResult, any, error) {
			b, err := os.ReadFile(in.Path)
			if err != nil {
				return nil, nil, err
			}
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: string(b)}}}, nil, nil
		})
	if err := srv.Run(context.Background(), &sdk.StdioTransport{}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
