// Package js is lathe's embedded JavaScript runtime: tool files whose
// default export holds a definition and an execute function run inside
// lathe, in a QuickJS engine compiled to pure Go (modernc.org/quickjs), with
// a hard memory limit and the call's deadline, and with no way out but the
// host API that [Options].Host answers.
//
// Every call gets an engine of its own, made for it (ahead of it, while
// lathe waits for calls) and thrown away after it, so nothing one call
// leaves behind (a changed Object.prototype, a global, a pending promise)
// reaches the next. [Describe] reads a tool's
// definition without calling execute, [New] returns the [Runtime] that runs
// its calls, and [Eval] runs a script with Go functions bound into it, for
// code mode.
//
// The engine's dependency stays inside this package: nothing in lathe's
// packages tool, host or the root package imports it.
package js

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/lathe-tools/lathe/host"
	"github.com/lathe-tools/lathe/internal/tail"
	"github.com/lathe-tools/lathe/runtime/process/protocol"
	"github.com/lathe-tools/lathe/tool"
	"modernc.org/quickjs"
)

// RuntimeName is the name of the runtime in definitions and errors.
const RuntimeName = "js"

// DefaultMemoryLimit is the memory limit of a call when [Options] sets none.
const DefaultMemoryLimit = 64 << 20

//go:embed prelude.js
var prelude string

// Options configure one tool module.
type Options struct {
	// Host answers the tool's ctx operations; nil means no host API, and
	// every ctx operation then fails with "no host".
	Host *host.Host
	// MemoryLimit bounds the engine's heap in bytes; 0 means
	// [DefaultMemoryLimit]. It is hard: an allocation past it fails with
	// an out-of-memory error, which ends the call with a runtime failure
	// unless the tool catches it.
	MemoryLimit int64
	// File is the tool file, for messages.
	File string
	// SourceMap, if set, maps the code's lines back to the original
	// (TypeScript) file in error messages.
	SourceMap []byte
	// Logger receives what the tool writes to its console; nil discards it.
	Logger *slog.Logger
	// ToolOptions is ctx.options: the tool's options from the
	// configuration.
	ToolOptions map[string]any
}

