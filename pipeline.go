package lathe

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/lathe-tools/lathe/schema"
	"github.com/lathe-tools/lathe/tool"
)

// Invocation is one call on its way through the pipeline. Stages fill it in
// as they go: resolve sets Tool, decode sets Args.
type Invocation struct {
	// Call is the caller's request; stages do not modify it.
	Call *tool.Call
	// Tool is the resolved tool; nil before the resolve stage.
	Tool *tool.Tool
	// Args is the decoded arguments (a map[string]any for an object), after
	// coercion and defaults.
	Args any
	// ArgsChanged says coercion or defaults changed Args, so the raw
	// arguments must be encoded again before the runtime sees them.
	ArgsChanged bool

	entry *entry
	trace *callTrace  // nil while nobody listens to call events
	watch func(Event) // the stage events' observers (Observe); nil for none
	ops   opLog       // the host operations of its run (RecordOperation)
	// timeout is the engine's default, for a tool without a timeout of its own.
	timeout time.Duration
}

// Timeout is how long the tool may run: its own timeout, else the engine's
// ([Options].Timeout). A stage that waits before the tool runs — the
// policy, asking a person — waits no longer than this either, so that a
// question nobody answers ends the call as a tool that never finishes
// would. Zero before the resolve stage.
func (inv *Invocation) Timeout() time.Duration {
	if inv.Tool != nil && inv.Tool.Timeout > 0 {
		return inv.Tool.Timeout
	}
	return inv.timeout
}

// Handler runs an invocation. A returned error is a failure of the call
// (usually a [*tool.Error]); the engine turns it into an error result.
type Handler func(ctx context.Context, inv *Invocation) (*tool.Outcome, error)

// Middleware wraps a handler with one stage of the pipeline.
type Middleware func(next Handler) Handler

// CallTimeout returns how long a call of the named tool may run: its own
// timeout, else the engine's ([Options].Timeout); false when there is no
// such tool. A face that waits for a person on a call's behalf (a tool's
// question put to an MCP client) waits no longer than that, as the policy
// waits no longer for an approval ([Invocation.Timeout]).
func (e *Engine) CallTimeout(name string) (time.Duration, bool) {
	en, ok := e.tools.Load().get(name)
	if !ok {
		return 0, false
	}
	if en.tool.Timeout > 0 {
		return en.tool.Timeout, true
	}
	return e.opts.Timeout, true
}

// pipeline assembles the stages around execution. The order is DESIGN.md's:
// resolve → decode and coerce → defaults → validate → caller's middleware
// (policy, approval) → execute with deadline, cancellation and output cap →
// normalize → validate output, with observe outermost so that it sees every
// outcome, failures included.
func (e *Engine) pipeline() Handler {
	h := e.execute
	h = e.capOutput(h)
	h = normalize(h)
	h = e.checkOutput(h)
	for i := len(e.opts.Middleware) - 1; i >= 0; i-- {
		h = e.opts.Middleware[i](h)
	}
	h = validate(h)
	h = applyDefaults(h)
	h = decode(h)
	h = e.resolve(h)
	for i := len(e.opts.Outer) - 1; i >= 0; i-- {
		h = e.opts.Outer[i](h)
	}
	return e.observe(h)
}

// resolve finds the called tool.
func (e *Engine) resolve(next Handler) Handler {
	return func(ctx context.Context, inv *Invocation) (*tool.Outcome, error) {
		if e.closed.Load() {
			return nil, &tool.Error{Kind: tool.KindRuntimeFailure, Tool: inv.Call.Name, Stage: "resolve",
				Message: "the engine is closed"}
		}
		reg := e.tools.Load()
		en, ok := reg.get(inv.Call.Name)
		if !ok {
			return nil, unknownToolError(inv.Call.Name, reg)
		}
		inv.entry = en
		inv.Tool = &en.tool
		inv.timeout = e.opts.Timeout
		return next(ctx, inv)
	}
}

