package mcptest

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Surface returns an upstream MCP server named name that offers what MCP
// has besides tools, for the tests of lathe's proxy of it:
//
//   - resources "surface://NAME/readme" (text "readme of NAME") and
//     "surface://shared" (text "shared from NAME"), which every such server
//     lists, so that two of them collide;
//   - the template "surface://NAME/items/{id}" (text "item ID of NAME");
//   - subscriptions, and a tool "touch" that reports the resource at "uri"
//     updated; a tool "add" that adds the resource "surface://NAME/added"
//     and the prompt "added" (text "added to NAME");
//   - a prompt "greet" with an argument "who" (text "hello WHO from NAME"),
//     and completion of "who" with the values "NAME-ann" and "NAME-bob";
//   - logging: a tool "chatter" that sends "n" log messages at info level
//     (data "NAME i", i from 0) and then returns "sent N"; a tool "later"
//     that returns at once and sends one message ("NAME later"), outside
//     any call, 100 ms after.
func Surface(name string) *sdk.Server {
	var srv *sdk.Server
	srv = sdk.NewServer(&sdk.Implementation{Name: name, Version: "1"}, &sdk.ServerOptions{
		SubscribeHandler:   func(context.Context, *sdk.SubscribeRequest) error { return nil },
		UnsubscribeHandler: func(context.Context, *sdk.UnsubscribeRequest) error { return nil },
		CompletionHandler: func(_ context.Context, req *sdk.CompleteRequest) (*sdk.CompleteResult, error) {
			var vals []string
			for _, v := range []string{name + "-ann", name + "-bob"} {
				if strings.HasPrefix(v, req.Params.Argument.Value) {
					vals = append(vals, v)
				}
			}
			return &sdk.CompleteResult{Completion: sdk.CompletionResultDetails{Values: vals, Total: len(vals)}}, nil
		},
		Capabilities: &sdk.ServerCapabilities{Logging: &sdk.LoggingCapabilities{}},
	})
	text := func(uri, s string) *sdk.ReadResourceResult {
		return &sdk.ReadResourceResult{Contents: []*sdk.ResourceContents{{URI: uri, MIMEType: "text/plain", Text: s}}}
	}
	fixed := func(s string) sdk.ResourceHandler {
		return func(_ context.Context, req *sdk.ReadResourceRequest) (*sdk.ReadResourceResult, error) {
			return text(req.Params.URI, s), nil
		}
	}
	srv.AddResource(&sdk.Resource{URI: "surface://" + name + "/readme", Name: "readme", MIMEType: "text/plain"},
		fixed("readme of "+name))
	srv.AddResource(&sdk.Resource{URI: "surface://shared", Name: "shared", MIMEType: "text/plain"},
		fixed("shared from "+name))
	prefix := "surface://" + name + "/items/"
	srv.AddResourceTemplate(&sdk.ResourceTemplate{URITemplate: prefix + "{id}", Name: "item", MIMEType: "text/plain"},
		func(_ context.Context, req *sdk.ReadResourceRequest) (*sdk.ReadResourceResult, error) {
			id := strings.TrimPrefix(req.Params.URI, prefix)
			return text(req.Params.URI, "item "+id+" of "+name), nil
		})
	srv.AddPrompt(&sdk.Prompt{Name: "greet", Description: "Greets someone.",
		Arguments: []*sdk.PromptArgument{{Name: "who", Required: true}}},
		func(_ context.Context, req *sdk.GetPromptRequest) (*sdk.GetPromptResult, error) {
			return &sdk.GetPromptResult{Messages: []*sdk.PromptMessage{{Role: "user",
				Content: &sdk.TextContent{Text: "hello " + req.Params.Arguments["who"] + " from " + name}}}}, nil
		})
	sdk.AddTool(srv, &sdk.Tool{Name: "touch", Description: "Reports a resource updated."},
		func(ctx context.Context, _ *sdk.CallToolRequest, in struct {
			URI string `json:"uri"`
		}) (*sdk.CallToolResult, any, error) {
			srv.ResourceUpdated(ctx, &sdk.ResourceUpdatedNotificationParams{URI: in.URI})
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "touched"}}}, nil, nil
		})
	sdk.AddTool(srv, &sdk.Tool{Name: "add", Description: "Adds a resource."},
		func(context.Context, *sdk.CallToolRequest, struct{}) (*sdk.CallToolResult, any, error) {
			srv.AddResource(&sdk.Resource{URI: "surface://" + name + "/added", Name: "added"}, fixed("added to "+name))
			srv.AddPrompt(&sdk.Prompt{Name: "added"}, func(context.Context, *sdk.GetPromptRequest) (*sdk.GetPromptResult, error) {
				return &sdk.GetPromptResult{Messages: []*sdk.PromptMessage{{Role: "user",
					Content: &sdk.TextContent{Text: "added to " + name}}}}, nil
			})
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "added"}}}, nil, nil
		})
	sdk.AddTool(srv, &sdk.Tool{Name: "chatter", Description: "Sends n log messages."},
		func(ctx context.Context, req *sdk.CallToolRequest, in struct {
			N int `json:"n"`
		}) (*sdk.CallToolResult, any, error) {
			for i := range in.N {
				req.Session.Log(ctx, &sdk.LoggingMessageParams{Level: "info", Logger: "chatter", Data: fmt.Sprintf("%s %d", name, i)})
			}
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: fmt.Sprintf("sent %d", in.N)}}}, nil, nil
		})
	sdk.AddTool(srv, &sdk.Tool{Name: "later", Description: "Logs once, after returning."},
		func(_ context.Context, req *sdk.CallToolRequest, _ struct{}) (*sdk.CallToolResult, any, error) {
			ss := req.Session
			go func() {
				// Long enough after the answer that lathe, however loaded
				// the machine, has finished the call: a message that came
				// while the call was still in flight would be the call's.
				time.Sleep(500 * time.Millisecond)
				ss.Log(context.Background(), &sdk.LoggingMessageParams{Level: "warning", Data: name + " later"})
			}()
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "soon"}}}, nil, nil
		})
	return srv
}

// ServeSurface runs [Surface](name) over stdio until its client goes,
// with one more tool, "exit", that ends the process at once, as a crash
// would. A test binary calls it from TestMain under its own environment
// switch. A failure to serve is printed to stderr and exits 1.
func ServeSurface(name string) {
	srv := Surface(name)
	sdk.AddTool(srv, &sdk.Tool{Name: "exit", Description: "Ends the server's process."},
		func(context.Context, *sdk.CallToolRequest, struct{}) (*sdk.CallToolResult, any, error) {
			os.Exit(3)
			return nil, nil, nil
		})
	if err := srv.Run(context.Background(), &sdk.StdioTransport{}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