func (o *Options) fill() {
	if o.MemoryLimit <= 0 {
		o.MemoryLimit = DefaultMemoryLimit
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if o.File == "" {
		o.File = "the tool"
	}
}

// Definition is what a tool file's default export says.
type Definition struct {
	// Name is optional: the file's name is the default.
	Name, Summary, Description string
	InputSchema, OutputSchema  json.RawMessage
	Annotations                tool.Annotations
	Permissions                *protocol.Permissions
}

// Describe reads the definition of the tool whose code is given (a bundle
// made with esbuild's IIFE format and the global name __lathe_tool, or any
// script that sets globalThis.__lathe_tool). It runs the code's top level,
// within ctx's deadline and the memory limit, and never calls execute.
func Describe(ctx context.Context, code []byte, opts Options) (Definition, error) {
	type answer struct {
		def Definition
		err error
	}
	done := make(chan answer, 1)
	goEngine(func() {
		def, err := describe(ctx, code, opts)
		done <- answer{def, err}
	})
	select {
	case a := <-done:
		return a.def, a.err
	case <-ctx.Done():
	}
	select {
	case a := <-done:
		return a.def, a.err
	case <-time.After(stopGrace):
		// The engine stops on its own goroutine once it sees the
		// interrupt.
		return Definition{}, ctx.Err()
	}
}

func describe(ctx context.Context, code []byte, opts Options) (Definition, error) {
	opts.fill()
	var def Definition
	vm, err := newVM(opts.MemoryLimit)
	if err != nil {
		return def, err
	}
	defer vm.Close()
	stop := context.AfterFunc(ctx, vm.Interrupt)
	defer stop()
	if _, err := vm.Eval(string(code), quickjs.EvalGlobal); err != nil {
		if ctx.Err() != nil {
			return def, ctx.Err()
		}
		return def, fmt.Errorf("%s: %s", opts.File, engineError(err, opts))
	}
	v, err := vm.Eval(describeScript, quickjs.EvalGlobal)
	if err != nil {
		if ctx.Err() != nil {
			return def, ctx.Err()
		}
		return def, fmt.Errorf("%s: reading the default export: %s", opts.File, engineError(err, opts))
	}
	s, _ := v.(string)
	var raw struct {
		Missing                   bool
		Name, Summary             any
		Description               any
		InputSchema, OutputSchema json.RawMessage
		Annotations               json.RawMessage
		Permissions               json.RawMessage
		Execute                   bool
	}
	if err := json.Unmarshal([]byte(s), &raw); err != nil {
		return def, fmt.Errorf("%s: the default export does not encode as JSON: %v", opts.File, err)
	}
	switch {
	case raw.Missing:
		return def, fmt.Errorf("%s: no default export (export default {description, inputSchema, execute})", opts.File)
	case !raw.Execute:
		return def, fmt.Errorf("%s: the default export has no execute function", opts.File)
	}
	var problems []string
	str := func(field string, v any, dst *string) {
		switch v := v.(type) {
		case nil:
		case string:
			*dst = v
		default:
			problems = append(problems, fmt.Sprintf("%s is %T, want a string", field, v))
		}
	}
	str("name", raw.Name, &def.Name)
	str("summary", raw.Summary, &def.Summary)
	str("description", raw.Description, &def.Description)
	schema := func(field string, v json.RawMessage) json.RawMessage {
		if len(v) == 0 || string(v) == "null" {
			return nil
		}
		if v[0] != '{' {
			problems = append(problems, field+" is not a JSON Schema object")
			return nil
		}
		return v
	}
	def.InputSchema = schema("inputSchema", raw.InputSchema)
	def.OutputSchema = schema("outputSchema", raw.OutputSchema)
	if len(raw.Annotations) > 0 && string(raw.Annotations) != "null" {
		if err := json.Unmarshal(raw.Annotations, &def.Annotations); err != nil {
			problems = append(problems, "annotations: "+err.Error())
		}
	}
	if len(raw.Permissions) > 0 && string(raw.Permissions) != "null" {
		var p protocol.Permissions
		dec := json.NewDecoder(bytes.NewReader(raw.Permissions))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&p); err != nil {
			problems = append(problems, "permissions: "+err.Error()+" (want {read, write, net, env, run}, each a list of strings)")
		} else {
			def.Permissions = &p
		}
	}
	if len(problems) > 0 {
		return Definition{}, fmt.Errorf("%s: the default export: %s", opts.File, strings.Join(problems, "; "))
	}
	return def, nil
}

const describeScript = `(function () {
  const mod = globalThis.__lathe_tool;
  const d = mod && mod.default !== undefined ? mod.default : mod;
  if (!d || (typeof d !== "object" && typeof d !== "function")) return JSON.stringify({Missing: true});
  return JSON.stringify({Name: d.name, Summary: d.summary, Description: d.description,
    InputSchema: d.inputSchema, OutputSchema: d.outputSchema, Annotations: d.annotations,
    Permissions: d.permissions, Execute: typeof d.execute === "function"});
})()`

// A prelude is compiled once per process: parsing it was most of what a
// call cost.
type onceCode struct {
	once sync.Once
	bc   []byte
	err  error
}

var toolPrelude, scriptPrelude onceCode

func compiled(o *onceCode, src string) ([]byte, error) {
	o.once.Do(func() {
		vm, err := newVM(DefaultMemoryLimit)
		if err != nil {
			o.err = err
			return
		}
		defer vm.Close()
		if o.bc, err = vm.Compile(src, quickjs.EvalGlobal); err != nil {
			o.err = fmt.Errorf("js: the prelude does not compile: %w", err)
		}
	})
	return o.bc, o.err
}

// newVM returns a fresh engine with the memory limit set.
func newVM(limit int64) (*quickjs.VM, error) {
	vm, err := quickjs.NewVM()
	if err != nil {
		return nil, fmt.Errorf("js: starting the engine: %w", err)
	}
	vm.SetMemoryLimit(uintptr(limit))
	return vm, nil
}

// Runtime runs the calls of one tool module. It is a [tool.Runtime], a
// [tool.Closer] and a [tool.Cooperative]: a call ends promptly at its
// deadline, whatever the script does.
type Runtime struct {
	opts     Options
	bytecode []byte
	smap     *sourceMap
	info     string // ctx's root and options, in JSON

	mu      sync.Mutex
	closed  bool
	wg      sync.WaitGroup
	stop    context.CancelFunc
	closing context.Context
}

