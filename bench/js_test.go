package bench

import (
	"context"
	"encoding/json"
	"testing"

	"modernc.org/quickjs"

	"github.com/lathe-tools/lathe"
	"github.com/lathe-tools/lathe/runtime/js"
	"github.com/lathe-tools/lathe/tool"
)

// jsGreet is the small tool of the JavaScript benchmarks, as esbuild
// bundles a tool file (IIFE, global name __lathe_tool).
const jsGreet = `var __lathe_tool = (() => { return { default: {
  description: "Greets",
  inputSchema: { type: "object", properties: { name: { type: "string" } }, required: ["name"] },
  execute(args) { return "hello " + args.name; },
} }; })();
`

// jsGlue calls the tool's execute the way an embedder who wants only the
// answer would: arguments in as JSON, the value out as a string.
const jsGlue = `function __bench(a) { return String(__lathe_tool.default.execute(JSON.parse(a))); }`

// BenchmarkJSEngine measures the chosen engine (modernc.org/quickjs, QuickJS
// in pure Go) on what a tool call needs of it: a fresh engine with a small
// function (startup), a call of that function in a warm engine, and a JSON
// round trip of a thousand small objects. docs/js.md compares these with
// the other candidates.
func BenchmarkJSEngine(b *testing.B) {
	const fn = `function f(a){ return {text: "hello " + a.name, n: a.n + 1}; }`
	b.Run("startup", func(b *testing.B) {
		for b.Loop() {
			vm, err := quickjs.NewVM()
			if err != nil {
				b.Fatal(err)
			}
			if _, err := vm.Eval(fn, quickjs.EvalGlobal); err != nil {
				b.Fatal(err)
			}
			vm.Close()
		}
	})
	b.Run("call", func(b *testing.B) {
		vm, _ := quickjs.NewVM()
		defer vm.Close()
		vm.Eval(fn+`; function g(s){ return JSON.stringify(f(JSON.parse(s))) }`, quickjs.EvalGlobal)
		for b.Loop() {
			if _, err := vm.Call("g", `{"name":"x","n":1}`); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("json", func(b *testing.B) {
		vm, _ := quickjs.NewVM()
		defer vm.Close()
		const rt = `JSON.stringify(JSON.parse(JSON.stringify(Array.from({length: 1000}, (_, i) => ({i, s: "item " + i, tags: ["a", "b"]})))))`
		for b.Loop() {
			if _, err := vm.Eval(rt, quickjs.EvalGlobal); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkJSTool measures a warm call of a small JavaScript tool through
// the engine's whole pipeline (validation, policy, deadline, a fresh engine
// with the memory limit, the prelude and ctx, the outcome) against the same
// function evaluated directly in QuickJS in the same run. There are two
// floors:
//
//   - floor=fresh: per call, a new engine with the memory limit, the tool's
//     compiled code loaded, execute called, the engine closed: what any
//     embedder pays to run each call in a clean engine.
//   - floor=warm: one engine kept for every call, execute called in it:
//     the cheapest possible, with nothing kept apart between calls.
func BenchmarkJSTool(b *testing.B) {
	ctx := context.Background()
	opts := js.Options{File: "greet.js"}
	def, err := js.Describe(ctx, []byte(jsGreet), opts)
	if err != nil {
		b.Fatal(err)
	}
	rt, err := js.New([]byte(jsGreet), opts)
	if err != nil {
		b.Fatal(err)
	}
	e := lathe.New(lathe.Options{})
	defer e.Close()
	if err := e.Register(tool.Tool{Definition: tool.Definition{Name: "greet", Description: def.Description,
		InputSchema: def.InputSchema, Runtime: js.RuntimeName}, Runtime: rt}); err != nil {
		b.Fatal(err)
	}
	args := json.RawMessage(`{"name":"world"}`)
	engineOp := func() {
		out := e.Call(ctx, &tool.Call{Name: "greet", Arguments: args})
		if out.Result == nil || out.Result.IsError || out.Result.Text() != "hello world" {
			b.Fatalf("engine: %+v", out.Result)
		}
	}
	scratch, err := quickjs.NewVM()
	if err != nil {
		b.Fatal(err)
	}
	bc, err := scratch.Compile(jsGreet+jsGlue, quickjs.EvalGlobal)
	scratch.Close()
	if err != nil {
		b.Fatal(err)
	}
	callIn := func(vm *quickjs.VM) {
		v, err := vm.Call("__bench", string(args))
		if err != nil || v != "hello world" {
			b.Fatalf("floor: %v, %v", v, err)
		}
	}
	b.Run("floor=fresh", func(b *testing.B) {
		cpuCompare(b, func() {
			vm, err := quickjs.NewVM()
			if err != nil {
				b.Fatal(err)
			}
			vm.SetMemoryLimit(js.DefaultMemoryLimit)
			if _, err := vm.EvalBytecode(bc); err != nil {
				b.Fatal(err)
			}
			callIn(vm)
			vm.Close()
		}, engineOp)
	})
	// A call after the tool has been idle, as an agent's calls come
	// between the model's turns: each side's call is timed alone (wall),
	// then both wait until the work the call left behind (freeing its
	// engine, preparing the next) is done; the processor time counts the
	// call and that work together.
	b.Run("floor=fresh/after=idle", func(b *testing.B) {
		idleCompare(b, func() {
			vm, err := quickjs.NewVM()
			if err != nil {
				b.Fatal(err)
			}
			vm.SetMemoryLimit(js.DefaultMemoryLimit)
			if _, err := vm.EvalBytecode(bc); err != nil {
				b.Fatal(err)
			}
			callIn(vm)
			vm.Close()
		}, engineOp)
	})
	b.Run("floor=warm", func(b *testing.B) {
		vm, err := quickjs.NewVM()
		if err != nil {
			b.Fatal(err)
		}
		defer vm.Close()
		if _, err := vm.EvalBytecode(bc); err != nil {
			b.Fatal(err)
		}
		cpuCompare(b, func() { callIn(vm) }, engineOp)
	})
}
