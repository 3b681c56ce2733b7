package lathe

import "context"

// TraceContext is a W3C trace context (https://www.w3.org/TR/trace-context/)
// in its textual form: the traceparent and tracestate values an MCP peer
// sends in a request's params._meta. The engine itself traces nothing; it
// carries these strings between the faces that receive and send requests
// (lathe's MCP server, the MCP runtime) and a program that traces calls
// (package telemetry), so that neither face depends on a tracing library.
type TraceContext struct {
	// Parent is the traceparent: "00-<32 hex trace id>-<16 hex span id>-<2 hex flags>".
	Parent string
	// State is the tracestate: vendor entries, "key=value" separated by
	// commas; empty when there is none.
	State string
}

// Limits of a trace context lathe accepts from a peer: the sizes the W3C
// recommendation allows, so that a peer cannot make lathe carry (and
// forward) more than a trace context.
const (
	maxTraceState        = 512
	maxTraceStateEntries = 32
)

// Valid reports whether tc is a well-formed trace context of version 00
// with a trace id and span id that are not all zeros, and a tracestate of
// at most 512 printable characters without a line break, or none. A peer's
// trace context that is not valid is dropped whole, never carried on.
func (tc TraceContext) Valid() bool {
	p := tc.Parent
	if len(p) != 55 || p[2] != '-' || p[35] != '-' || p[52] != '-' || p[:2] != "00" {
		return false
	}
	trace, span, flags := p[3:35], p[36:52], p[53:55]
	if !lowerHex(trace) || !lowerHex(span) || !lowerHex(flags) || allZero(trace) || allZero(span) {
		return false
	}
	return validTraceState(tc.State)
}

// validTraceState checks the tracestate's size and characters; what the
// entries mean is the tracing library's business.
func validTraceState(s string) bool {
	if len(s) > maxTraceState {
		return false
	}
	entries := 1
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c > 0x7e {
			return false
		}
		if c == ',' {
			entries++
		}
	}
	return entries <= maxTraceStateEntries
}

func lowerHex(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

func allZero(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] != '0' {
			return false
		}
	}
	return true
}

// Inbound describes the request a call came in with, when a face that
// serves a protocol made the call on a peer's behalf.
type Inbound struct {
	// Method is the protocol's method, such as "tools/call" for MCP.
	Method string
	// Trace is the trace context the peer sent with the request; the zero
	// value when it sent none, or one that was not [TraceContext.Valid].
	Trace TraceContext
}

type inboundKey struct{}

// WithInbound returns a context whose calls came in with the request in:
// how lathe's MCP server tells a program that traces calls which trace a
// client's call belongs to. A trace context that is not valid is dropped.
func WithInbound(ctx context.Context, in Inbound) context.Context {
	if !in.Trace.Valid() {
		in.Trace = TraceContext{}
	}
	return context.WithValue(ctx, inboundKey{}, in)
}

// InboundFrom returns the request the call of ctx came in with
// ([WithInbound]); false when it came from no peer's request.
func InboundFrom(ctx context.Context) (Inbound, bool) {
	in, ok := ctx.Value(inboundKey{}).(Inbound)
	return in, ok
}

// Outbound is called by a runtime as it sends a request to a peer on a
// call's behalf (the MCP runtime's tools/call to an upstream server), with
// the request's method and the peer's name. It returns the trace context to
// send with the request, and a function the runtime calls once with the
// request's error (nil when the peer answered) when the request is over. A
// program that traces calls (package telemetry) sets one for a call's run,
// so that the request is a span of the call's trace and the peer's own
// spans are its children.
type Outbound func(ctx context.Context, method, peer string) (TraceContext, func(err error))

type outboundKey struct{}

// WithOutbound returns a context whose runtimes report their requests to
// peers to f.
func WithOutbound(ctx context.Context, f Outbound) context.Context {
	return context.WithValue(ctx, outboundKey{}, f)
}

// OutboundTrace is what a runtime calls as it sends a request to a peer: it
// returns the trace context to send with the request and the function to
// call with the request's error when it is over. Where ctx has an
// [Outbound], that decides; else a trace context the call came in with
// ([WithInbound]) is passed on as it is, so that a peer's spans join the
// trace of the client even when lathe traces nothing itself; else there is
// none (the zero value).
func OutboundTrace(ctx context.Context, method, peer string) (TraceContext, func(err error)) {
	if f, ok := ctx.Value(outboundKey{}).(Outbound); ok && f != nil {
		tc, end := f(ctx, method, peer)
		if !tc.Valid() {
			tc = TraceContext{}
		}
		if end == nil {
			end = func(error) {}
		}
		return tc, end
	}
	if in, ok := InboundFrom(ctx); ok {
		return in.Trace, func(error) {}
	}
	return TraceContext{}, func(error) {}
}