// New compiles code and returns the runtime of its calls. A syntax error is
// reported here, naming the file and line.
func New(code []byte, opts Options) (*Runtime, error) {
	opts.fill()
	vm, err := newVM(opts.MemoryLimit)
	if err != nil {
		return nil, err
	}
	defer vm.Close()
	bc, err := vm.Compile(string(code), quickjs.EvalGlobal)
	if err != nil {
		return nil, fmt.Errorf("%s: %s", opts.File, engineError(err, opts))
	}
	if _, err := compiled(&toolPrelude, prelude); err != nil {
		return nil, err
	}
	r := &Runtime{opts: opts, bytecode: bc}
	// What ctx holds besides the call's id is the same for every call:
	// encoded once here, and an option that JSON cannot hold is reported
	// now rather than at a call.
	info, err := json.Marshal(struct {
		Root    string         `json:"root"`
		Options map[string]any `json:"options"`
	}{r.root(), opts.ToolOptions})
	if err != nil {
		return nil, fmt.Errorf("%s: the tool's options do not encode as JSON: %w", opts.File, err)
	}
	r.info = string(info)
	if len(opts.SourceMap) > 0 {
		if r.smap, err = parseSourceMap(opts.SourceMap); err != nil {
			opts.Logger.Warn("js: the source map is unusable; errors show the bundle's lines", "file", opts.File, "err", err)
		}
	}
	r.closing, r.stop = context.WithCancel(context.Background())
	// The first call finds an engine ready too.
	refill()
	return r, nil
}

// Cooperative reports true: Execute returns once its context ends.
func (r *Runtime) Cooperative() bool { return true }

// Close stops the calls running and refuses new ones. It waits for their
// engines to stop, but not past closeWait: an engine still busy then (one
// unwinding a deep recursion before it sees the interrupt) stops and is
// freed on its own goroutine, with its host session already ended.
func (r *Runtime) Close() error {
	r.mu.Lock()
	r.closed = true
	r.mu.Unlock()
	r.stop()
	stopped := make(chan struct{})
	go func() {
		r.wg.Wait()
		close(stopped)
	}()
	select {
	case <-stopped:
	case <-time.After(closeWait):
		r.opts.Logger.Warn("js: an engine had not stopped when its runtime closed; it stops on its own", "file", r.opts.File)
	}
	return nil
}

// closeWait bounds how long Close waits for the engines of running calls.
const closeWait = 2 * time.Second

// call is the state of one call, shared with the functions the engine calls
// back.
type call struct {
	ctx     context.Context
	vm      *quickjs.VM
	sess    *host.Session
	answers map[string]any
	console *tail.Buffer
	logger  *slog.Logger
	tool    string
	limit   int64

	settled  bool
	kind     string
	payload  string
	question *tool.Question
}

// Execute runs default.execute(args, ctx) in a fresh engine.
func (r *Runtime) Execute(ctx context.Context, def *tool.Definition, tc *tool.Call) (*tool.Outcome, error) {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil, r.fail(def, "execute", "the runtime is closed", nil)
	}
	r.wg.Add(1)
	r.mu.Unlock()

	callCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	stopClosing := context.AfterFunc(r.closing, cancel)
	defer stopClosing()

	type answer struct {
		out *tool.Outcome
		err error
	}
	done := make(chan answer, 1)
	goEngine(func() {
		defer r.wg.Done()
		out, err, e := r.run(ctx, callCtx, def, tc)
		done <- answer{out, err}
		// The engine is closed after the answer is on its way: the call
		// does not wait for it to be freed. It serves no other call.
		if e != nil {
			e.vm.Close()
		}
	})
	select {
	case a := <-done:
		return a.out, a.err
	case <-callCtx.Done():
	}
	select {
	case a := <-done:
		return a.out, a.err
	case <-time.After(stopGrace):
		// The engine has not yet reached a point where it sees the
		// interrupt (it may be building the stack trace of a deep
		// recursion's overflow). The call ends now; the engine stops on
		// its goroutine and is closed there, and its host session is
		// already refusing requests, since callCtx has ended.
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, r.fail(def, "execute", "the runtime was closed while the tool ran", nil)
	}
}

