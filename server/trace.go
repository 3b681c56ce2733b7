package server

import (
	"context"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/lathe-tools/lathe"
)

// withTrace returns ctx with the tools/call request req came in with
// (lathe.WithInbound): its method, and the W3C trace context the client sent
// in params._meta (traceparent, tracestate), so that a program that traces
// calls makes the call's span the child of the client's. A trace context
// that is not a well-formed one of version 00 within the W3C's sizes is
// dropped whole: a client cannot make lathe carry anything else, in its
// spans or on to upstream servers.
func withTrace(ctx context.Context, req *sdk.CallToolRequest) context.Context {
	in := lathe.Inbound{Method: "tools/call"}
	if req.Params != nil {
		meta := req.Params.GetMeta()
		parent, _ := meta["traceparent"].(string)
		state, _ := meta["tracestate"].(string)
		in.Trace = lathe.TraceContext{Parent: parent, State: state}
	}
	return lathe.WithInbound(ctx, in)
}
