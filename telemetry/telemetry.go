// Package telemetry traces and measures an engine's calls with
// OpenTelemetry: a span per call, after the GenAI and MCP semantic
// conventions, with child spans for the policy's decision, the wait for an
// approval, the tool's run and the requests it makes of upstream MCP
// servers; and metrics of the calls' durations and outcomes.
//
// [New] makes a [Telemetry] from OpenTelemetry providers; its
// [Telemetry.Stages] puts it into an engine's pipeline:
//
//	tel, err := telemetry.New(telemetry.Options{TracerProvider: tp, MeterProvider: mp})
//	outer, inner := tel.Stages(nil, []lathe.Middleware{policy.Middleware(p, policy.Options{})})
//	e := lathe.New(lathe.Options{Outer: outer, Middleware: inner})
//
// [FromEnvironment] builds the providers as the OTEL_* environment variables
// say (OTLP export, samplers), and a Prometheus handler for /metrics when
// asked, as lathe serve does; [Setup.New] makes telemetry with them.
//
// What leaves: the names of tools, calls' ids and sessions, outcomes, error
// kinds, policy decisions and approvals, durations, and the kinds of the
// host operations a call made. A call's arguments, its result, and the
// subjects of its operations (paths, URLs, command lines) never leave unless
// [Options].Arguments or [Options].Results say so.
//
// Only programs that import this package compile OpenTelemetry: the engine
// and its faces carry trace context as plain strings ([lathe.TraceContext]).
package telemetry

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"time"
	"unicode/utf8"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	"github.com/lathe-tools/lathe"
	"github.com/lathe-tools/lathe/tool"
)

// ScopeName is the instrumentation scope of lathe's spans and metrics.
const ScopeName = "github.com/lathe-tools/lathe/telemetry"

// DefaultMaxBytes caps a recorded argument or result when [Options].MaxBytes
// is zero.
const DefaultMaxBytes = 4096

// Options configure [New]. The zero value traces with the global
// providers and records neither arguments nor results.
type Options struct {
	// TracerProvider makes the spans; nil means otel.GetTracerProvider().
	TracerProvider trace.TracerProvider
	// MeterProvider makes the metrics; nil means otel.GetMeterProvider().
	MeterProvider metric.MeterProvider
	// Arguments records each call's arguments, as JSON cut at MaxBytes, in
	// its span's gen_ai.tool.call.arguments, and the subjects of its host
	// operations (paths, URLs, command lines) in the run span's events.
	// Off by default: arguments carry what the model wrote, often what it
	// read of files and secrets, and a trace collector is seldom guarded
	// as well as the machine it came from.
	Arguments bool
	// Results records each call's result, as JSON cut at MaxBytes, in its
	// span's gen_ai.tool.call.result. Off by default, for the same reason.
	Results bool
	// MaxBytes caps each recorded argument or result; zero means
	// [DefaultMaxBytes].
	MaxBytes int
	// Sandbox, if set, names the sandbox profile a tool's run is confined
	// by ("standard", "hardened" …; "" for none), for the run span's
	// lathe.sandbox.profile.
	Sandbox func(def *tool.Definition) string
}

// Telemetry traces and measures the calls of the engines whose pipelines
// it is in ([Telemetry.Stages]). It is safe for concurrent use.
type Telemetry struct {
	opts   Options
	tracer trace.Tracer
	prop   propagation.TraceContext

	callDuration     metric.Float64Histogram
	approvalDuration metric.Float64Histogram
	upstreamDuration metric.Float64Histogram
	sets             seriesSets
	// untraced says the tracer provider is OpenTelemetry's no-op one: no
	// span is started at all, which saves even the no-op's allocations.
	untraced bool
}

