package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/lathe-tools/lathe"
	"github.com/lathe-tools/lathe/runtime/builtin"
	"github.com/lathe-tools/lathe/schema"
	"github.com/lathe-tools/lathe/schema/infer"
	"github.com/lathe-tools/lathe/tool"
)

// searchIn is a typical small tool input: a few properties, a default, an
// enum and a bound.
type searchIn struct {
	Query string `json:"query" jsonschema:"description=what to look for"`
	Limit int    `json:"limit,omitempty" jsonschema:"default=10,minimum=1,maximum=100"`
	Mode  string `json:"mode,omitempty" jsonschema:"enum=exact,enum=fuzzy,default=exact"`
	Path  string `json:"path,omitempty"`
}

type searchOut struct {
	Query string `json:"query"`
	Limit int    `json:"limit"`
	Hits  int    `json:"hits"`
}

func search(_ context.Context, in searchIn) (searchOut, error) {
	return searchOut{Query: in.Query, Limit: in.Limit, Hits: len(in.Query) * in.Limit}, nil
}

// The arguments a model sends: all properties present, so that neither path
// applies defaults; BenchmarkBuiltinDefaults covers the other case.
var fullArgs = json.RawMessage(`{"query":"needle","limit":10,"mode":"exact","path":"src"}`)

// floor is what a careful hand-written dispatcher must do for the same typed
// function: decode the arguments, validate them against the precompiled
// schema, decode them into the input struct, call, and encode the output.
type floor struct {
	s *schema.Schema
}

func newFloor(b *testing.B) *floor {
	raw, err := infer.For[searchIn]()
	if err != nil {
		b.Fatal(err)
	}
	s, err := schema.Compile(raw)
	if err != nil {
		b.Fatal(err)
	}
	return &floor{s: s}
}

func (f *floor) call(ctx context.Context, args json.RawMessage) ([]byte, error) {
	v, err := schema.Decode(args)
	if err != nil {
		return nil, err
	}
	if err := f.s.Validate(v); err != nil {
		return nil, err
	}
	var in searchIn
	if err := json.Unmarshal(args, &in); err != nil {
		return nil, err
	}
	out, err := search(ctx, in)
	if err != nil {
		return nil, err
	}
	return json.Marshal(out)
}

func newSearchEngine(b *testing.B) *lathe.Engine {
	e := lathe.New(lathe.Options{})
	b.Cleanup(func() { e.Close() })
	t := builtin.Must(builtin.Func(tool.Definition{Name: "search", Summary: "Search."}, search))
	if err := e.Register(t); err != nil {
		b.Fatal(err)
	}
	return e
}

// BenchmarkBuiltin runs the same call through the floor and through the
// engine's whole pipeline, with 1, 2 and 8 concurrent callers, and reports
// both and their ratio from the same run.
func BenchmarkBuiltin(b *testing.B) {
	for _, callers := range []int{1, 2, 8} {
		b.Run(map[int]string{1: "callers=1", 2: "callers=2", 8: "callers=8"}[callers], func(b *testing.B) {
			f := newFloor(b)
			e := newSearchEngine(b)
			ctx := context.Background()
			// Errorf, not Fatalf: the operations run on several goroutines.
			floorOp := func() {
				if _, err := f.call(ctx, fullArgs); err != nil {
					b.Error(err)
				}
			}
			engineOp := func() {
				out := e.Call(ctx, &tool.Call{Name: "search", Arguments: fullArgs})
				if out.Result == nil || out.Result.IsError {
					b.Errorf("engine call failed: %+v", out)
				}
			}
			compare(b, callers, floorOp, engineOp)
		})
	}
}