// stopGrace is how long a call whose context ended waits for the engine to
// stop before it returns without it.
const stopGrace = 100 * time.Millisecond

// run runs one call in an engine of its own (see takeEngine); callCtx is
// ctx, also ended when the runtime closes. It returns the engine, for the
// caller to close once the answer is sent.
func (r *Runtime) run(ctx, callCtx context.Context, def *tool.Definition, tc *tool.Call) (*tool.Outcome, error, *engine) {
	e, err := takeEngine(r.opts.MemoryLimit)
	if err != nil {
		return nil, r.fail(def, "start", err.Error(), nil), nil
	}
	out, err := r.runIn(e, ctx, callCtx, def, tc)
	return out, err, e
}

func (r *Runtime) runIn(e *engine, ctx, callCtx context.Context, def *tool.Definition, tc *tool.Call) (*tool.Outcome, error) {
	vm := e.vm
	stopIntr := context.AfterFunc(callCtx, vm.Interrupt)
	defer stopIntr()

	c := &call{ctx: callCtx, vm: vm, answers: tc.Answers, console: &tail.Buffer{Max: tail.Kept},
		logger: r.opts.Logger, tool: def.Name, limit: r.opts.MemoryLimit}
	if r.opts.Host != nil {
		c.sess = r.opts.Host.Begin(callCtx)
		defer c.sess.End()
	}
	e.cur = c
	args := string(tc.Arguments)
	if strings.TrimSpace(args) == "" {
		args = "{}"
	}
	id, _ := json.Marshal(tc.ID)
	info := `{"callId":` + string(id) + `,` + r.info[1:]
	_, err := vm.EvalBytecode(r.bytecode)
	if err == nil {
		_, err = vm.Call("__lathe_start", args, info)
	}
	for err == nil && !c.settled && c.question == nil && callCtx.Err() == nil {
		var n int
		n, err = vm.ExecutePendingJobs()
		if n == 0 && err == nil {
			break
		}
	}
	switch {
	case c.question != nil:
		return &tool.Outcome{Question: c.question}, nil
	case ctx.Err() != nil:
		return nil, ctx.Err()
	case callCtx.Err() != nil:
		return nil, r.fail(def, "execute", "the runtime was closed while the tool ran", nil)
	case c.settled:
		return r.outcome(def, c)
	case err != nil:
		return nil, r.fail(def, "execute", r.crashText(err, c), nil)
	default:
		return nil, r.fail(def, "execute", "execute's promise never settled, and nothing was left to run: it waits for something that cannot happen"+tail.StderrNote(c.console.Bytes()), nil)
	}
}

func (r *Runtime) root() string {
	if r.opts.Host == nil {
		return ""
	}
	return r.opts.Host.Workspace()
}

// crashText says why the engine stopped without an answer.
func (r *Runtime) crashText(err error, c *call) string {
	return "the tool stopped: " + engineError(err, r.opts) + tail.StderrNote(c.console.Bytes())
}

// engineError names what the engine reported, saying plainly when it was
// the memory limit.
func engineError(err error, opts Options) string {
	var e *quickjs.Error
	if errors.As(err, &e) && isOOM(e.Name, e.Message) {
		return fmt.Sprintf("out of memory: the tool went past its memory limit of %d MiB", opts.MemoryLimit>>20)
	}
	if errors.As(err, &e) && e.Stack != "" {
		return e.Name + ": " + e.Message + "\n" + strings.TrimRight(e.Stack, "\n")
	}
	return err.Error()
}

// nullText explains a thrown null, which is how the engine ends a script
// that ran out of memory so far that it could not make the error.
func nullText(limit int64) string {
	return fmt.Sprintf("out of memory: the tool went past its memory limit of %d MiB (the engine threw null, as it does when it cannot even make the error; or the tool threw null itself)", limit>>20)
}

func isOOM(name, msg string) bool {
	return name == "InternalError" && msg == "out of memory"
}