// Arguments returns the arguments of c as the tool would get them: found,
// decoded and coerced, given their defaults and validated by the same
// stages a call goes through, with the same compiled schema. It
// runs nothing else (no policy, no tool): it is for faces that look at a
// call before or instead of making it, such as a dry run of the policy.
func (e *Engine) Arguments(ctx context.Context, c *tool.Call) (any, error) {
	var args any
	h := e.resolve(decode(applyDefaults(validate(func(_ context.Context, inv *Invocation) (*tool.Outcome, error) {
		args = inv.Args
		return nil, nil
	}))))
	if _, err := h(ctx, &Invocation{Call: c}); err != nil {
		return nil, err
	}
	return args, nil
}

// decode parses the raw arguments and repairs string-encoded JSON where the
// schema declares another type. The tool's first call compiles its schemas,
// if registration left that to it, before the tool runs.
func decode(next Handler) Handler {
	return func(ctx context.Context, inv *Invocation) (*tool.Outcome, error) {
		if err := inv.entry.input.Ready(); err != nil {
			return nil, schemaFailure(inv, "input", err)
		}
		if out := inv.entry.output; out != nil {
			if err := out.Ready(); err != nil {
				return nil, schemaFailure(inv, "output", err)
			}
		}
		v, err := schema.Decode(inv.Call.Arguments)
		if err != nil {
			return nil, invalid(inv, "decode", err)
		}
		v, changed := inv.entry.input.Coerce(v)
		inv.Args = v
		inv.ArgsChanged = inv.ArgsChanged || changed
		return next(ctx, inv)
	}
}

// applyDefaults fills in absent arguments that the schema gives defaults.
func applyDefaults(next Handler) Handler {
	return func(ctx context.Context, inv *Invocation) (*tool.Outcome, error) {
		v, changed := inv.entry.input.ApplyDefaults(inv.Args)
		inv.Args = v
		inv.ArgsChanged = inv.ArgsChanged || changed
		return next(ctx, inv)
	}
}

// validate checks the arguments against the precompiled input schema and
// reports every violation with its JSON pointer.
func validate(next Handler) Handler {
	return func(ctx context.Context, inv *Invocation) (*tool.Outcome, error) {
		if err := inv.entry.input.Validate(inv.Args); err != nil {
			return nil, invalid(inv, "validate", err)
		}
		return next(ctx, inv)
	}
}

// schemaFailure is the error of a call whose tool's schema, checked at
// registration, failed to compile at its first call: the tool's fault, not
// the arguments', so the call fails without running.
func schemaFailure(inv *Invocation, which string, err error) error {
	return &tool.Error{Kind: tool.KindRuntimeFailure, Tool: inv.Call.Name, Runtime: inv.Tool.Definition.Runtime,
		Stage: "decode", Message: "the tool's " + which + " schema does not compile", Err: err}
}

func invalid(inv *Invocation, stage string, err error) error {
	return &tool.Error{Kind: tool.KindInvalidArguments, Tool: inv.Call.Name, Runtime: inv.Tool.Definition.Runtime,
		Stage: stage, Message: "invalid arguments", Err: err}
}

