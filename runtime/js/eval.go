package js

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/lathe-tools/lathe/tool"
	"modernc.org/quickjs"
)

// Func is a Go function bound into a script by [EvalOptions].Bindings. It
// receives the JSON of its first argument ("null" when there is none) and
// returns the JSON of its value. A returned error rejects the script's
// promise with an Error with the error's text, which the script can catch.
// Funcs run on goroutines of their own, several at once when the script
// starts several before awaiting them (Promise.all): a Func must be safe
// for concurrent use. When ctx ends while a Func runs, Eval may return
// before the Func does; the Func's ctx is done then. Its ctx is also done
// once the script has settled: a call the script started and did not await
// is cancelled, and Eval waits for it (up to two seconds) before it
// returns.
type Func func(ctx context.Context, arg json.RawMessage) (json.RawMessage, error)

// EvalOptions configure [Eval].
type EvalOptions struct {
	// MemoryLimit bounds the engine's heap in bytes; 0 means
	// [DefaultMemoryLimit].
	MemoryLimit int64
	// Bindings are the Go functions the script may call:
	// globalThis[ns][name](arg), which returns a promise of the Func's
	// value.
	Bindings map[string]map[string]Func
	// MaxConcurrent bounds the Funcs running at once; the calls past it
	// wait for a place, in the order the script made them. 0 means
	// [DefaultMaxConcurrent]; 1 runs them one after another.
	MaxConcurrent int
	// Console receives the lines of console.log, info, warn, error and
	// debug, with that level; nil discards them.
	Console func(level, line string)
	// MaxOutput bounds the bytes of the result's JSON and, separately, of
	// the console's lines; 0 means 1 MiB. Console lines past it are
	// dropped, after one line saying so.
	MaxOutput int
	// SourceMap, if set, maps the script's lines back to the source it was
	// transpiled from (a TypeScript script), in the stack of an error it
	// throws. A map that cannot be read is an error of Eval's.
	SourceMap []byte
}

// DefaultMaxConcurrent is the number of bound Funcs one script may have
// running at once when [EvalOptions] sets none.
const DefaultMaxConcurrent = 8

// maxWaiting bounds the calls a script has made that wait for a place: a
// script that starts calls in a loop without awaiting them gets an error
// past it, instead of lathe holding its arguments without end.
const maxWaiting = 1024

// Eval runs a script in a fresh engine, within ctx's deadline and the
// memory limit. The script is the body of an async function: top-level
// await works, and what it returns, JSON-encoded, is the result ("null"
// when it returns nothing).
//
// A script that throws ends with a [*tool.Error] of kind tool_error holding
// the error's message and stack; one that goes past its memory limit, or
// whose promise can never settle, with kind runtime_failure; one stopped by
// ctx with ctx's error.
func Eval(ctx context.Context, code string, opts EvalOptions) (json.RawMessage, error) {
	var smap *sourceMap
	if len(opts.SourceMap) > 0 {
		var err error
		if smap, err = parseSourceMap(opts.SourceMap); err != nil {
			return nil, &tool.Error{Kind: tool.KindRuntimeFailure, Runtime: RuntimeName, Stage: "execute",
				Message: "the script's source map: " + err.Error()}
		}
	}
	res, err := eval(ctx, code, opts)
	var te *tool.Error
	if smap != nil && errors.As(err, &te) && te.Kind == tool.KindToolError {
		te.Message = smap.mapStack(te.Message)
	}
	return res, err
}

func eval(ctx context.Context, code string, opts EvalOptions) (json.RawMessage, error) {
	type answer struct {
		res json.RawMessage
		err error
	}
	done := make(chan answer, 1)
	s := &script{ctx: ctx, opts: &opts, ready: make(chan struct{}, 1)}
	goEngine(func() {
		res, err := s.eval(code)
		done <- answer{res, err}
	})
	select {
	case a := <-done:
		return a.res, a.err
	case <-ctx.Done():
	}
	select {
	case a := <-done:
		return a.res, a.err
	case <-time.After(stopGrace):
		// The engine stops on its own goroutine once it sees the
		// interrupt; no binding starts after ctx has ended, and no
		// console line reaches opts.Console after Eval returns.
		s.mu.Lock()
		s.returned = true
		s.mu.Unlock()
		return nil, ctx.Err()
	}
}

