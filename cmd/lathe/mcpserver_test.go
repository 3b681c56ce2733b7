package main

import (
	"context"
	"os"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// mcpServer is an upstream MCP server over stdio, for mcp_env.txtar: its
// tools show what a server can reach, its environment and any file.
func mcpServer() {
	srv := sdk.NewServer(&sdk.Implementation{Name: "lathe-test-mcp", Version: "1"}, nil)
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
		os.Exit(1)
	}
}