// execute runs the tool under its deadline. A [tool.Cooperative] runtime
// runs on the caller's goroutine; any other, builtin Go functions included,
// runs on a goroutine of its own, so that one which ignores its context (or
// is stuck in a system call) still cannot hold the caller past the deadline
// or its cancellation. Either way a panic becomes a runtime failure.
func (e *Engine) execute(ctx context.Context, inv *Invocation) (*tool.Outcome, error) {
	t := inv.Tool
	call := inv.Call
	if inv.ArgsChanged {
		raw, err := json.Marshal(inv.Args)
		if err != nil {
			return nil, invalid(inv, "encode", err)
		}
		c := *call
		c.Arguments = raw
		call = &c
	}
	timeout := t.Timeout
	if timeout <= 0 {
		timeout = e.opts.Timeout
	}
	// A caller's deadline that comes sooner governs alone, and saves a timer.
	// The runtime's context carries the invocation, so that the operations
	// the tool asks its host for are recorded with this call
	// (RecordOperation): in the deadline's own context, at no cost, or in a
	// context of its own when the caller's deadline saved that.
	parent := ctx
	var dc *deadlineCtx
	if d, ok := ctx.Deadline(); ok && time.Until(d) <= timeout {
		// On a busy machine the caller's deadline may have passed
		// already: the call then had no time at all, not a negative one.
		timeout = max(time.Until(d).Round(time.Millisecond), 0)
		ctx = context.WithValue(ctx, invocationKey{}, inv)
	} else {
		dc = withDeadline(ctx, time.Now().Add(timeout))
		dc.inv, dc.engine = inv, &e.alarms
		defer dc.release()
		ctx = dc
	}
	// Once the run is over, whether the tool returned or was left behind,
	// nothing more is recorded for the call.
	defer inv.ops.end()

	var out *tool.Outcome
	var err error
	if inv.entry.cooperative {
		out, err = e.run(ctx, t, call)
	} else {
		type result struct {
			out *tool.Outcome
			err error
		}
		done := make(chan result, 1)
		e.workers.run(func() {
			out, err := e.run(ctx, t, call)
			done <- result{out, err}
		})
		// The deadline's channel: the caller's own, or one the engine's
		// alarms close, which costs no timer of the call's own.
		ended := parent.Done()
		var expired <-chan struct{}
		if dc != nil {
			expired = dc.watch(&e.alarms)
		}
		finished := false
		select {
		case r := <-done:
			out, err, finished = r.out, r.err, true
		case <-expired:
		case <-ended:
		}
		if !finished {
			// The function runs on, and its goroutine with it, until it
			// returns by itself; its result then goes nowhere. Only a
			// function that ignores its context can leak so.
			e.opts.Logger.Warn("tool ignored the end of its context; its call returns without it",
				"tool", t.Definition.Name, "timeout", timeout)
			return nil, e.executeError(ctx, inv, ctx.Err(), timeout)
		}
	}
	// A tool that stopped because its context ended reports that as a
	// failure of its own; it is the deadline or the caller's cancellation
	// that ended it, and the outcome says so.
	if err != nil || (ctx.Err() != nil && out != nil && out.Result != nil && out.Result.IsError) {
		if err == nil {
			err = out.Err()
		}
		return nil, e.executeError(ctx, inv, err, timeout)
	}
	return out, nil
}

// run calls the runtime and turns a panic into a runtime failure.
func (e *Engine) run(ctx context.Context, t *tool.Tool, call *tool.Call) (out *tool.Outcome, err error) {
	defer func() {
		if p := recover(); p != nil {
			e.opts.Logger.Error("tool panicked", "tool", t.Definition.Name, "panic", p, "stack", string(debug.Stack()))
			out, err = nil, &tool.Error{Kind: tool.KindRuntimeFailure, Tool: t.Definition.Name,
				Runtime: t.Definition.Runtime, Stage: "execute", Message: fmt.Sprintf("the tool panicked: %v", p)}
		}
	}()
	return t.Runtime.Execute(ctx, &t.Definition, call)
}

// executeError classifies a runtime's failure: a context that ended makes it
// a timeout or a cancellation, whatever the runtime said.
func (e *Engine) executeError(ctx context.Context, inv *Invocation, err error, timeout time.Duration) error {
	def := &inv.Tool.Definition
	var te *tool.Error
	switch {
	case errors.Is(ctx.Err(), context.DeadlineExceeded) && timeout <= 0:
		return &tool.Error{Kind: tool.KindTimeout, Tool: def.Name, Runtime: def.Runtime, Stage: "execute",
			Message: "the caller's deadline had passed before the tool could run"}
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return &tool.Error{Kind: tool.KindTimeout, Tool: def.Name, Runtime: def.Runtime, Stage: "execute",
			Message: fmt.Sprintf("stopped after %s; the tool did not finish in time", timeout)}
	case errors.Is(ctx.Err(), context.Canceled):
		return &tool.Error{Kind: tool.KindCancelled, Tool: def.Name, Runtime: def.Runtime, Stage: "execute",
			Message: "the call was cancelled"}
	case errors.As(err, &te):
		// A copy: the runtime may return a shared error value.
		c := *te
		if c.Tool == "" {
			c.Tool = def.Name
		}
		if c.Runtime == "" {
			c.Runtime = def.Runtime
		}
		if c.Stage == "" {
			c.Stage = "execute"
		}
		return &c
	default:
		return &tool.Error{Kind: tool.KindRuntimeFailure, Tool: def.Name, Runtime: def.Runtime, Stage: "execute", Err: err}
	}
}

