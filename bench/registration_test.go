package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/lathe-tools/lathe"
	"github.com/lathe-tools/lathe/tool"
)

// nopRuntime is a runtime whose tools are registered, never called.
type nopRuntime struct{}

func (nopRuntime) Execute(context.Context, *tool.Definition, *tool.Call) (*tool.Outcome, error) {
	return &tool.Outcome{Result: tool.TextResult("ok")}, nil
}

// registrationTools returns n tools of the size an MCP server lists: four
// properties, an enum, bounds, a default, and a description that differs
// from tool to tool, as most real schemas do; with shared, every tool has
// the same schema, as the tools of one shape (or of no arguments) have.
// Each round of the benchmark gets schemas of its own, so that none is
// found compiled already by an engine of a round before that is not yet
// collected.
func registrationTools(n int, shared bool, round int) []tool.Tool {
	ts := make([]tool.Tool, n)
	for i := range ts {
		which := i
		if shared {
			which = 0
		}
		ts[i] = tool.Tool{
			Definition: tool.Definition{
				Name: fmt.Sprintf("srv__tool_%05d", i),
				InputSchema: json.RawMessage(fmt.Sprintf(`{"type":"object","properties":{`+
					`"query":{"type":"string","description":"what tool %d looks for (%d)"},`+
					`"limit":{"type":"integer","minimum":1,"maximum":100,"default":10},`+
					`"mode":{"type":"string","enum":["exact","fuzzy"]},`+
					`"path":{"type":"string"}},"required":["query"]}`, which, round)),
				Source: "mcp.srv",
			},
			Runtime: nopRuntime{},
		}
	}
	return ts
}

// BenchmarkRegistration registers n tools one by one, each with its own
// Register call, as a source that learns of its tools one at a time does.
// It reports the cost per tool (µs/tool), the memory allocated per tool
// (B/tool) and what the registered tools hold once registration is done
// (live-B/tool, the definitions the benchmark made included), beside the floor measured in the same run: compiling each
// schema with the JSON Schema library alone (floor-µs/tool), which is what
// registration cost while it compiled every schema. That the cost per tool
// stays the same from 1,000 to 10,000 tools says registration is linear.
//
// Registration leaves the compilation of a schema it is sure of to the
// tool's first call, so the benchmark then calls every tool twice and
// reports the first call (first-call-µs, compilation included) beside the
// second (call-µs), and the memory the first calls allocate
// (first-call-B/tool).
func BenchmarkRegistration(b *testing.B) {
	for _, c := range []struct {
		n      int
		shared bool
	}{{1000, false}, {10000, false}, {10000, true}} {
		n := c.n
		name := fmt.Sprintf("tools=%d/schemas=distinct", n)
		if c.shared {
			name = fmt.Sprintf("tools=%d/schemas=shared", n)
		}
		b.Run(name, func(b *testing.B) {
			var floorT, engineT, firstT, callT time.Duration
			var engineBytes, firstBytes, liveBytes uint64
			var ms runtime.MemStats
			for round := range b.N {
				b.StopTimer()
				ts := registrationTools(n, c.shared, round)
				b.StartTimer()
				start := time.Now()
				for _, t := range ts {
					libraryCompile(b, t.Definition.InputSchema)
				}
				floorT += time.Since(start)

				runtime.GC()
				e := lathe.New(lathe.Options{})
				runtime.ReadMemStats(&ms)
				before, heapBefore := ms.TotalAlloc, ms.HeapAlloc
				start = time.Now()
				for _, t := range ts {
					if err := e.Register(t); err != nil {
						b.Fatal(err)
					}
				}
				engineT += time.Since(start)
				runtime.ReadMemStats(&ms)
				engineBytes += ms.TotalAlloc - before
				if got := len(e.Tools()); got != n {
					b.Fatalf("registered %d tools, want %d", got, n)
				}
				runtime.GC()
				runtime.ReadMemStats(&ms)
				liveBytes += ms.HeapAlloc - heapBefore

				runtime.ReadMemStats(&ms)
				before = ms.TotalAlloc
				start = time.Now()
				callAll(b, e, ts)
				firstT += time.Since(start)
				runtime.ReadMemStats(&ms)
				firstBytes += ms.TotalAlloc - before
				start = time.Now()
				callAll(b, e, ts)
				callT += time.Since(start)
				e.Close()
			}
			per := float64(b.N * n)
			b.ReportMetric(float64(engineT.Microseconds())/per, "µs/tool")
			b.ReportMetric(float64(floorT.Microseconds())/per, "floor-µs/tool")
			b.ReportMetric(float64(engineT)/float64(floorT), "engine/floor")
			b.ReportMetric(float64(engineBytes)/per, "B/tool")
			b.ReportMetric(float64(liveBytes)/per, "live-B/tool")
			b.ReportMetric(float64(firstT.Microseconds())/per, "first-call-µs")
			b.ReportMetric(float64(callT.Microseconds())/per, "call-µs")
			b.ReportMetric(float64(firstBytes)/per, "first-call-B/tool")
		})
	}
}

// callAll calls each tool once with valid arguments.
func callAll(b *testing.B, e *lathe.Engine, ts []tool.Tool) {
	ctx := context.Background()
	args := json.RawMessage(`{"query":"x"}`)
	for _, t := range ts {
		if err := e.Call(ctx, &tool.Call{Name: t.Definition.Name, Arguments: args}).Err(); err != nil {
			b.Fatal(err)
		}
	}
}

// libraryCompile compiles raw with the JSON Schema library, as lathe sets it
// up: draft 2020-12 by default, nothing loaded from outside.
func libraryCompile(b *testing.B, raw json.RawMessage) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		b.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	if err := c.AddResource("lathe:///input.json", doc); err != nil {
		b.Fatal(err)
	}
	if _, err := c.Compile("lathe:///input.json"); err != nil {
		b.Fatal(err)
	}
}