func (s *script) eval(code string) (json.RawMessage, error) {
	ctx, opts := s.ctx, s.opts
	if opts.MemoryLimit <= 0 {
		opts.MemoryLimit = DefaultMemoryLimit
	}
	if opts.MaxOutput <= 0 {
		opts.MaxOutput = 1 << 20
	}
	if opts.MaxConcurrent <= 0 {
		opts.MaxConcurrent = DefaultMaxConcurrent
	}
	o := Options{MemoryLimit: opts.MemoryLimit}
	// The bound functions' context ends when the script settles, and
	// the engine waits for the calls it started before it reports: no
	// call of the script runs on after Eval has returned its answer.
	var stopCalls context.CancelFunc
	s.callCtx, stopCalls = context.WithCancel(ctx)
	defer s.waitCalls()
	defer stopCalls()
	fail := func(msg string) error {
		return &tool.Error{Kind: tool.KindRuntimeFailure, Runtime: RuntimeName, Stage: "execute", Message: msg}
	}
	vm, err := newVM(opts.MemoryLimit)
	if err != nil {
		return nil, fail(err.Error())
	}
	defer vm.Close()
	stop := context.AfterFunc(ctx, vm.Interrupt)
	defer stop()

	for _, f := range []struct {
		name string
		fn   quickjs.HostFunc
	}{{"__lathe_bind", s.bind}, {"__lathe_settle", s.settle}, {"__lathe_console", s.console}} {
		if err := vm.RegisterHostFunc(f.name, f.fn); err != nil {
			return nil, fail("cannot bind " + f.name + ": " + err.Error())
		}
	}
	names := map[string][]string{}
	for ns, fns := range opts.Bindings {
		for name := range fns {
			names[ns] = append(names[ns], name)
		}
	}
	list, _ := json.Marshal(names)
	pre, err := compiled(&scriptPrelude, evalPrelude)
	if err != nil {
		return nil, fail(err.Error())
	}
	if _, err := vm.EvalBytecode(pre); err != nil {
		return nil, fail("the prelude failed: " + err.Error())
	}
	if _, err := vm.Call("__lathe_bindings", string(list)); err != nil {
		return nil, fail("cannot bind the functions: " + err.Error())
	}
	// The script's first line stays line 1, so that positions in its
	// errors are its own.
	_, err = vm.Eval("__lathe_run(async function () {"+code+"\n});", quickjs.EvalGlobal)
	for err == nil && !s.settled && ctx.Err() == nil {
		var n int
		n, err = vm.ExecutePendingJobs()
		if n > 0 || err != nil {
			continue
		}
		// Nothing left to run in the engine: what can still settle the
		// script is a call's answer.
		if s.running == 0 {
			break
		}
		err = s.deliver(vm)
	}
	switch {
	case ctx.Err() != nil:
		return nil, ctx.Err()
	case s.settled && s.kind == "json":
		if len(s.payload) > opts.MaxOutput {
			return nil, &tool.Error{Kind: tool.KindToolError, Runtime: RuntimeName, Stage: "execute",
				Message: fmt.Sprintf("the script's result is %d bytes of JSON, over the limit of %d", len(s.payload), opts.MaxOutput)}
		}
		return json.RawMessage(s.payload), nil
	case s.settled && s.kind == "null":
		return nil, fail(strings.Replace(nullText(opts.MemoryLimit), "the tool", "the script", 2))
	case s.settled:
		var e struct{ Name, Message, Stack string }
		json.Unmarshal([]byte(s.payload), &e)
		if isOOM(e.Name, e.Message) {
			return nil, fail(fmt.Sprintf("out of memory: the script went past its memory limit of %d MiB", opts.MemoryLimit>>20))
		}
		msg := e.Message
		if e.Name != "" && e.Name != "Error" {
			msg = e.Name + ": " + msg
		}
		if st := strings.TrimRight(e.Stack, "\n"); st != "" {
			msg += "\n" + st
		}
		return nil, &tool.Error{Kind: tool.KindToolError, Runtime: RuntimeName, Stage: "execute", Message: msg}
	case err != nil:
		return nil, fail("the script stopped: " + engineError(err, o))
	default:
		return nil, fail("the script's promise never settled, and nothing was left to run: it waits for something that cannot happen")
	}
}