// Attribute keys: the semantic conventions' where they have one, lathe's
// own (lathe.*) where they do not.
const (
	keyOperation  = attribute.Key("gen_ai.operation.name")
	keyToolName   = attribute.Key("gen_ai.tool.name")
	keyToolCallID = attribute.Key("gen_ai.tool.call.id")
	keyToolArgs   = attribute.Key("gen_ai.tool.call.arguments")
	keyToolResult = attribute.Key("gen_ai.tool.call.result")
	keyMCPMethod  = attribute.Key("mcp.method.name")
	keyMCPSession = attribute.Key("mcp.session.id")
	keyErrorType  = attribute.Key("error.type")
	keyOutcome    = attribute.Key("lathe.outcome")
	keyDecision   = attribute.Key("lathe.decision")
	keyRuntime    = attribute.Key("lathe.runtime")
	keySandbox    = attribute.Key("lathe.sandbox.profile")
	keyRule       = attribute.Key("lathe.policy.rule")
	keyAnswer     = attribute.Key("lathe.approval.answer")
	keyAnsweredBy = attribute.Key("lathe.approval.by")
	keyOpKind     = attribute.Key("lathe.operation.kind")
	keyOpSubject  = attribute.Key("lathe.operation.subject")
	keyOpApproval = attribute.Key("lathe.operation.approval")
	keyOperations = attribute.Key("lathe.operations")
	keyUpstream   = attribute.Key("lathe.mcp.server")
)

// The decisions a call's policy stage comes to, in its metrics and spans.
const (
	// DecisionNone: the call never reached the policy (an unknown tool,
	// invalid arguments), or the pipeline has no policy stage.
	DecisionNone = "none"
	// DecisionAllow: the policy let the call run without asking.
	DecisionAllow = "allow"
	// DecisionAsk: the policy asked; the approval's answer is in the
	// approval's span and the lathe.approvals metric.
	DecisionAsk = "ask"
	// DecisionDeny: the policy refused the call without asking.
	DecisionDeny = "deny"
)

// unknownTool stands in metrics for the name of a tool that does not exist:
// a client that calls made-up names must not make a series of each.
const unknownTool = "_unknown"

// New returns the telemetry of opts.
func New(opts Options) (*Telemetry, error) {
	if opts.TracerProvider == nil {
		opts.TracerProvider = otel.GetTracerProvider()
	}
	if opts.MeterProvider == nil {
		opts.MeterProvider = otel.GetMeterProvider()
	}
	if opts.MaxBytes <= 0 {
		opts.MaxBytes = DefaultMaxBytes
	}
	t := &Telemetry{opts: opts, tracer: opts.TracerProvider.Tracer(ScopeName)}
	switch opts.TracerProvider.(type) {
	case tracenoop.TracerProvider, *tracenoop.TracerProvider:
		t.untraced = true
	}
	m := opts.MeterProvider.Meter(ScopeName)
	var err, e error
	// Buckets in seconds, from a builtin's microseconds to a person's
	// minutes of thought over an approval.
	buckets := metric.WithExplicitBucketBoundaries(0.0001, 0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60, 300)
	t.callDuration, e = m.Float64Histogram("lathe.call.duration", metric.WithUnit("s"), buckets,
		metric.WithDescription("Duration of tool calls, by tool, outcome and policy decision; its count counts the calls."))
	err = errors.Join(err, e)
	t.approvalDuration, e = m.Float64Histogram("lathe.approval.duration", metric.WithUnit("s"), buckets,
		metric.WithDescription("Time the policy waited for an approval, by tool, answer and who answered; its count counts the approvals."))
	err = errors.Join(err, e)
	t.upstreamDuration, e = m.Float64Histogram("mcp.client.operation.duration", metric.WithUnit("s"), buckets,
		metric.WithDescription("Duration of requests to upstream MCP servers, by method and server."))
	err = errors.Join(err, e)
	if err != nil {
		return nil, err
	}
	return t, nil
}

