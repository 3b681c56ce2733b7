package mcptest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/lathe-tools/lathe/runtimetest"
)

// ConformanceOptions say how the server of [Conformance] runs.
type ConformanceOptions struct {
	// PID, if set, is the id of the server's process, which the sleep tool
	// lists in its marker file so that the suite checks it is stopped; a
	// server running inside the test's own process leaves it zero.
	PID int
	// Crash ends the server, or the session of the call req, without an
	// answer to the call, after it has written message where a server's
	// client could see it. If it returns, the tool's answer is lost.
	Crash func(req *sdk.CallToolRequest, message string)
	// Stop, if not nil, ends every sleeping tool when it is closed, so that
	// a server in the test's own process can be closed even if a call's
	// cancellation never reached it.
	Stop <-chan struct{}
}

// Conformance returns an MCP server, written with the go-sdk, whose tools
// do what the runtime conformance suite asks of them ([runtimetest.Specs]),
// with the suite's schemas. The ask tool asks its question with an
// elicitation, as an MCP server does. The tools do not trust their
// arguments: the suite also calls them past the engine's validation.
func Conformance(opts ConformanceOptions) *sdk.Server {
	srv := sdk.NewServer(&sdk.Implementation{Name: "conformance", Version: "1"}, nil)
	handlers := map[string]sdk.ToolHandler{
		runtimetest.Echo: func(_ context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			var in runtimetest.TextIn
			if err := strictArgs(req, &in); err != nil {
				return toolError(err.Error()), nil
			}
			return &sdk.CallToolResult{Content: text(in.Text), StructuredContent: map[string]any{"text": in.Text}}, nil
		},
		runtimetest.Fail: func(_ context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			var in runtimetest.MessageIn
			if err := strictArgs(req, &in); err != nil {
				return toolError(err.Error()), nil
			}
			return toolError(in.Message), nil
		},
		runtimetest.Sleep: func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			var in runtimetest.MarkerIn
			if err := strictArgs(req, &in); err != nil {
				return toolError(err.Error()), nil
			}
			var lines string
			if opts.PID > 0 {
				lines = fmt.Sprintf("pid %d\n", opts.PID)
			}
			if err := appendFile(in.Marker, lines+"started\n"); err != nil {
				return toolError(err.Error()), nil
			}
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-opts.Stop:
				return nil, errors.New("the server is closing")
			}
		},
		runtimetest.Crash: func(_ context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			var in runtimetest.MessageIn
			if err := strictArgs(req, &in); err != nil {
				return toolError(err.Error()), nil
			}
			opts.Crash(req, in.Message)
			return toolError("the server did not crash"), nil
		},
		runtimetest.Huge: func(_ context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			var in runtimetest.SizeIn
			if err := strictArgs(req, &in); err != nil {
				return toolError(err.Error()), nil
			}
			if in.Size < 1 || in.Size > 64<<20 {
				return toolError(fmt.Sprintf("size %d is out of range", in.Size)), nil
			}
			return &sdk.CallToolResult{Content: text(strings.Repeat("x", in.Size))}, nil
		},
		runtimetest.Ask: func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			var in runtimetest.SubjectIn
			if err := strictArgs(req, &in); err != nil {
				return toolError(err.Error()), nil
			}
			// The question goes out as an input request (MCP's multi
			// round trip), which the SDK turns into an elicitation for a
			// client of an older version; the call comes back with the
			// answer.
			res, ok := req.Params.InputResponses["confirm"].(*sdk.ElicitResult)
			if !ok {
				return &sdk.CallToolResult{InputRequests: sdk.InputRequestMap{"confirm": &sdk.ElicitParams{
					Message:         "Go on with " + in.Subject + "?",
					RequestedSchema: json.RawMessage(`{"type":"object","properties":{"confirm":{"type":"boolean"}},"required":["confirm"]}`),
				}}}, nil
			}
			if yes, _ := res.Content["confirm"].(bool); res.Action == "accept" && yes {
				return &sdk.CallToolResult{Content: text("confirmed " + in.Subject)}, nil
			}
			return toolError("declined " + in.Subject), nil
		},
	}
	for _, spec := range runtimetest.Specs() {
		srv.AddTool(&sdk.Tool{Name: spec.Name, Description: spec.Does, InputSchema: spec.InputSchema}, handlers[spec.Name])
	}
	return srv
}

// ServeConformance runs the server of [Conformance] over stdio until its
// client goes, as the test binary re-run as a server: the sleep tool lists
// this process, and the crash tool writes its message to standard error
// and exits.
func ServeConformance() {
	srv := Conformance(ConformanceOptions{
		PID: os.Getpid(),
		Crash: func(_ *sdk.CallToolRequest, message string) {
			fmt.Fprintln(os.Stderr, message)
			os.Exit(3)
		},
	})
	if err := srv.Run(context.Background(), &sdk.StdioTransport{}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// strictArgs decodes a call's arguments into v, refusing properties v does
// not declare, as the suite's schemas do.
func strictArgs(req *sdk.CallToolRequest, v any) error {
	d := json.NewDecoder(strings.NewReader(string(req.Params.Arguments)))
	d.DisallowUnknownFields()
	if err := d.Decode(v); err != nil {
		return fmt.Errorf("bad arguments: %v", err)
	}
	return nil
}

func text(s string) []sdk.Content { return []sdk.Content{&sdk.TextContent{Text: s}} }

func toolError(msg string) *sdk.CallToolResult {
	return &sdk.CallToolResult{Content: text(msg), IsError: true}
}

func appendFile(name, s string) error {
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	_, err = f.WriteString(s)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
