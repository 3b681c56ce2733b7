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
// returns the JSON of its value. A returned error is thrown in the script as
// an Error with the error's text, which the script can catch. When ctx ends
// while a Func runs, Eval may return before the Func does; the Func's ctx
// is done then.
type Func func(ctx context.Context, arg json.RawMessage) (json.RawMessage, error)

// EvalOptions configure [Eval].
type EvalOptions struct {
	// MemoryLimit bounds the engine's heap in bytes; 0 means
	// [DefaultMemoryLimit].
	MemoryLimit int64
	// Bindings are the Go functions the script may call:
	// globalThis[ns][name](arg). Each returns its value synchronously, and
	// await on it works too.
	Bindings map[string]map[string]Func
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
	s := &script{ctx: ctx, opts: &opts}
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
	o := Options{MemoryLimit: opts.MemoryLimit}
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
		if n == 0 && err == nil {
			break
		}
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
	out, err := f(s.ctx, json.RawMessage(arg))
	if err != nil {
		return errEnvelope(-32002, err.Error())
	}
	if len(out) == 0 {
		out = json.RawMessage("null")
	}
	if !json.Valid(out) {
		return errEnvelope(-32002, ns+"."+name+" returned a value that is not JSON")
	}
	return `{"r":` + string(out) + `}`, nil
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
          const a = arg === undefined ? undefined : stringify(arg);
          const r = parse(bind(ns, name, a === undefined ? "null" : a));
          if (r.e) {
            const err = new ErrorCtor(r.e.message);
            err.code = r.e.code;
            throw err;
          }
          return r.r;
        };
      }
      defineProperty(g, ns, { value: freeze(obj), enumerable: true });
    }
  } });
  defineProperty(g, "__lathe_run", { value: function (f) { apply(then, f(), [done, failure]); } });
})();`