// Stages returns an engine's stages with telemetry's own around them: the
// call's span first of the outer stages (so that it times them, an audit
// log included), and the spans of the policy's decision and of the tool's
// run around the inner stages, which are taken to be the policy's. Give
// the results to [lathe.Options] (Outer and Middleware), or return them
// from the load package's Options.Stages.
func (t *Telemetry) Stages(outer, inner []lathe.Middleware) ([]lathe.Middleware, []lathe.Middleware) {
	o := append([]lathe.Middleware{t.callStage}, outer...)
	var i []lathe.Middleware
	if len(inner) > 0 {
		// With no policy there is no decision to time: the run's stage
		// counts the call as allowed.
		i = append(i, t.policyStage)
	}
	i = append(append(i, inner...), t.runStage)
	return o, i
}

// callState is what the stages of one call share, through its context.
type callState struct {
	span     trace.Span
	ctx      context.Context // the call span's context: the parent of its children
	policy   trace.Span      // open while the policy decides
	approval trace.Span      // open while an approval is waited for
	asked    time.Time
	decision string
	reached  bool // the policy let the call through to its run
	// recording says the call's span records: when it does not (a
	// sampler dropped it, or the providers are no-ops), its children are
	// not made at all.
	recording bool
}

type stateKey struct{}

// callStage opens the call's span, measures the call, and closes it.
func (t *Telemetry) callStage(next lathe.Handler) lathe.Handler {
	return func(ctx context.Context, inv *lathe.Invocation) (*tool.Outcome, error) {
		start := time.Now()
		measuring := t.callDuration.Enabled(ctx)
		if t.untraced && !measuring {
			// Nobody would see what the stages find out: the call runs as
			// if they were not there.
			return next(withoutState(ctx), inv)
		}
		name := clip(inv.Call.Name, 256)
		sctx, span := ctx, trace.SpanFromContext(context.Background()) // a no-op span
		method := ""
		if !t.untraced {
			sctx, span, method = t.startCallSpan(ctx, name, start)
		}
		st := &callState{span: span, ctx: sctx, decision: DecisionNone, recording: span.IsRecording()}
		if !st.recording && !measuring {
			span.End()
			return next(withoutState(ctx), inv)
		}
		if st.recording {
			attrs := []attribute.KeyValue{keyOperation.String("execute_tool"), keyToolName.String(name)}
			if inv.Call.ID != "" {
				attrs = append(attrs, keyToolCallID.String(clip(inv.Call.ID, 256)))
			}
			if method != "" {
				attrs = append(attrs, keyMCPMethod.String(method))
			}
			if s := lathe.SessionFrom(ctx); s != "" {
				attrs = append(attrs, keyMCPSession.String(clip(s, 256)))
			}
			if t.opts.Arguments && len(inv.Call.Arguments) > 0 {
				attrs = append(attrs, keyToolArgs.String(clip(string(inv.Call.Arguments), t.opts.MaxBytes)))
			}
			span.SetAttributes(attrs...)
		}
		inv.Observe(st.observe(t, inv))
		out, err := next(context.WithValue(sctx, stateKey{}, st), inv)

		outcome := outcomeOf(out, err)
		end := time.Now()
		failed := outcome != lathe.OutcomeOK && outcome != lathe.OutcomeQuestion
		// The state is read after next returned: the stages that wrote it
		// ran on this goroutine, or ended before their call returned.
		if st.recording {
			if st.approval != nil {
				st.approval.End(trace.WithTimestamp(end))
			}
			if st.policy != nil {
				st.policy.End(trace.WithTimestamp(end))
			}
			span.SetAttributes(keyOutcome.String(outcome), keyDecision.String(st.decision))
			if failed {
				span.SetAttributes(keyErrorType.String(outcome))
				span.SetStatus(codes.Error, outcome)
			}
			if t.opts.Results && out != nil && out.Result != nil {
				if b, jerr := json.Marshal(out.Result); jerr == nil {
					span.SetAttributes(keyToolResult.String(clip(string(b), t.opts.MaxBytes)))
				}
			}
		}
		if !t.untraced {
			// Without a tracer the span is the no-op one: nothing to end,
			// nor a timestamp option to allocate for it.
			span.End(trace.WithTimestamp(end))
		}
		if measuring {
			toolName := unknownTool
			if inv.Tool != nil {
				toolName = inv.Tool.Definition.Name
			}
			errType := ""
			if failed {
				errType = outcome
			}
			// The context gives an exemplar its trace, when there is one.
			mctx := context.Background()
			if !t.untraced {
				mctx = context.WithoutCancel(sctx)
			}
			t.callDuration.Record(mctx, end.Sub(start).Seconds(),
				t.sets.get(seriesKey{toolName, outcome, st.decision, errType}))
		}
		return out, err
	}
}

