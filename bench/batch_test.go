package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/lathe-tools/lathe"
	"github.com/lathe-tools/lathe/plan"
	"github.com/lathe-tools/lathe/runtime/builtin"
	"github.com/lathe-tools/lathe/tool"
)

type fileIn struct {
	Path    string `json:"path"`
	Content string `json:"content,omitempty"`
}

var pathResource = []tool.ResourceArg{{Arg: "path", Kind: tool.ResourcePath}}

// BenchmarkBatchIdeal runs 64 independent read-only calls that each wait
// 20 ms, at most 16 at once. The ideal is 64/16 waves of 20 ms, 80 ms; the
// goal is at most 1.1 times that. The floor is the same 64 waits run by a
// hand-written pool of 16 goroutines, timed in alternation with the engine,
// so that a loaded machine, whose timers fire late, shows as a higher floor
// rather than as the engine's overhead.
func BenchmarkBatchIdeal(b *testing.B) {
	const (
		calls = 64
		cap   = 16
		wait  = 20 * time.Millisecond
		ideal = calls / cap * wait
	)
	sleep := func(ctx context.Context) error {
		t := time.NewTimer(wait)
		defer t.Stop()
		select {
		case <-t.C:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	e := lathe.New(lathe.Options{Batch: lathe.BatchConfig{MaxConcurrency: cap}})
	b.Cleanup(func() { e.Close() })
	slow := builtin.Must(builtin.Func(tool.Definition{Name: "slow_read",
		Annotations: tool.Annotations{ReadOnlyHint: true}, Resources: pathResource},
		func(ctx context.Context, in fileIn) (string, error) { return in.Path, sleep(ctx) }))
	if err := e.Register(slow); err != nil {
		b.Fatal(err)
	}
	batch := make([]*tool.Call, calls)
	for i := range batch {
		batch[i] = &tool.Call{Name: "slow_read", Arguments: json.RawMessage(fmt.Sprintf(`{"path":"src/file%d.go"}`, i))}
	}
	ctx := context.Background()
	floor := func() {
		sem := make(chan struct{}, cap)
		var wg sync.WaitGroup
		for range calls {
			sem <- struct{}{}
			wg.Go(func() {
				defer func() { <-sem }()
				sleep(ctx)
			})
		}
		wg.Wait()
	}
	var engineT, floorT time.Duration
	for b.Loop() {
		start := time.Now()
		floor()
		floorT += time.Since(start)
		start = time.Now()
		outs := e.CallBatch(ctx, batch, nil)
		engineT += time.Since(start)
		if err := outs[calls-1].Err(); err != nil {
			b.Fatal(err)
		}
	}
	n := time.Duration(b.N)
	b.ReportMetric(float64((engineT/n).Microseconds())/1000, "ms/batch")
	b.ReportMetric(float64((floorT/n).Microseconds())/1000, "floor-ms/batch")
	b.ReportMetric(float64(engineT/n)/float64(ideal), "x-ideal")
	b.ReportMetric(float64(engineT)/float64(floorT), "x-floor")
}

// workload returns n calls as a coding agent sends them: reads and writes of
// files in a tree of 20 directories of 10 files, a few directory listings and
// searches, and now and then a call of a tool with unknown effects.
func workload(n int) []*tool.Call {
	r := rand.New(rand.NewPCG(1, 1))
	file := func() string { return fmt.Sprintf("pkg%02d/file%d.go", r.IntN(20), r.IntN(10)) }
	calls := make([]*tool.Call, n)
	for i := range calls {
		var name, args string
		switch x := r.IntN(100); {
		case x < 60:
			name, args = "read_file", fmt.Sprintf(`{"path":%q}`, file())
		case x < 85:
			name, args = "write_file", fmt.Sprintf(`{"path":%q,"content":"x"}`, file())
		case x < 95:
			name, args = "list_dir", fmt.Sprintf(`{"path":"pkg%02d"}`, r.IntN(20))
		case x < 99:
			name, args = "grep", `{"pattern":"func"}`
		default:
			name, args = "run_command", `{}`
		}
		calls[i] = &tool.Call{Name: name, Arguments: json.RawMessage(args)}
	}
	return calls
}

func plannerEngine(b *testing.B) *lathe.Engine {
	e := lathe.New(lathe.Options{})
	b.Cleanup(func() { e.Close() })
	ro := tool.Annotations{ReadOnlyHint: true}
	noop := func(context.Context, fileIn) (string, error) { return "", nil }
	type grepIn struct {
		Pattern string `json:"pattern"`
		Path    string `json:"path,omitempty" jsonschema:"default=."`
	}
	err := e.Register(
		builtin.Must(builtin.Func(tool.Definition{Name: "read_file", Annotations: ro, Resources: pathResource}, noop)),
		builtin.Must(builtin.Func(tool.Definition{Name: "write_file", Resources: pathResource}, noop)),
		builtin.Must(builtin.Func(tool.Definition{Name: "list_dir", Annotations: ro, Resources: pathResource}, noop)),
		builtin.Must(builtin.Func(tool.Definition{Name: "grep", Annotations: ro, Resources: pathResource},
			func(context.Context, grepIn) (string, error) { return "", nil })),
		builtin.Must(builtin.Func(tool.Definition{Name: "run_command"}, noop)),
	)
	if err != nil {
		b.Fatal(err)
	}
	return e
}

// BenchmarkPlanBatch plans 1000 calls of the workload with the engine: the
// arguments decoded, repaired and completed as the pipeline would, the paths
// normalised, and the graph built.
func BenchmarkPlanBatch(b *testing.B) {
	e := plannerEngine(b)
	calls := workload(1000)
	b.ReportAllocs()
	for b.Loop() {
		e.PlanBatch(calls)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(calls)), "ns/call")
}

// BenchmarkPlan builds the graph alone for 1000 calls whose effects are
// known, in shapes from easy to hard for the index.
func BenchmarkPlan(b *testing.B) {
	path := func(k string) plan.Resource { return plan.Resource{Kind: plan.KindPath, Key: k} }
	shapes := map[string]func(i int, r *rand.Rand) plan.Effects{
		// Reads of distinct files: no edges at all.
		"independent": func(i int, _ *rand.Rand) plan.Effects {
			return plan.Effects{Uses: []plan.Use{{Resource: path(fmt.Sprint("f", i)), Access: plan.Read}}}
		},
		// Writes of one file: a chain of 1000.
		"chain": func(int, *rand.Rand) plan.Effects {
			return plan.Effects{Uses: []plan.Use{{Resource: path("f"), Access: plan.Write}}}
		},
		// The agent workload: files in a tree, reads, writes, listings, searches
		// of the whole tree and a few exclusive calls.
		"workload": func(i int, r *rand.Rand) plan.Effects {
			file := path(fmt.Sprintf("pkg%02d/file%d.go", r.IntN(20), r.IntN(10)))
			switch x := r.IntN(100); {
			case x < 60:
				return plan.Effects{Uses: []plan.Use{{Resource: file, Access: plan.Read}}}
			case x < 85:
				return plan.Effects{Uses: []plan.Use{{Resource: file, Access: plan.Write}}}
			case x < 95:
				return plan.Effects{Uses: []plan.Use{{Resource: path(fmt.Sprintf("pkg%02d", r.IntN(20))), Access: plan.Read}}}
			case x < 99:
				return plan.Effects{Uses: []plan.Use{{Resource: path(""), Access: plan.Read}}}
			}
			return plan.Effects{Exclusive: true}
		},
	}
	for _, name := range []string{"independent", "chain", "workload"} {
		b.Run(name, func(b *testing.B) {
			r := rand.New(rand.NewPCG(2, 2))
			calls := make([]plan.Call, 1000)
			for i := range calls {
				calls[i] = plan.Call{Name: "t", Effects: shapes[name](i, r)}
			}
			b.ReportAllocs()
			for b.Loop() {
				plan.New(calls)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(calls)), "ns/call")
		})
	}
}