// normalize makes every outcome well formed: exactly one of result and
// question, content never nil, structured-only results given a text form.
// What it completes it completes in a copy: the outcome belongs to the
// runtime, which may hand the same one to every call (a Go tool returning a
// shared *tool.Result), and may read it at the same time on another call.
// An outcome that needs nothing is passed on as it is, at no cost.
func normalize(next Handler) Handler {
	return func(ctx context.Context, inv *Invocation) (*tool.Outcome, error) {
		out, err := next(ctx, inv)
		if err != nil {
			return nil, err
		}
		def := &inv.Tool.Definition
		switch {
		case out == nil || (out.Result == nil && out.Question == nil):
			return nil, &tool.Error{Kind: tool.KindRuntimeFailure, Tool: def.Name, Runtime: def.Runtime,
				Stage: "normalize", Message: "the runtime returned no outcome"}
		case out.Result != nil && out.Question != nil:
			return nil, &tool.Error{Kind: tool.KindRuntimeFailure, Tool: def.Name, Runtime: def.Runtime,
				Stage: "normalize", Message: "the runtime returned both a result and a question"}
		case out.Question != nil:
			if out.Question.ID == "" {
				return nil, &tool.Error{Kind: tool.KindRuntimeFailure, Tool: def.Name, Runtime: def.Runtime,
					Stage: "normalize", Message: "the tool asked a question without an id"}
			}
			if out.Question.Kind == "" {
				q := *out.Question
				q.Kind = tool.QuestionText
				return &tool.Outcome{Question: &q}, nil
			}
		default:
			r := out.Result
			fromStructured := len(r.Content) == 0 && len(r.Structured) > 0
			if !fromStructured && r.Content != nil && (!r.IsError || r.ErrorKind != "") {
				return out, nil
			}
			c := *r
			if fromStructured {
				c.Content = []tool.Content{{Type: tool.ContentText, Text: string(r.Structured)}}
			}
			if c.Content == nil {
				c.Content = []tool.Content{}
			}
			if c.IsError && c.ErrorKind == "" {
				c.ErrorKind = tool.KindToolError
			}
			return &tool.Outcome{Result: &c}, nil
		}
		return out, nil
	}
}

// capOutput cuts a result's content to the engine's cap and says so in a
// final text block, so that a model knows it did not see everything.
func (e *Engine) capOutput(next Handler) Handler {
	limit := e.opts.MaxOutputBytes
	if limit < 0 {
		return next
	}
	return func(ctx context.Context, inv *Invocation) (*tool.Outcome, error) {
		out, err := next(ctx, inv)
		if err == nil && out != nil && out.Result != nil && out.Question == nil {
			if r := capResult(out.Result, limit); r != out.Result {
				return &tool.Outcome{Result: r}, nil
			}
		}
		return out, err
	}
}

