package mcp

import (
	"context"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/lathe-tools/lathe"
)

// The keys of params._meta that carry a W3C trace context between MCP
// peers, as HTTP carries it in headers of the same names.
const (
	metaTraceParent = "traceparent"
	metaTraceState  = "tracestate"
)

// traceCall puts the trace context of a call's request to the server into
// params._meta (lathe.OutboundTrace: the span a program that traces calls
// opened for the request, else the trace context the call came in with),
// and returns the function to call with the request's error when it is
// over. A call with no trace context sends none.
func traceCall(ctx context.Context, params *sdk.CallToolParams, server string) func(error) {
	tc, end := lathe.OutboundTrace(ctx, "tools/call", server)
	if tc.Parent == "" {
		return end
	}
	if params.Meta == nil {
		params.Meta = sdk.Meta{}
	}
	params.Meta[metaTraceParent] = tc.Parent
	if tc.State != "" {
		params.Meta[metaTraceState] = tc.State
	}
	return end
}