// script is the state of one Eval.
type script struct {
	ctx     context.Context
	opts    *EvalOptions
	settled bool
	kind    string
	payload string
	written int
	cut     bool

	mu       sync.Mutex
	returned bool // Eval has returned without waiting for the engine

	// The script's calls of bound functions. Only the engine's goroutine
	// touches these, but for done, which the calls' goroutines append to.
	callCtx context.Context
	nextID  int
	running int           // calls started and not yet delivered
	waiting []pendingCall // calls made past MaxConcurrent, in order
	started int           // calls running on their goroutines
	wg      sync.WaitGroup
	doneMu  sync.Mutex
	done    []callResult
	ready   chan struct{} // a call has ended; capacity 1
}

// pendingCall is a call the script made that waits for a place.
type pendingCall struct {
	id       int
	ns, name string
	f        Func
	arg      json.RawMessage
}

// callResult is a call's answer, as the envelope the prelude reads.
type callResult struct {
	id       int
	envelope string
}

// start runs a call on a goroutine of its own.
func (s *script) start(c pendingCall) {
	s.started++
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		out, err := c.f(s.callCtx, c.arg)
		var env any
		switch {
		case err != nil:
			env, _ = errEnvelope(-32002, err.Error())
		case len(out) == 0:
			env = `{"r":null}`
		case !json.Valid(out):
			env, _ = errEnvelope(-32002, c.ns+"."+c.name+" returned a value that is not JSON")
		default:
			env = `{"r":` + string(out) + `}`
		}
		s.doneMu.Lock()
		s.done = append(s.done, callResult{c.id, env.(string)})
		s.doneMu.Unlock()
		select {
		case s.ready <- struct{}{}:
		default:
		}
	}()
}

// deliver waits for calls to end (or for the script's context to), and
// hands their answers to the script, starting calls that waited for their
// places.
func (s *script) deliver(vm *quickjs.VM) error {
	select {
	case <-s.ready:
	case <-s.ctx.Done():
		return nil
	}
	s.doneMu.Lock()
	done := s.done
	s.done = nil
	s.doneMu.Unlock()
	for _, r := range done {
		s.running--
		s.started--
		if len(s.waiting) > 0 && s.started < s.opts.MaxConcurrent {
			next := s.waiting[0]
			s.waiting = s.waiting[1:]
			s.start(next)
		}
		if _, err := vm.Call("__lathe_answer", r.id, r.envelope); err != nil {
			return err
		}
	}
	return nil
}

// waitCalls waits for the calls the script started, whose context has been
// cancelled, but not past closeWait.
func (s *script) waitCalls() {
	stopped := make(chan struct{})
	go func() {
		s.wg.Wait()
		close(stopped)
	}()
	select {
	case <-stopped:
	case <-time.After(closeWait):
	}
}

func (s *script) settle(args []any) (any, error) {
	if s.settled || len(args) != 2 {
		return nil, nil
	}
	s.settled = true
	s.kind, _ = args[0].(string)
	s.payload, _ = args[1].(string)
	return nil, nil
}