// capResult returns r trimmed to the cap: r itself when it fits, else a
// trimmed copy. r is never changed, nor the slice of its content: they
// belong to the runtime, which may return the same result on every call, and
// a cut made in place would cut it for good. The content blocks share one
// budget of limit bytes; text is cut at a rune boundary, and images, audio
// and resources that do not fit are dropped whole, since a part of them
// means nothing. Structured JSON is the same data for programs rather than
// the model, so it is held to the cap on its own and dropped whole past it.
func capResult(r *tool.Result, limit int) *tool.Result {
	total := 0
	for i := range r.Content {
		total += contentSize(&r.Content[i])
	}
	if total <= limit && len(r.Structured) <= limit {
		return r
	}
	c := *r
	var notes []string
	if len(c.Structured) > limit {
		notes = append(notes, fmt.Sprintf("structured output of %d bytes omitted", len(c.Structured)))
		c.Structured = nil
	}
	// A new slice, with room for the note: the runtime's own is not touched.
	kept := make([]tool.Content, 0, len(r.Content)+1)
	if total <= limit {
		kept = append(kept, r.Content...)
	} else {
		budget := limit
		for _, b := range r.Content {
			size := contentSize(&b)
			switch {
			case size <= budget:
				budget -= size
				kept = append(kept, b)
			case b.Type == tool.ContentText && budget > 0 && len(b.Data) == 0 && b.Resource == nil:
				cut := min(budget, len(b.Text))
				for cut > 0 && !utf8.RuneStart(b.Text[cut]) {
					cut--
				}
				notes = append(notes, fmt.Sprintf("text cut at %d of %d bytes", cut, len(b.Text)))
				b.Text = b.Text[:cut]
				budget = 0
				kept = append(kept, b)
			default:
				notes = append(notes, fmt.Sprintf("%s block of %d bytes omitted", b.Type, size))
			}
		}
	}
	c.Content = append(kept, tool.Content{Type: tool.ContentText,
		Text: fmt.Sprintf("[output truncated to the %d-byte cap: %s]", limit, strings.Join(notes, "; "))})
	return &c
}

func contentSize(c *tool.Content) int {
	n := len(c.Text) + len(c.Data)
	if c.Resource != nil {
		n += len(c.Resource.Text) + len(c.Resource.Blob)
	}
	return n
}

// checkOutput validates structured output against the tool's output schema,
// on every call, whoever listens. A mismatch does not fail the call: the tool
// did its work, and a model that read a failure might do it again. But the
// structured output is left out of the result, and a note in its content
// says why, so that no face ever hands on structured output that breaks the
// schema the tool declares (an MCP client rejects such a result), and the
// warning is logged. The content a model reads, which normalize has already
// filled from the structured output when the tool gave no text, stays.
func (e *Engine) checkOutput(next Handler) Handler {
	return func(ctx context.Context, inv *Invocation) (*tool.Outcome, error) {
		out, err := next(ctx, inv)
		if err != nil || out == nil || out.Result == nil || out.Result.IsError || inv.entry.output == nil ||
			len(out.Result.Structured) == 0 {
			return out, err
		}
		v, derr := schema.Decode(out.Result.Structured)
		if derr == nil {
			derr = inv.entry.output.Validate(v)
		}
		if derr == nil {
			return out, nil
		}
		e.opts.Logger.Warn("structured output does not match the output schema",
			"tool", inv.Tool.Definition.Name, "error", derr)
		// The result may be shared by the runtime (a Go tool can return the
		// same *Result each time), so it is copied, not changed.
		r := *out.Result
		r.Structured = nil
		r.Content = append(slices.Clip(r.Content), tool.Content{Type: tool.ContentText,
			Text: "[structured output left out: it does not match the tool's output schema: " + derr.Error() + "]"})
		o := *out
		o.Result = &r
		return &o, nil
	}
}

// observe is the outermost stage: it records each call once, with its
// duration and how it ended.
func (e *Engine) observe(next Handler) Handler {
	log := e.opts.Logger
	return func(ctx context.Context, inv *Invocation) (*tool.Outcome, error) {
		if !log.Enabled(ctx, slog.LevelDebug) {
			return next(ctx, inv)
		}
		start := time.Now()
		out, err := next(ctx, inv)
		kind := outcomeKind(out, err)
		log.LogAttrs(ctx, slog.LevelDebug, "call", slog.String("tool", inv.Call.Name),
			slog.String("id", inv.Call.ID), slog.Duration("duration", time.Since(start)), slog.String("outcome", kind))
		return out, err
	}
}
