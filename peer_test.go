package lathe_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/lathe-tools/lathe"
	"github.com/lathe-tools/lathe/runtime/builtin"
	"github.com/lathe-tools/lathe/tool"
)

const goodParent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

// TestTraceContextValid: a peer's trace context is carried only when it is
// a well-formed one within the W3C's sizes; anything else a hostile client
// puts there (a header line break, a megabyte of state, a forged version)
// is not.
func TestTraceContextValid(t *testing.T) {
	for _, c := range []struct {
		tc   lathe.TraceContext
		want bool
	}{
		{lathe.TraceContext{Parent: goodParent}, true},
		{lathe.TraceContext{Parent: goodParent, State: "congo=t61rcWkgMzE,rojo=00f067aa0ba902b7"}, true},
		{lathe.TraceContext{}, false},
		{lathe.TraceContext{Parent: strings.ToUpper(goodParent)}, false},
		{lathe.TraceContext{Parent: "01" + goodParent[2:]}, false},
		{lathe.TraceContext{Parent: goodParent + "-00"}, false},
		{lathe.TraceContext{Parent: "00-00000000000000000000000000000000-00f067aa0ba902b7-01"}, false},
		{lathe.TraceContext{Parent: "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01"}, false},
		{lathe.TraceContext{Parent: "00-4bf92f3577b34da6a3ce929d0e0e473g-00f067aa0ba902b7-01"}, false},
		{lathe.TraceContext{Parent: goodParent, State: "a=b\r\nx-injected: 1"}, false},
		{lathe.TraceContext{Parent: goodParent, State: strings.Repeat("a", 513)}, false},
		{lathe.TraceContext{Parent: goodParent, State: strings.Repeat("a=b,", 32) + "a=b"}, false},
	} {
		if got := c.tc.Valid(); got != c.want {
			t.Errorf("%+v: Valid() = %v, want %v", c.tc, got, c.want)
		}
	}
}

// TestOutboundTrace: a runtime's request carries the trace context the
// tracing program gives, else the one the call came in with, else none;
// an invalid one from either is dropped.
func TestOutboundTrace(t *testing.T) {
	ctx := context.Background()
	if tc, end := lathe.OutboundTrace(ctx, "tools/call", "up"); tc != (lathe.TraceContext{}) || end == nil {
		t.Fatalf("no trace context: got %+v", tc)
	}
	in := lathe.WithInbound(ctx, lathe.Inbound{Method: "tools/call", Trace: lathe.TraceContext{Parent: goodParent, State: "k=v"}})
	if tc, _ := lathe.OutboundTrace(in, "tools/call", "up"); tc.Parent != goodParent || tc.State != "k=v" {
		t.Fatalf("inbound trace context not passed on: %+v", tc)
	}
	bad := lathe.WithInbound(ctx, lathe.Inbound{Trace: lathe.TraceContext{Parent: "00-xyz"}})
	if got, ok := lathe.InboundFrom(bad); !ok || got.Trace != (lathe.TraceContext{}) {
		t.Fatalf("invalid inbound trace context kept: %+v", got)
	}

	other := "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	var ended error
	hooked := lathe.WithOutbound(in, func(_ context.Context, method, peer string) (lathe.TraceContext, func(error)) {
		if method != "tools/call" || peer != "up" {
			t.Errorf("hook got method %q peer %q", method, peer)
		}
		return lathe.TraceContext{Parent: other}, func(err error) { ended = err }
	})
	tc, end := lathe.OutboundTrace(hooked, "tools/call", "up")
	if tc.Parent != other {
		t.Fatalf("the hook's trace context not used: %+v", tc)
	}
	boom := errors.New("boom")
	end(boom)
	if ended != boom {
		t.Fatalf("end not passed to the hook: %v", ended)
	}
	forged := lathe.WithOutbound(ctx, func(context.Context, string, string) (lathe.TraceContext, func(error)) {
		return lathe.TraceContext{Parent: "garbage\r\n"}, nil
	})
	if tc, end := lathe.OutboundTrace(forged, "tools/call", "up"); tc.Parent != "" || end == nil {
		t.Fatalf("an invalid trace context of the hook was sent: %+v", tc)
	}
}

// TestObserveSeesStageEvents: an outer stage's observer sees the events
// the inner stages emit, at once and with nobody subscribed to the engine.
func TestObserveSeesStageEvents(t *testing.T) {
	var seen []lathe.Event
	var inStage bool
	e := lathe.New(lathe.Options{
		Outer: []lathe.Middleware{func(next lathe.Handler) lathe.Handler {
			return func(ctx context.Context, inv *lathe.Invocation) (*tool.Outcome, error) {
				inv.Observe(func(ev lathe.Event) {
					if !inStage {
						t.Error("observer called outside the emitting stage")
					}
					seen = append(seen, ev)
				})
				return next(ctx, inv)
			}
		}},
		Middleware: []lathe.Middleware{func(next lathe.Handler) lathe.Handler {
			return func(ctx context.Context, inv *lathe.Invocation) (*tool.Outcome, error) {
				inStage = true
				inv.Emit(lathe.Event{Kind: lathe.EventApprovalAsked, Approval: &lathe.Approval{Rule: "r"}})
				inv.Emit(lathe.Event{Kind: lathe.EventCallFinished, Outcome: "forged"}) // not a stage's to emit
				inv.Emit(lathe.Event{Kind: lathe.EventApprovalAnswered, Approval: &lathe.Approval{Answer: "once", By: "approver"}})
				inStage = false
				return next(ctx, inv)
			}
		}},
	})
	defer e.Close()
	if err := e.Register(builtin.Must(builtin.Func(tool.Definition{Name: "noop"},
		func(context.Context, struct{}) (string, error) { return "ok", nil }))); err != nil {
		t.Fatal(err)
	}
	e.Call(context.Background(), &tool.Call{ID: "c1", Name: "noop"})
	if len(seen) != 2 || seen[0].Kind != lathe.EventApprovalAsked || seen[1].Kind != lathe.EventApprovalAnswered {
		t.Fatalf("observed %v, want the approval asked and answered", seen)
	}
	if seen[0].CallID != "c1" || seen[0].Tool != "noop" || seen[0].Time.IsZero() {
		t.Fatalf("observed event not filled in: %+v", seen[0])
	}
}