// withoutState hides the state of an enclosing call (a tool's run that
// calls another tool) from a call that keeps none, so that its stages do not
// take the enclosing call's for its own.
func withoutState(ctx context.Context) context.Context {
	if st, _ := ctx.Value(stateKey{}).(*callState); st != nil {
		return context.WithValue(ctx, stateKey{}, (*callState)(nil))
	}
	return ctx
}

// startCallSpan starts the call's span: a server span when a client's
// request is the call, a child of the client's trace context when the
// request carries one, and returns the request's MCP method then; an
// internal span for a call a tool made within its own call's span.
func (t *Telemetry) startCallSpan(ctx context.Context, name string, start time.Time) (context.Context, trace.Span, string) {
	in, inbound := lathe.InboundFrom(ctx)
	if inbound && trace.SpanContextFromContext(ctx).IsValid() {
		// A call a tool made, within its own call's span: the client's
		// request was the enclosing call's, not this one's.
		inbound = false
	}
	kind := trace.SpanKindInternal
	if inbound {
		kind = trace.SpanKindServer
		// A client's trace context makes the call its child.
		if in.Trace.Parent != "" {
			c := traceCarrier(in.Trace)
			ctx = t.prop.Extract(ctx, &c)
		}
	}
	sctx, span := t.tracer.Start(ctx, "execute_tool "+name, trace.WithSpanKind(kind), trace.WithTimestamp(start))
	if !inbound {
		return sctx, span, ""
	}
	return sctx, span, in.Method
}

// seriesKey names one series of the calls' metric.
type seriesKey struct{ tool, outcome, decision, errorType string }

// maxCachedSeries bounds the cache of attribute sets: a process whose tools
// come and go (upstream servers that change their lists) does not keep the
// sets of all it ever had.
const maxCachedSeries = 4096

// seriesSets caches the attribute set of each series: making one sorts and
// copies its attributes, which would cost each call more than recording.
type seriesSets struct {
	mu sync.RWMutex
	m  map[seriesKey]metric.MeasurementOption
}

func (s *seriesSets) get(k seriesKey) metric.MeasurementOption {
	s.mu.RLock()
	o, ok := s.m[k]
	s.mu.RUnlock()
	if ok {
		return o
	}
	attrs := []attribute.KeyValue{keyToolName.String(k.tool), keyOutcome.String(k.outcome), keyDecision.String(k.decision)}
	if k.errorType != "" {
		attrs = append(attrs, keyErrorType.String(k.errorType))
	}
	o = metric.WithAttributeSet(attribute.NewSet(attrs...))
	s.mu.Lock()
	if s.m == nil || len(s.m) >= maxCachedSeries {
		s.m = map[seriesKey]metric.MeasurementOption{}
	}
	s.m[k] = o
	s.mu.Unlock()
	return o
}

