package js

import (
	"sync/atomic"

	"modernc.org/quickjs"
)

// Engines for tool calls are prepared ahead, while lathe waits for calls:
// a fresh engine with the bridge functions registered and lathe's prelude
// run in it. Starting an engine and running the prelude are most of what a
// small call costs (docs/benchmarks.md), and a call that finds an engine
// prepared does not wait for them.
//
// Isolation is as without them. A prepared engine has run lathe's prelude
// and nothing else: no tool's code, no call's arguments. It serves exactly
// one call and is closed after it, never returned to the pool. Its bridge
// functions serve the call the engine is given to (engine.cur), set once
// before the tool's code runs. The memory limit is the tool's, set when the
// engine is taken, before any code of the tool runs (the prelude ran under
// the default limit, and what it holds counts against the tool's).

// maxPrepared bounds the engines kept ready. Each holds a QuickJS runtime
// and context (a few hundred KiB); two cover a tool called again and again
// by one agent, and the first of a burst of concurrent calls.
const maxPrepared = 2

var (
	prepared  = make(chan *engine, maxPrepared)
	preparing atomic.Bool
	// preparedTaken counts calls that found an engine ready, for tests.
	preparedTaken atomic.Int64
)

// engine is one QuickJS engine for one tool call.
type engine struct {
	vm *quickjs.VM
	// cur is the call the bridge functions serve; nil until given. Only
	// the goroutine running the engine reads or writes it.
	cur *call
}

// takeEngine returns an engine with the prelude run and the memory limit
// set: a prepared one when there is one, else one made now. Either way it
// starts preparing the next.
func takeEngine(limit int64) (*engine, error) {
	var e *engine
	select {
	case e = <-prepared:
		preparedTaken.Add(1)
	default:
	}
	refill()
	if e == nil {
		var err error
		if e, err = newEngine(); err != nil {
			return nil, err
		}
	}
	e.vm.SetMemoryLimit(uintptr(limit))
	return e, nil
}

// refill prepares engines on a kept engine goroutine until the pool is
// full, one preparer at a time.
func refill() {
	if len(prepared) == maxPrepared || !preparing.CompareAndSwap(false, true) {
		return
	}
	goEngine(func() {
		defer preparing.Store(false)
		for len(prepared) < maxPrepared {
			e, err := newEngine()
			if err != nil {
				// The call that takes no engine makes its own and
				// reports what fails.
				return
			}
			select {
			case prepared <- e:
			default:
				e.vm.Close()
				return
			}
		}
	})
}

// newEngine starts an engine, registers the bridge functions and runs the
// prelude.
func newEngine() (*engine, error) {
	pre, err := compiled(&toolPrelude, prelude)
	if err != nil {
		return nil, err
	}
	vm, err := newVM(DefaultMemoryLimit)
	if err != nil {
		return nil, err
	}
	e := &engine{vm: vm}
	for _, f := range []struct {
		name string
		fn   func(c *call, args []any) (any, error)
	}{{"__lathe_host", (*call).host}, {"__lathe_settle", (*call).settle}, {"__lathe_console", (*call).consoleLine}} {
		fn := f.fn
		err := vm.RegisterHostFunc(f.name, func(args []any) (any, error) {
			c := e.cur
			if c == nil {
				return nil, nil
			}
			return fn(c, args)
		})
		if err != nil {
			vm.Close()
			return nil, err
		}
	}
	if _, err := vm.EvalBytecode(pre); err != nil {
		vm.Close()
		return nil, err
	}
	return e, nil
}