// outcome turns what execute settled with into the call's outcome.
func (r *Runtime) outcome(def *tool.Definition, c *call) (*tool.Outcome, error) {
	switch c.kind {
	case "text":
		return &tool.Outcome{Result: tool.TextResult(c.payload)}, nil
	case "json":
		if res, ok, err := resultShaped(c.payload); ok {
			if err != nil {
				return nil, r.fail(def, "decode", "the tool returned an object with content that is not a list of content blocks", err)
			}
			return &tool.Outcome{Result: res}, nil
		}
		return &tool.Outcome{Result: &tool.Result{Content: []tool.Content{{Type: tool.ContentText, Text: c.payload}},
			Structured: json.RawMessage(c.payload)}}, nil
	case "null":
		return nil, r.fail(def, "execute", nullText(r.opts.MemoryLimit)+tail.StderrNote(c.console.Bytes()), nil)
	case "nodef":
		return nil, r.fail(def, "execute", "the tool's default export has no execute function", nil)
	}
	var e struct{ Name, Message, Stack string }
	if err := json.Unmarshal([]byte(c.payload), &e); err != nil {
		return nil, r.fail(def, "decode", "the tool's error does not decode", err)
	}
	if isOOM(e.Name, e.Message) {
		return nil, r.fail(def, "execute", fmt.Sprintf("out of memory: the tool went past its memory limit of %d MiB", r.opts.MemoryLimit>>20)+tail.StderrNote(c.console.Bytes()), nil)
	}
	if e.Name == "InternalError" && strings.Contains(e.Message, "stack overflow") {
		return nil, r.fail(def, "execute", "the tool overflowed its stack"+tail.StderrNote(c.console.Bytes()), nil)
	}
	msg := e.Message
	if e.Name != "" && e.Name != "Error" {
		msg = e.Name + ": " + msg
	}
	if st := r.stack(e.Stack); st != "" {
		msg += "\n" + st
	}
	return &tool.Outcome{Result: &tool.Result{Content: []tool.Content{{Type: tool.ContentText, Text: msg}},
		IsError: true, ErrorKind: tool.KindToolError}}, nil
}

// resultShaped reads a returned object that has a "content" list as a
// result, in MCP's shape: {content: [{type: "text", text}...], structured
// (or structuredContent), isError}. Any other value is the structured
// result itself.
func resultShaped(payload string) (*tool.Result, bool, error) {
	var probe map[string]json.RawMessage
	if json.Unmarshal([]byte(payload), &probe) != nil {
		return nil, false, nil
	}
	content, ok := probe["content"]
	if !ok || len(content) == 0 || content[0] != '[' {
		return nil, false, nil
	}
	var raw struct {
		Content           []tool.Content  `json:"content"`
		Structured        json.RawMessage `json:"structured"`
		StructuredContent json.RawMessage `json:"structuredContent"`
		IsError           bool            `json:"isError"`
	}
	if err := json.Unmarshal([]byte(payload), &raw); err != nil {
		return nil, true, err
	}
	res := &tool.Result{Content: raw.Content, Structured: raw.Structured}
	if len(res.Structured) == 0 || string(res.Structured) == "null" {
		res.Structured = raw.StructuredContent
	}
	if string(res.Structured) == "null" {
		res.Structured = nil
	}
	if raw.IsError {
		res.IsError, res.ErrorKind = true, tool.KindToolError
	}
	return res, true, nil
}

// stack returns the stack's frames, mapped through the source map when
// there is one.
func (r *Runtime) stack(s string) string {
	s = strings.TrimRight(s, "\n")
	if s == "" {
		return ""
	}
	if r.smap != nil {
		s = r.smap.mapStack(s)
	}
	return s
}

func (r *Runtime) fail(def *tool.Definition, stage, msg string, err error) error {
	return &tool.Error{Kind: tool.KindRuntimeFailure, Tool: def.Name, Runtime: RuntimeName, Stage: stage, Message: msg, Err: err}
}

func (c *call) settle(args []any) (any, error) {
	if c.settled || len(args) != 2 {
		return nil, nil
	}
	c.settled = true
	c.kind, _ = args[0].(string)
	c.payload, _ = args[1].(string)
	return nil, nil
}

func (c *call) consoleLine(args []any) (any, error) {
	if len(args) != 2 {
		return nil, nil
	}
	level, _ := args[0].(string)
	line, _ := args[1].(string)
	fmt.Fprintln(c.console, line)
	c.logger.Debug("tool console", slog.String("tool", c.tool), slog.String("level", level), slog.String("line", tail.Last(line, tail.Shown)))
	return nil, nil
}