func (s *script) console(args []any) (any, error) {
	if len(args) != 2 || s.opts.Console == nil || s.cut {
		return nil, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.returned {
		return nil, nil
	}
	level, _ := args[0].(string)
	line, _ := args[1].(string)
	if s.written+len(line) > s.opts.MaxOutput {
		s.cut = true
		s.opts.Console("warn", fmt.Sprintf("(console output past %d bytes was dropped)", s.opts.MaxOutput))
		return nil, nil
	}
	s.written += len(line)
	s.opts.Console(level, line)
	return nil, nil
}

// bind calls one bound Go function. Once the script has settled, nothing
// more is run: a promise chain it left behind cannot call lathe.
func (s *script) bind(args []any) (any, error) {
	if len(args) != 3 {
		return errEnvelope(-32600, "bad binding call")
	}
	ns, _ := args[0].(string)
	name, _ := args[1].(string)
	arg, _ := args[2].(string)
	if s.settled {
		return errEnvelope(-32003, "the script has returned; "+ns+"."+name+" was not run")
	}
	if err := s.ctx.Err(); err != nil {
		return errEnvelope(-32003, "the script's time is up; "+ns+"."+name+" was not run")
	}
	f := s.opts.Bindings[ns][name]
	if f == nil {
		return errEnvelope(-32601, "no such function: "+ns+"."+name)
	}
	if len(s.waiting) >= maxWaiting {
		return errEnvelope(-32002, fmt.Sprintf("%d calls already wait for one of the %d places; %s.%s was not run (await some first)",
			len(s.waiting), s.opts.MaxConcurrent, ns, name))
	}
	s.nextID++
	s.running++
	c := pendingCall{id: s.nextID, ns: ns, name: name, f: f, arg: json.RawMessage(arg)}
	if s.started < s.opts.MaxConcurrent {
		s.start(c)
	} else {
		s.waiting = append(s.waiting, c)
	}
	return fmt.Sprintf(`{"id":%d}`, c.id), nil
}

const evalPrelude = `(function () {
  "use strict";
  const g = globalThis;
  const bind = g.__lathe_bind, settle = g.__lathe_settle, out = g.__lathe_console;
  delete g.__lathe_bind;
  delete g.__lathe_settle;
  delete g.__lathe_console;
  const stringify = JSON.stringify, parse = JSON.parse, apply = Reflect.apply;
  const then = Promise.prototype.then, ErrorCtor = Error, Str = String;
  const freeze = Object.freeze, defineProperty = Object.defineProperty;
  const join = Array.prototype.join, map = Array.prototype.map;
  // The calls waiting for their answers, by id, in an object without a
  // prototype: nothing the script changes reaches it.
  const P = Promise, waiting = Object.create(null);
  function error(e) {
    const err = new ErrorCtor(e.message);
    err.code = e.code;
    return err;
  }
  function show(v) {
    if (typeof v === "string") return v;
    if (v instanceof ErrorCtor) return Str(v);
    try {
      const s = stringify(v);
      return s === undefined ? Str(v) : s;
    } catch (e) {
      return Str(v);
    }
  }
  const con = {};
  for (const level of ["log", "info", "warn", "error", "debug"]) {
    con[level] = function (...args) { out(level, apply(join, apply(map, args, [show]), [" "])); };
  }
  defineProperty(g, "console", { value: freeze(con), writable: true, configurable: true });
  function failure(e) {
    // The engine throws null when it runs out of memory so badly that it
    // cannot make the error; lathe says so.
    if (e === null) return settle("null", "");
    let name = "Error", message, stack = "";
    try {
      if (e instanceof ErrorCtor) {
        name = Str(e.name);
        message = Str(e.message);
        stack = e.stack === undefined ? "" : Str(e.stack);
      } else {
        name = "";
        message = "the script threw " + show(e);
      }
    } catch (x) {
      message = "the script threw a value that cannot be shown";
    }
    settle("error", stringify({ name, message, stack }));
  }
  function done(v) {
    let s;
    try {
      s = stringify(v);
    } catch (e) {
      return failure(e);
    }
    settle("json", s === undefined ? "null" : s);
  }
  defineProperty(g, "__lathe_bindings", { value: function (list) {
    const names = parse(list);
    for (const ns in names) {
      const obj = {};
      for (const name of names[ns]) {
        obj[name] = function (arg) {
          return new P(function (res, rej) {
            const a = arg === undefined ? undefined : stringify(arg);
            const r = parse(bind(ns, name, a === undefined ? "null" : a));
            if (r.e) return rej(error(r.e));
            waiting[r.id] = { res, rej };
          });
        };
      }
      defineProperty(g, ns, { value: freeze(obj), enumerable: true });
    }
  } });
  defineProperty(g, "__lathe_run", { value: function (f) { apply(then, f(), [done, failure]); } });
  // A call's answer, by its id: the promise the script holds settles.
  defineProperty(g, "__lathe_answer", { value: function (id, envelope) {
    const w = waiting[id];
    if (w === undefined) return;
    delete waiting[id];
    const r = parse(envelope);
    if (r.e) w.rej(error(r.e)); else w.res(r.r);
  } });
})();`