// BenchmarkBuiltinFloors sets the engine beside two other floors, each in
// the same run: "validate", the floor as narrowly as it can be put (the
// arguments decoded and validated against the precompiled schema, and no
// more: the function is not called), and "library", the same typed call
// made with encoding/json and the JSON Schema library alone, as a program
// without lathe's schema package would make it.
func BenchmarkBuiltinFloors(b *testing.B) {
	f := newFloor(b)
	e := newSearchEngine(b)
	ctx := context.Background()
	engineOp := func() {
		if out := e.Call(ctx, &tool.Call{Name: "search", Arguments: fullArgs}); out.Result == nil || out.Result.IsError {
			b.Errorf("engine call failed: %+v", out)
		}
	}
	b.Run("floor=validate", func(b *testing.B) {
		compare(b, 1, func() {
			v, err := schema.Decode(fullArgs)
			if err == nil {
				err = f.s.Validate(v)
			}
			if err != nil {
				b.Error(err)
			}
		}, engineOp)
	})
	b.Run("floor=library", func(b *testing.B) {
		raw, err := infer.For[searchIn]()
		if err != nil {
			b.Fatal(err)
		}
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
		if err != nil {
			b.Fatal(err)
		}
		c := jsonschema.NewCompiler()
		if err := c.AddResource("search.json", doc); err != nil {
			b.Fatal(err)
		}
		sch, err := c.Compile("search.json")
		if err != nil {
			b.Fatal(err)
		}
		compare(b, 1, func() {
			var v any
			if err := json.Unmarshal(fullArgs, &v); err != nil {
				b.Error(err)
			}
			if err := sch.Validate(v); err != nil {
				b.Error(err)
			}
			var in searchIn
			if err := json.Unmarshal(fullArgs, &in); err != nil {
				b.Error(err)
			}
			out, _ := search(ctx, in)
			if _, err := json.Marshal(out); err != nil {
				b.Error(err)
			}
		}, engineOp)
	})
}

// BenchmarkBuiltinDefaults is BenchmarkBuiltin with arguments that leave two
// properties to their defaults, so the engine must fill them in and encode the
// arguments again; the floor decodes into a struct whose zero values stand in.
func BenchmarkBuiltinDefaults(b *testing.B) {
	args := json.RawMessage(`{"query":"needle","path":"src"}`)
	f := newFloor(b)
	e := newSearchEngine(b)
	ctx := context.Background()
	compare(b, 1, func() {
		if _, err := f.call(ctx, args); err != nil {
			b.Fatal(err)
		}
	}, func() {
		if out := e.Call(ctx, &tool.Call{Name: "search", Arguments: args}); out.Result == nil || out.Result.IsError {
			b.Fatalf("engine call failed: %+v", out)
		}
	})
}

// compare times floor and engine in alternating rounds of b.N/rounds
// operations each, so that drift in the machine's speed touches both alike,
// and reports ns/op for each and engine/floor.
func compare(b *testing.B, callers int, floorOp, engineOp func()) {
	const rounds = 10
	floorOp() // warm both paths: lazy initialisation is not the cost of a call
	engineOp()
	b.ReportAllocs()
	b.ResetTimer()
	var floorT, engineT time.Duration
	per := b.N/rounds + 1
	for range rounds {
		floorT += timeOps(callers, per, floorOp)
		engineT += timeOps(callers, per, engineOp)
	}
	b.StopTimer()
	n := float64(per * rounds)
	b.ReportMetric(float64(floorT.Nanoseconds())/n, "floor-ns/op")
	b.ReportMetric(float64(engineT.Nanoseconds())/n, "engine-ns/op")
	b.ReportMetric(float64(engineT)/float64(floorT), "engine/floor")
}

// timeOps runs op n times across callers goroutines and returns the wall time.
func timeOps(callers, n int, op func()) time.Duration {
	start := time.Now()
	if callers == 1 {
		for range n {
			op()
		}
		return time.Since(start)
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range callers {
		wg.Go(func() {
			for next.Add(1) <= int64(n) {
				op()
			}
		})
	}
	wg.Wait()
	return time.Since(start)
}
