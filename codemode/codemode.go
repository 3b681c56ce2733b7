// Package codemode is lathe's code mode: the builtin tool run_code, which
// runs a short TypeScript or JavaScript script that calls the engine's tools
// as async functions,
//
//	const text = await tools.read_file({path: "a.txt"});
//	return text.split("\n").length;
//
// so that a model can do in one call what would take it many (read twenty
// files, count, keep the top three) and see only the answer.
//
// Every call a script makes goes through the whole pipeline of the engine
// — validation, defaults, policy and approvals, deadline, audit — as a
// child of the run_code call: its audit record names the run_code record
// as its parent. A nested call is weighed on its own ([policy.Nested]): a
// person who approved run_code did not approve what it goes on to call. A
// call that is denied, or that needs an approval nobody can give, fails
// that call only: the script sees a rejected promise it can catch.
//
// The script runs in lathe's embedded JavaScript engine (package
// runtime/js) with its memory limit and the run_code call's deadline, with
// no globals but the tools object and console. Limits: [Options].MaxCalls
// nested calls, [Options].MaxOutput bytes of result, and no run_code from
// run_code. [Declarations] and [Declaration] say in TypeScript what a script
// may call; [New]'s description holds the short form, describe_tools the
// full one.
package codemode

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"unicode/utf8"

	"github.com/lathe-tools/lathe"
	"github.com/lathe-tools/lathe/policy"
	"github.com/lathe-tools/lathe/tool"
)

// Name is the name of the code-mode tool.
const Name = "run_code"

// RuntimeName names the runtime of run_code in definitions and errors.
const RuntimeName = "codemode"

// Defaults of [Options].
const (
	DefaultMaxCalls    = 100
	DefaultMaxOutput   = 64 << 10
	DefaultMaxListed   = 4 << 10
	DefaultMemoryLimit = 64 << 20
	// DefaultMaxConcurrent is how many of a script's tool calls run at
	// once, when it starts several before awaiting them (Promise.all).
	DefaultMaxConcurrent = 4
)

// Options configure [New]. The zero value takes the defaults.
type Options struct {
	// MaxCalls caps the tool calls one script makes; the call past it
	// throws in the script. Zero means [DefaultMaxCalls].
	MaxCalls int
	// MaxOutput caps the bytes of the result: the script's return value
	// (JSON) and its console output. What is past it is cut, and the
	// result says so. Zero means [DefaultMaxOutput].
	MaxOutput int
	// MaxListed caps the bytes of the tool list in run_code's
	// description; tools past it are counted, not listed. Zero means
	// [DefaultMaxListed].
	MaxListed int
	// MemoryLimit is the script engine's memory limit in bytes. Zero means
	// [DefaultMemoryLimit].
	MemoryLimit int64
	// MaxConcurrent caps the tool calls of one script that run at once;
	// the ones past it wait for a place. Zero means
	// [DefaultMaxConcurrent]; 1 runs them one after another.
	MaxConcurrent int
	// Hide, if set, leaves the tools it reports out of run_code's
	// description, such as the tools the policy denies outright
	// ([policy.Policy.DeniesOutright]): a tool that can never run is not
	// offered to the model. A script that calls one anyway gets the
	// policy's denial, as for any call.
	Hide func(def tool.Definition) bool
}

// listed returns the tools of defs that run_code's description lists.
func (o Options) listed(defs []tool.Definition) []tool.Definition {
	if o.Hide == nil {
		return defs
	}
	out := defs[:0:0]
	for _, d := range defs {
		if !o.Hide(d) {
			out = append(out, d)
		}
	}
	return out
}

func (o Options) withDefaults() Options {
	if o.MaxCalls <= 0 {
		o.MaxCalls = DefaultMaxCalls
	}
	if o.MaxOutput <= 0 {
		o.MaxOutput = DefaultMaxOutput
	}
	if o.MaxListed <= 0 {
		o.MaxListed = DefaultMaxListed
	}
	if o.MemoryLimit <= 0 {
		o.MemoryLimit = DefaultMemoryLimit
	}
	if o.MaxConcurrent <= 0 {
		o.MaxConcurrent = DefaultMaxConcurrent
	}
	return o
}

// Func is one function a script calls: its argument and its value are
// JSON. An error rejects the script's promise (the script may catch it).
type Func func(ctx context.Context, arg json.RawMessage) (json.RawMessage, error)

// script is what an evaluator runs: transpiled JavaScript and its globals.
type script struct {
	Code        string
	SourceMap   []byte // of a TypeScript script: its lines, back to the script's own
	Bindings    map[string]map[string]Func
	Console     func(level, line string)
	MaxOutput   int
	MemoryLimit int64
	// MaxConcurrent caps the Bindings running at once.
	MaxConcurrent int
}

// evaluator runs a script and returns its value as JSON.
type evaluator func(ctx context.Context, s *script) (json.RawMessage, error)