// observe returns the call's observer of its stages' events: the approvals
// the policy asks for open and close a span of their own.
func (st *callState) observe(t *Telemetry, inv *lathe.Invocation) func(lathe.Event) {
	return func(ev lathe.Event) {
		if ev.Approval == nil || ev.Operation != nil {
			// An operation's approval is asked while the tool runs; its
			// wait is in the run's span, and its verdict in the
			// operation's event there.
			return
		}
		switch ev.Kind {
		case lathe.EventApprovalAsked:
			st.decision = DecisionAsk
			st.asked = ev.Time
			if !st.recording {
				return
			}
			parent := st.ctx
			if st.policy != nil {
				parent = trace.ContextWithSpan(parent, st.policy)
			}
			_, st.approval = t.tracer.Start(parent, "lathe.approval", trace.WithTimestamp(ev.Time),
				trace.WithAttributes(keyToolName.String(clip(ev.Tool, 256)), keyRule.String(clip(ev.Approval.Rule, 256))))
		case lathe.EventApprovalAnswered:
			st.decision = DecisionAsk
			attrs := []attribute.KeyValue{keyAnswer.String(ev.Approval.Answer), keyAnsweredBy.String(clip(ev.Approval.By, 64))}
			toolName := unknownTool
			if inv.Tool != nil {
				toolName = inv.Tool.Definition.Name
			}
			var wait float64
			if st.approval != nil {
				st.approval.SetAttributes(attrs...)
				st.approval.End(trace.WithTimestamp(ev.Time))
				st.approval = nil
			} else if st.policy != nil {
				// Settled without a wait (a grant, the session's earlier
				// answer, the person who typed the call): no span of its
				// own, but the policy's span says how.
				st.policy.SetAttributes(attrs...)
			}
			if st.asked.IsZero() {
				wait = 0
			} else {
				wait = ev.Time.Sub(st.asked).Seconds()
			}
			t.approvalDuration.Record(context.WithoutCancel(st.ctx), wait, metric.WithAttributes(
				keyToolName.String(toolName), keyAnswer.String(ev.Approval.Answer), keyAnsweredBy.String(clip(ev.Approval.By, 64))))
		}
	}
}

// policyStage opens the span of the policy's decision; runStage, reached
// when the policy lets the call through, closes it.
func (t *Telemetry) policyStage(next lathe.Handler) lathe.Handler {
	return func(ctx context.Context, inv *lathe.Invocation) (*tool.Outcome, error) {
		st, _ := ctx.Value(stateKey{}).(*callState)
		if st == nil {
			return next(ctx, inv)
		}
		if st.recording {
			_, st.policy = t.tracer.Start(st.ctx, "lathe.policy", trace.WithAttributes(keyToolName.String(inv.Tool.Definition.Name)))
		}
		out, err := next(ctx, inv)
		if !st.reached {
			if st.decision == DecisionNone {
				st.decision = DecisionDeny
			}
			if st.policy != nil {
				st.policy.SetAttributes(keyDecision.String(st.decision))
				if err != nil {
					st.policy.SetStatus(codes.Error, string(tool.KindOf(err)))
				}
				st.policy.End()
				st.policy = nil
			}
		}
		return out, err
	}
}