// runtime is run_code's tool.Runtime.
type runtime struct {
	engine *lathe.Engine
	opts   Options
	eval   evaluator
}

var _ tool.Runtime = (*runtime)(nil)

type input struct {
	Code     string `json:"code"`
	Language string `json:"language"`
}

const inputSchema = `{
  "type": "object",
  "properties": {
    "code": {"type": "string", "minLength": 1, "description": "The script: TypeScript or JavaScript whose top level may await tools.NAME(args) and returns the value to report."},
    "language": {"type": "string", "enum": ["typescript", "javascript"], "default": "typescript", "description": "The script's language."}
  },
  "required": ["code"],
  "additionalProperties": false
}`

const description = `Run a short TypeScript or JavaScript script that calls tools as async functions and returns what you need, instead of calling the tools one by one: ` + "`const t = await tools.read_file({path: \"a.txt\"})`" + `. The top level may use await; end it with ` + "`return value`" + `: the value (as JSON) and what the script printed with console.log are the result.

Each tool call of the script is checked like a direct call (validation, policy, approvals) and may fail: a denied call throws an Error (its message starts with the kind, such as "denied:") that the script can catch. A tool that returns structured output resolves to that object, any other to its text. There is no file, network or process access but through tools, no run_code from run_code, and limits on time, memory, calls and output.

Tools callable as tools.NAME (describe_tools with the names gives their full TypeScript declarations):`

// New returns the run_code tool, whose scripts call the tools of e. Its
// description lists the tools registered in e when it is called; [Watch]
// keeps it current.
func New(e *lathe.Engine, opts Options) tool.Tool {
	opts = opts.withDefaults()
	return tool.Tool{
		Definition: tool.Definition{
			Name:        Name,
			Summary:     "Run a TypeScript/JavaScript script that calls tools as async functions; returns its value and console output.",
			Description: description + "\n" + Listing(opts.listed(e.Tools()), opts.MaxListed),
			InputSchema: json.RawMessage(inputSchema),
			Annotations: tool.Annotations{Title: "Run code", DestructiveHint: tool.Bool(true), OpenWorldHint: tool.Bool(true)},
			Runtime:     RuntimeName,
			Source:      "builtin",
		},
		Runtime: &runtime{engine: e, opts: opts, eval: evalJS},
		// A script's calls are whatever its tools are; it runs alone in a
		// batch rather than beside calls it may conflict with.
		Concurrency: tool.ConcurrencyExclusive,
	}
}

// inRunKey marks a context as running a run_code script, so that a script
// cannot start another (directly, or through any tool that calls the
// engine with the context it was given).
type inRunKey struct{}

// Errors of a script's tool calls, before the engine sees them.
var (
	errRecursive = errors.New("run_code cannot be called from a run_code script")
	errTooMany   = errors.New("too many tool calls")
	errDeadline  = errors.New("the script's time is up; the call was not made")
)

func (r *runtime) Execute(ctx context.Context, def *tool.Definition, c *tool.Call) (*tool.Outcome, error) {
	if ctx.Value(inRunKey{}) != nil {
		return nil, &tool.Error{Kind: tool.KindDenied, Tool: Name, Runtime: RuntimeName, Stage: "run", Err: errRecursive}
	}
	var in input
	if err := json.Unmarshal(c.Arguments, &in); err != nil {
		return nil, &tool.Error{Kind: tool.KindInvalidArguments, Tool: Name, Runtime: RuntimeName, Message: err.Error()}
	}
	code, smap, err := transpile(in.Code, in.Language)
	if err != nil {
		return nil, &tool.Error{Kind: tool.KindInvalidArguments, Tool: Name, Runtime: RuntimeName,
			Message: "/code: " + err.Error()}
	}
	run := r.newRun(ctx, c.ID)
	value, err := r.eval(run.ctx, &script{
		Code:          code,
		SourceMap:     smap,
		Bindings:      map[string]map[string]Func{"tools": run.bindings()},
		Console:       run.console,
		MaxOutput:     r.opts.MaxOutput,
		MemoryLimit:   r.opts.MemoryLimit,
		MaxConcurrent: r.opts.MaxConcurrent,
	})
	return run.outcome(value, err), nil
}

// run is one script's run: its context, its count of calls, its console.
type run struct {
	r      *runtime
	ctx    context.Context
	callID string
	calls  atomic.Int64
	out    *capped
}

func (r *runtime) newRun(ctx context.Context, callID string) *run {
	ctx = policy.Nested(context.WithValue(ctx, inRunKey{}, true))
	return &run{r: r, ctx: ctx, callID: callID, out: &capped{max: r.opts.MaxOutput}}
}