// runStage closes the policy's span and opens the run's, in whose context
// the runtime's requests to upstream servers open their own.
func (t *Telemetry) runStage(next lathe.Handler) lathe.Handler {
	return func(ctx context.Context, inv *lathe.Invocation) (*tool.Outcome, error) {
		st, _ := ctx.Value(stateKey{}).(*callState)
		if st == nil {
			return next(ctx, inv)
		}
		st.reached = true
		if st.decision == DecisionNone {
			st.decision = DecisionAllow
		}
		if st.policy != nil {
			st.policy.SetAttributes(keyDecision.String(st.decision))
			st.policy.End()
			st.policy = nil
		}
		if !st.recording {
			return next(ctx, inv)
		}
		def := &inv.Tool.Definition
		attrs := []attribute.KeyValue{keyToolName.String(def.Name), keyRuntime.String(def.Runtime)}
		if t.opts.Sandbox != nil {
			if p := t.opts.Sandbox(def); p != "" {
				attrs = append(attrs, keySandbox.String(p))
			}
		}
		_, span := t.tracer.Start(st.ctx, "lathe.run "+def.Name, trace.WithAttributes(attrs...))
		// The run's context is the caller's, with the run's span for the
		// requests the runtime makes (lathe.Outbound).
		ctx = trace.ContextWithSpan(ctx, span)
		ctx = lathe.WithOutbound(ctx, t.outbound)
		out, err := next(ctx, inv)
		ops := inv.Operations()
		for _, op := range ops {
			attrs := []attribute.KeyValue{keyOpKind.String(op.Kind), keyOpApproval.String(string(op.Approval))}
			if t.opts.Arguments {
				attrs = append(attrs, keyOpSubject.String(clip(op.Subject, t.opts.MaxBytes)))
			}
			span.AddEvent("lathe.operation", trace.WithAttributes(attrs...))
		}
		if len(ops) > 0 {
			span.SetAttributes(keyOperations.Int(len(ops)))
		}
		if outcome := outcomeOf(out, err); outcome != lathe.OutcomeOK && outcome != lathe.OutcomeQuestion {
			span.SetAttributes(keyErrorType.String(outcome))
			span.SetStatus(codes.Error, outcome)
		}
		span.End()
		return out, err
	}
}

// outbound opens the span of a runtime's request to a peer, a child of the
// run's, and returns its trace context for the peer.
func (t *Telemetry) outbound(ctx context.Context, method, peer string) (lathe.TraceContext, func(error)) {
	start := time.Now()
	ctx, span := t.tracer.Start(ctx, method+" "+clip(peer, 256), trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(keyMCPMethod.String(clip(method, 64)), keyUpstream.String(clip(peer, 256))))
	var c traceCarrier
	t.prop.Inject(ctx, &c)
	if !span.SpanContext().IsValid() {
		// Nothing traces here: the peer gets no trace context of this
		// process's making.
		c = traceCarrier{}
	}
	return lathe.TraceContext(c), func(err error) {
		attrs := []attribute.KeyValue{keyMCPMethod.String(clip(method, 64)), keyUpstream.String(clip(peer, 256))}
		if err != nil {
			kind := string(tool.KindOf(err))
			span.SetStatus(codes.Error, kind)
			span.SetAttributes(keyErrorType.String(kind))
			attrs = append(attrs, keyErrorType.String(kind))
		}
		span.End()
		t.upstreamDuration.Record(context.WithoutCancel(ctx), time.Since(start).Seconds(), metric.WithAttributes(attrs...))
	}
}

// traceCarrier carries a W3C trace context between OpenTelemetry's
// propagator and lathe's strings.
type traceCarrier lathe.TraceContext

func (c *traceCarrier) Get(key string) string {
	switch key {
	case "traceparent":
		return c.Parent
	case "tracestate":
		return c.State
	}
	return ""
}

func (c *traceCarrier) Set(key, value string) {
	switch key {
	case "traceparent":
		c.Parent = value
	case "tracestate":
		c.State = value
	}
}

func (c *traceCarrier) Keys() []string { return []string{"traceparent", "tracestate"} }

// outcomeOf is how a call ended, in one word, as the engine's events say
// it: ok, question, or the kind of its failure.
func outcomeOf(out *tool.Outcome, err error) string {
	switch {
	case err != nil:
		return string(tool.KindOf(err))
	case out == nil:
		return string(tool.KindRuntimeFailure)
	case out.Question != nil:
		return lathe.OutcomeQuestion
	case out.Result != nil && out.Result.IsError:
		if out.Result.ErrorKind == "" {
			return string(tool.KindToolError)
		}
		return string(out.Result.ErrorKind)
	}
	return lathe.OutcomeOK
}

// clip cuts s to at most n bytes, at a rune boundary: names a caller
// chooses (an unknown tool's, a call's id) are bounded in what is exported.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