// bindings returns one function per tool registered now, but run_code.
// Each is a Go closure that knows its own tool's name: whatever the script
// does to the tools object or to prototypes, a function it reaches can
// call only its own tool, and only through the engine.
func (ru *run) bindings() map[string]Func {
	defs := ru.r.engine.Tools()
	m := make(map[string]Func, len(defs))
	for _, d := range defs {
		if d.Name == Name {
			continue
		}
		name := d.Name
		m[name] = func(ctx context.Context, arg json.RawMessage) (json.RawMessage, error) {
			return ru.call(ctx, name, arg)
		}
	}
	return m
}

// call makes one nested call through the engine.
func (ru *run) call(ctx context.Context, name string, arg json.RawMessage) (json.RawMessage, error) {
	if name == Name {
		return nil, scriptError(tool.KindDenied, errRecursive.Error())
	}
	// The call runs in the run's context, which carries its deadline and
	// its marks (nested, in run_code), whatever context the script engine
	// hands the function; that one can only end the call sooner.
	if ru.ctx.Err() != nil || (ctx != nil && ctx.Err() != nil) {
		return nil, scriptError(tool.KindTimeout, errDeadline.Error())
	}
	callCtx, cancel := context.WithCancel(ru.ctx)
	defer cancel()
	if ctx != nil {
		defer context.AfterFunc(ctx, cancel)()
	}
	n := ru.calls.Add(1)
	if n > int64(ru.r.opts.MaxCalls) {
		return nil, scriptError(tool.KindDenied, fmt.Sprintf("%s: a script may make %d (this is call %d)",
			errTooMany, ru.r.opts.MaxCalls, n))
	}
	if len(arg) == 0 || string(arg) == "null" || string(arg) == "undefined" {
		arg = json.RawMessage("{}")
	}
	id := fmt.Sprintf("%s/%d", ru.callID, n)
	if ru.callID == "" {
		id = fmt.Sprintf("%s/%d", Name, n)
	}
	out := ru.r.engine.Call(callCtx, &tool.Call{ID: id, Name: name, Arguments: arg})
	if out.Question != nil {
		return nil, scriptError(tool.KindToolError, fmt.Sprintf(
			"%s asked a question (%s), which a script cannot answer; call it directly", name, out.Question.Text))
	}
	if err := out.Err(); err != nil {
		kind := tool.KindOf(err)
		return nil, scriptError(kind, out.Result.Text())
	}
	if len(out.Result.Structured) > 0 {
		return out.Result.Structured, nil
	}
	return json.Marshal(out.Result.Text())
}

// scriptError is the error a script sees: its message starts with the
// kind, so that a script can tell a denial from a failure.
func scriptError(kind tool.ErrorKind, msg string) error {
	return &tool.Error{Kind: kind, Message: string(kind) + ": " + msg}
}

func (ru *run) console(level, line string) {
	if level != "" && level != "log" && level != "info" {
		line = level + ": " + line
	}
	ru.out.WriteString(line + "\n")
}

// outcome is the result the model reads: the value, then the console.
func (ru *run) outcome(value json.RawMessage, err error) *tool.Outcome {
	var b strings.Builder
	if err != nil {
		kind := tool.KindOf(err)
		if ru.ctx.Err() != nil && errors.Is(ru.ctx.Err(), context.DeadlineExceeded) {
			kind = tool.KindTimeout
		}
		fmt.Fprintf(&b, "The script failed (%s): %s\n", kind, err.Error())
		if ru.out.Len() > 0 {
			b.WriteString("console:\n" + ru.out.String())
		}
		res := tool.TextResult(b.String())
		res.IsError, res.ErrorKind = true, kind
		return &tool.Outcome{Result: res}
	}
	v := string(value)
	if v == "" {
		v = "null"
	}
	room := ru.r.opts.MaxOutput - ru.out.Len()
	if room < 256 {
		room = 256
	}
	if len(v) > room {
		// Cut at a character's start, so that the text stays UTF-8.
		for room > 0 && !utf8.RuneStart(v[room]) {
			room--
		}
		v = v[:room] + fmt.Sprintf("… (cut: the value is %d bytes; the limit is %d)", len(value), ru.r.opts.MaxOutput)
	}
	b.WriteString(v)
	b.WriteString("\n")
	if ru.out.Len() > 0 {
		b.WriteString("console:\n" + ru.out.String())
	}
	return &tool.Outcome{Result: tool.TextResult(b.String())}
}

// capped is a buffer that keeps its first max bytes and counts the rest.
type capped struct {
	mu   sync.Mutex
	b    strings.Builder
	max  int
	lost int
}

func (c *capped) WriteString(s string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if room := c.max - c.b.Len(); room < len(s) {
		if room > 0 {
			c.b.WriteString(s[:room])
		}
		c.lost += len(s) - max(room, 0)
		return
	}
	c.b.WriteString(s)
}

func (c *capped) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.b.Len()
}

func (c *capped) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.lost > 0 {
		return c.b.String() + fmt.Sprintf("\n… (%d more bytes of console output cut)\n", c.lost)
	}
	return c.b.String()
}
