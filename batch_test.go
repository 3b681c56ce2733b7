package lathe_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lathe-tools/lathe"
	"github.com/lathe-tools/lathe/runtime/builtin"
	"github.com/lathe-tools/lathe/tool"
	"github.com/lathe-tools/lathe/tools"
)

// span is when a call ran, on a logical clock that every start and end
// advances. The clock orders events as they happened, so an overlap of two
// spans is an overlap in time, whatever the machine's speed.
type span struct{ start, end int64 }

// tracker records the span of every call of a batch (each call names its
// index in the argument n) and how many calls of each group ran at once.
type tracker struct {
	clock atomic.Int64

	mu      sync.Mutex
	spans   map[int]span
	running map[string]int
	peak    map[string]int
	runs    map[int]int // how often each call ran
}

func newTracker() *tracker {
	return &tracker{spans: map[int]span{}, running: map[string]int{}, peak: map[string]int{}, runs: map[int]int{}}
}

// do records call n, counted in groups, around a short pause.
func (tr *tracker) do(ctx context.Context, n int, pause time.Duration, groups ...string) error {
	start := tr.clock.Add(1)
	tr.mu.Lock()
	tr.runs[n]++
	for _, g := range append(groups, "all") {
		tr.running[g]++
		tr.peak[g] = max(tr.peak[g], tr.running[g])
	}
	tr.mu.Unlock()
	var err error
	select {
	case <-time.After(pause):
	case <-ctx.Done():
		err = ctx.Err()
	}
	tr.mu.Lock()
	for _, g := range append(groups, "all") {
		tr.running[g]--
	}
	tr.spans[n] = span{start, tr.clock.Add(1)}
	tr.mu.Unlock()
	return err
}

type pathIn struct {
	N    int    `json:"n,omitempty"`
	Path string `json:"path,omitempty" jsonschema:"default=."`
}

type manyIn struct {
	N     int      `json:"n"`
	Paths []string `json:"paths"`
}

type copyIn struct {
	N    int    `json:"n"`
	From string `json:"from"`
	To   string `json:"to"`
}

type branchIn struct {
	N    int `json:"n"`
	Opts struct {
		Branch string `json:"branch"`
	} `json:"opts"`
}

type nIn struct {
	N int `json:"n"`
}

var pathArg = []tool.ResourceArg{{Arg: "path", Kind: tool.ResourcePath}}

// fileTools are tools of every effect class the planner knows, all recording
// into tr:
//
//	read, list   read-only, path resource (list defaults to the root)
//	write        writes its path
//	read_many    read-only, an array of paths
//	copy         reads from, writes to
//	push         writes a branch named at /opts/branch
//	search       read-only, no resources: reads everything
//	opaque       no annotations, no resources: unknown effects, runs alone
//	pure         unknown effects, but configured as shared
func fileTools(tr *tracker, pause time.Duration) []tool.Tool {
	ro := tool.Annotations{ReadOnlyHint: true}
	mk := func(def tool.Definition, f func(ctx context.Context, n int) error) tool.Tool {
		return builtin.Must(builtin.Func(def, func(ctx context.Context, in nIn) (string, error) {
			return "ok", f(ctx, in.N)
		}))
	}
	rec := func(ctx context.Context, n int) error { return tr.do(ctx, n, pause) }
	pathTool := func(name string, a tool.Annotations) tool.Tool {
		return builtin.Must(builtin.Func(tool.Definition{Name: name, Annotations: a, Resources: pathArg},
			func(ctx context.Context, in pathIn) (string, error) { return in.Path, tr.do(ctx, in.N, pause) }))
	}
	pure := mk(tool.Definition{Name: "pure"}, rec)
	pure.Concurrency = tool.ConcurrencyShared
	return []tool.Tool{
		pathTool("read", ro),
		pathTool("list", ro),
		pathTool("write", tool.Annotations{DestructiveHint: tool.Bool(true)}),
		builtin.Must(builtin.Func(tool.Definition{Name: "read_many", Annotations: ro,
			Resources: []tool.ResourceArg{{Arg: "paths", Kind: tool.ResourcePath}}},
			func(ctx context.Context, in manyIn) (string, error) { return "ok", tr.do(ctx, in.N, pause) })),
		builtin.Must(builtin.Func(tool.Definition{Name: "copy", Resources: []tool.ResourceArg{
			{Arg: "from", Kind: tool.ResourcePath, Access: tool.AccessRead},
			{Arg: "to", Kind: tool.ResourcePath}}},
			func(ctx context.Context, in copyIn) (string, error) { return "ok", tr.do(ctx, in.N, pause) })),
		builtin.Must(builtin.Func(tool.Definition{Name: "push",
			Resources: []tool.ResourceArg{{Arg: "/opts/branch", Kind: "branch"}}},
			func(ctx context.Context, in branchIn) (string, error) { return "ok", tr.do(ctx, in.N, pause) })),
		mk(tool.Definition{Name: "search", Annotations: ro}, rec),
		mk(tool.Definition{Name: "opaque", Annotations: tool.Annotations{IdempotentHint: true}}, rec),
		pure,
	}
}

// effect is the test's own statement of what a call touches, written from
// docs/design/batch.md without the planner's help: the oracle the property
// test holds the engine to.
type effect struct {
	exclusive bool
	uses      []use
}

type use struct {
	kind, key string // kind "" is everything; key "" every resource of the kind
	write     bool
}

func overlaps(a, b use) bool {
	switch {
	case a.kind == "" || b.kind == "":
		return true
	case a.kind != b.kind:
		return false
	case a.key == "" || b.key == "" || a.key == b.key:
		return true
	case a.kind != "path":
		return false
	}
	return strings.HasPrefix(a.key, b.key+"/") || strings.HasPrefix(b.key, a.key+"/")
}

func conflict(a, b effect) bool {
	if a.exclusive || b.exclusive {
		return true
	}
	for _, u := range a.uses {
		for _, v := range b.uses {
			if (u.write || v.write) && overlaps(u, v) {
				return true
			}
		}
	}
	return false
}

// paths are the spellings the property test draws from, with the file each
// names: the same file spelt several ways, parents, children and neighbours,
// and paths the planner cannot place (outside, absolute), which count as the
// whole tree.
var paths = map[string]string{
	"a": "a", "./a": "a", "a/": "a", "b/../a": "a",
	"a/b": "a/b", "a//b": "a/b", "a/b/c": "a/b/c", "a/bc": "a/bc",
	"b": "b", "c/d": "c/d", ".": "", "..": "", "/abs/x": "",
}

var pathNames = func() []string {
	var ns []string
	for p := range paths {
		ns = append(ns, p)
	}
	return ns
}()

// randomCall returns a random call numbered n, encoded as a model might send
// it (now and then with string-encoded JSON), and the oracle's effect.
func randomCall(r *rand.Rand, n int) (*tool.Call, effect) {
	p := func() string { return pathNames[r.IntN(len(pathNames))] }
	pu := func(raw string, write bool) use { return use{kind: "path", key: paths[raw], write: write} }
	var args any
	var name string
	var eff effect
	switch r.IntN(10) {
	case 0, 1:
		name = "read"
		x := p()
		args, eff = map[string]any{"n": n, "path": x}, effect{uses: []use{pu(x, false)}}
	case 2:
		name = "list"
		if r.IntN(2) == 0 {
			args, eff = map[string]any{"n": n}, effect{uses: []use{{kind: "path"}}} // the default "." is the root
		} else {
			x := p()
			args, eff = map[string]any{"n": n, "path": x}, effect{uses: []use{pu(x, false)}}
		}
	case 3, 4:
		name = "write"
		x := p()
		args, eff = map[string]any{"n": n, "path": x}, effect{uses: []use{pu(x, true)}}
	case 5:
		name = "read_many"
		x, y := p(), p()
		list, _ := json.Marshal([]string{x, y})
		var v any = []string{x, y}
		if r.IntN(2) == 0 {
			v = string(list) // string-encoded, as models send it; the engine repairs it
		}
		args, eff = map[string]any{"n": n, "paths": v}, effect{uses: []use{pu(x, false), pu(y, false)}}
	case 6:
		name = "copy"
		x, y := p(), p()
		args, eff = map[string]any{"n": n, "from": x, "to": y}, effect{uses: []use{pu(x, false), pu(y, true)}}
	case 7:
		name = "push"
		b := []string{"main", "dev"}[r.IntN(2)]
		args, eff = map[string]any{"n": n, "opts": map[string]any{"branch": b}}, effect{uses: []use{{kind: "branch", key: b, write: true}}}
	case 8:
		name = []string{"search", "pure"}[r.IntN(2)]
		args = map[string]any{"n": n}
		if name == "search" {
			eff = effect{uses: []use{{}}}
		}
	default:
		name = "opaque"
		args, eff = map[string]any{"n": n}, effect{exclusive: true}
	}
	raw, _ := json.Marshal(args)
	return &tool.Call{ID: fmt.Sprint(n), Name: name, Arguments: raw}, eff
}

// TestBatchPropertyConflictsNeverOverlap runs random batches and checks, for
// every pair of calls the oracle says conflict, that the earlier one ended
// before the later one started.
func TestBatchPropertyConflictsNeverOverlap(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for round := range 40 {
		tr := newTracker()
		e := newEngine(t, lathe.Options{Batch: lathe.BatchConfig{MaxConcurrency: 1 + r.IntN(8)}}, fileTools(tr, time.Duration(r.IntN(300))*time.Microsecond)...)
		n := 2 + r.IntN(24)
		calls := make([]*tool.Call, n)
		effs := make([]effect, n)
		for i := range calls {
			calls[i], effs[i] = randomCall(r, i)
		}
		outs := e.CallBatch(context.Background(), calls, nil)
		for i, o := range outs {
			if err := o.Err(); err != nil || o.Result == nil {
				t.Fatalf("round %d: call %d (%s %s): %v", round, i, calls[i].Name, calls[i].Arguments, err)
			}
		}
		for i := range n {
			for j := range i {
				if !conflict(effs[j], effs[i]) {
					continue
				}
				if a, b := tr.spans[j], tr.spans[i]; a.end > b.start {
					t.Fatalf("round %d: conflicting calls %d %s %s %v and %d %s %s %v overlap or run out of order",
						round, j, calls[j].Name, calls[j].Arguments, a, i, calls[i].Name, calls[i].Arguments, b)
				}
			}
		}
	}
}

// after returns the plan's edges for calls given as (name, arguments) pairs.
func after(t *testing.T, e *lathe.Engine, calls ...string) [][]int {
	t.Helper()
	var cs []*tool.Call
	for i := 0; i < len(calls); i += 2 {
		cs = append(cs, &tool.Call{Name: calls[i], Arguments: json.RawMessage(calls[i+1])})
	}
	return e.PlanBatch(cs).After
}

// TestBatchConflictRules has one case per rule by which the engine derives
// effects from a definition and arguments.
func TestBatchConflictRules(t *testing.T) {
	e := newEngine(t, lathe.Options{Batch: lathe.BatchConfig{ResolvePath: func(p string) (string, error) {
		switch p {
		case "link":
			return "a", nil // a symbolic link to a
		case "outside":
			return "", errors.New("outside the workspace")
		}
		return p, nil
	}}}, fileTools(newTracker(), 0)...)
	none := [][]int{nil, nil}
	ordered := [][]int{nil, {0}}
	tests := []struct {
		name  string
		calls []string
		want  [][]int
	}{
		{"two writes of one file", []string{"write", `{"path":"a"}`, "write", `{"path":"a"}`}, ordered},
		{"a write and a read of one file", []string{"write", `{"path":"a"}`, "read", `{"path":"a"}`}, ordered},
		{"a read and a write of one file", []string{"read", `{"path":"a"}`, "write", `{"path":"a"}`}, ordered},
		{"two reads of one file", []string{"read", `{"path":"a"}`, "read", `{"path":"a"}`}, none},
		{"writes of different files", []string{"write", `{"path":"a"}`, "write", `{"path":"b"}`}, none},
		{"a write of a file and a read of its directory", []string{"write", `{"path":"d/f"}`, "list", `{"path":"d"}`}, ordered},
		{"a write of a directory and a read beneath it", []string{"write", `{"path":"d"}`, "read", `{"path":"d/f"}`}, ordered},
		{"a name is not a parent of a longer name", []string{"write", `{"path":"d"}`, "read", `{"path":"dx"}`}, none},
		{"one file spelt two ways", []string{"write", `{"path":"./d//f"}`, "read", `{"path":"d/x/../f"}`}, ordered},
		{"a default argument is the root", []string{"write", `{"path":"d/f"}`, "list", `{}`}, ordered},
		{"an argument outside the workspace is every path", []string{"write", `{"path":"d/f"}`, "read", `{"path":"../elsewhere"}`}, ordered},
		{"the resolver sees through a link", []string{"write", `{"path":"a"}`, "read", `{"path":"link"}`}, ordered},
		{"a path the resolver refuses is every path", []string{"write", `{"path":"a"}`, "read", `{"path":"outside"}`}, ordered},
		{"an array of paths", []string{"read_many", `{"paths":["x","a"]}`, "write", `{"path":"a"}`}, ordered},
		{"a string-encoded array of paths", []string{"read_many", `{"paths":"[\"x\",\"a\"]"}`, "write", `{"path":"a"}`}, ordered},
		{"an empty array touches no path", []string{"read_many", `{"paths":[]}`, "write", `{"path":"a"}`}, none},
		{"arguments that are not JSON: every path", []string{"write", `{"path":`, "read", `{"path":"zzz"}`}, ordered},
		{"declared access: the source of a copy is read", []string{"copy", `{"from":"a","to":"b"}`, "read", `{"path":"a"}`}, none},
		{"declared access: the target of a copy is written", []string{"copy", `{"from":"a","to":"b"}`, "read", `{"path":"b"}`}, ordered},
		{"a nested argument by JSON pointer", []string{"push", `{"opts":{"branch":"main"}}`, "push", `{"opts":{"branch":"main"}}`}, ordered},
		{"other kinds are compared exactly", []string{"push", `{"opts":{"branch":"main"}}`, "push", `{"opts":{"branch":"dev"}}`}, none},
		{"kinds never meet", []string{"push", `{"opts":{"branch":"a"}}`, "write", `{"path":"a"}`}, none},
		{"read-only without resources reads everything", []string{"write", `{"path":"a"}`, "search", `{}`}, ordered},
		{"…and so runs beside reads", []string{"read", `{"path":"a"}`, "search", `{}`}, none},
		{"unknown effects run alone", []string{"read", `{"path":"a"}`, "opaque", `{}`}, ordered},
		{"…even beside shared calls", []string{"pure", `{}`, "opaque", `{}`}, ordered},
		{"configured shared runs beside writes", []string{"write", `{"path":"a"}`, "pure", `{}`}, none},
		{"an unknown tool touches nothing", []string{"write", `{"path":"a"}`, "no_such_tool", `{}`}, none},
	}
	for _, tt := range tests {
		if got := after(t, e, tt.calls...); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s: after = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestBatchConcurrencyOverride(t *testing.T) {
	tr := newTracker()
	ts := fileTools(tr, 0)
	for i := range ts {
		if ts[i].Definition.Name == "read" {
			ts[i].Concurrency = tool.ConcurrencyExclusive
		}
	}
	e := newEngine(t, lathe.Options{}, ts...)
	if got, want := after(t, e, "read", `{"path":"a"}`, "read", `{"path":"b"}`), [][]int{nil, {0}}; !reflect.DeepEqual(got, want) {
		t.Errorf("after = %v, want %v", got, want)
	}
}

func TestBatchOutcomesInOrder(t *testing.T) {
	e := newEngine(t, lathe.Options{}, addTool())
	var calls []*tool.Call
	for i := range 10 {
		calls = append(calls, &tool.Call{ID: fmt.Sprint("c", i), Name: "add", Arguments: json.RawMessage(fmt.Sprintf(`{"a":%d,"b":1}`, i))})
	}
	calls = append(calls, &tool.Call{Name: "nope"}, &tool.Call{Name: "add", Arguments: json.RawMessage(`{"b":-1}`)})
	outs := e.CallBatch(context.Background(), calls, nil)
	if len(outs) != len(calls) {
		t.Fatalf("%d outcomes for %d calls", len(outs), len(calls))
	}
	for i := range 10 {
		if got, want := string(outs[i].Result.Structured), fmt.Sprintf(`{"sum":%d}`, i+1); got != want {
			t.Errorf("outcome %d = %s, want %s", i, got, want)
		}
	}
	if !errors.Is(outs[10].Err(), tool.ErrUnknownTool) || !errors.Is(outs[11].Err(), tool.ErrInvalidArguments) {
		t.Errorf("outcomes 10, 11 = %v, %v", outs[10].Err(), outs[11].Err())
	}
	if outs := e.CallBatch(context.Background(), nil, nil); len(outs) != 0 {
		t.Errorf("empty batch: %v", outs)
	}
}

// askTool writes path after asking whether to; it counts its runs in tr.
func askTool(tr *tracker) tool.Tool {
	return builtin.Must(builtin.Func(tool.Definition{Name: "careful_write", Resources: pathArg},
		func(ctx context.Context, in pathIn) (string, error) {
			a, err := builtin.Ask(ctx, tool.Question{ID: "sure", Text: "Overwrite " + in.Path + "?", Kind: tool.QuestionBoolean})
			tr.do(ctx, in.N, 0)
			if err != nil {
				return "", err
			}
			return fmt.Sprintf("wrote %s: %v", in.Path, a), nil
		}))
}

func TestBatchQuestionsAndRecall(t *testing.T) {
	tr := newTracker()
	e := newEngine(t, lathe.Options{}, append(fileTools(tr, 0), askTool(tr))...)
	calls := []*tool.Call{
		{ID: "0", Name: "careful_write", Arguments: json.RawMessage(`{"n":0,"path":"a"}`)},
		{ID: "1", Name: "read", Arguments: json.RawMessage(`{"n":1,"path":"b"}`)},
		{ID: "2", Name: "read", Arguments: json.RawMessage(`{"n":2,"path":"a"}`)},  // must see the write
		{ID: "3", Name: "write", Arguments: json.RawMessage(`{"n":3,"path":"b"}`)}, // after 1 only
		{ID: "4", Name: "list", Arguments: json.RawMessage(`{"n":4,"path":"."}`)},  // after all
	}
	ctx := context.Background()
	outs := e.CallBatch(ctx, calls, nil)
	if q := outs[0].Question; q == nil || q.ID != "sure" {
		t.Fatalf("outcome 0 = %+v, want the question", outs[0])
	}
	for _, i := range []int{1, 3} {
		if outs[i].Pending() || outs[i].Err() != nil {
			t.Errorf("outcome %d = %+v, want a result", i, outs[i])
		}
	}
	for _, i := range []int{2, 4} {
		if !outs[i].Waiting() || !reflect.DeepEqual(outs[i].WaitsFor, []int{0}) {
			t.Errorf("outcome %d = %+v, want waiting for [0]", i, outs[i])
		}
	}
	if !outs[0].Pending() || outs[0].Waiting() {
		t.Errorf("a question is pending, not waiting")
	}

	// The outcomes go through JSON, as they would between a server and its
	// client, and come back as Previous with the answer.
	raw, err := json.Marshal(outs)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(raw), `"waitsFor":[0]`) {
		t.Errorf("JSON %s does not name what the waiting calls wait for", raw)
	}
	var prev []lathe.BatchOutcome
	if err := json.Unmarshal(raw, &prev); err != nil {
		t.Fatal(err)
	}
	calls[0].Answers = map[string]any{"sure": true}
	outs = e.CallBatch(ctx, calls, &lathe.BatchOptions{Previous: prev})
	for i, o := range outs {
		if o.Pending() || o.Err() != nil {
			t.Errorf("after the answer, outcome %d = %+v", i, o)
		}
	}
	if got := outs[0].Result.Text(); got != "wrote a: true" {
		t.Errorf("outcome 0 = %q", got)
	}
	want := map[int]int{0: 2, 1: 1, 2: 1, 3: 1, 4: 1} // only the pending calls ran again
	if !reflect.DeepEqual(tr.runs, want) {
		t.Errorf("runs per call = %v, want %v", tr.runs, want)
	}
	if !(tr.spans[0].end < tr.spans[2].start && tr.spans[0].end < tr.spans[4].start) {
		t.Errorf("the waiting calls ran before the answered one: %v", tr.spans)
	}
}

func TestBatchCancel(t *testing.T) {
	var started sync.WaitGroup
	started.Add(2)
	block := builtin.Must(builtin.Func(tool.Definition{Name: "block", Annotations: tool.Annotations{ReadOnlyHint: true},
		Resources: pathArg}, func(ctx context.Context, in pathIn) (string, error) {
		started.Done()
		<-ctx.Done()
		return "", ctx.Err()
	}))
	var ran atomic.Int32
	write := builtin.Must(builtin.Func(tool.Definition{Name: "write", Resources: pathArg},
		func(ctx context.Context, in pathIn) (string, error) { ran.Add(1); return "", nil }))
	e := newEngine(t, lathe.Options{}, block, write)
	ctx, cancel := context.WithCancel(context.Background())
	go func() { started.Wait(); cancel() }()
	outs := e.CallBatch(ctx, []*tool.Call{
		{Name: "block", Arguments: json.RawMessage(`{"path":"a"}`)},
		{Name: "block", Arguments: json.RawMessage(`{"path":"b"}`)},
		{Name: "write", Arguments: json.RawMessage(`{"path":"a"}`)}, // follows the first
	}, nil)
	for i, o := range outs {
		if !errors.Is(o.Err(), tool.ErrCancelled) {
			t.Errorf("outcome %d = %v, want cancelled", i, o.Err())
		}
	}
	if !strings.Contains(outs[2].Result.Text(), "not run: the batch was cancelled") {
		t.Errorf("outcome 2 = %q", outs[2].Result.Text())
	}
	if ran.Load() != 0 {
		t.Error("a call started after the batch was cancelled")
	}
}

func TestBatchStopOnError(t *testing.T) {
	started := make(chan struct{})
	fail := builtin.Must(builtin.Func(tool.Definition{Name: "fail", Annotations: tool.Annotations{ReadOnlyHint: true},
		Resources: pathArg}, func(ctx context.Context, in pathIn) (string, error) {
		<-started
		return "", errors.New("disk on fire")
	}))
	slow := builtin.Must(builtin.Func(tool.Definition{Name: "slow", Annotations: tool.Annotations{ReadOnlyHint: true},
		Resources: pathArg}, func(ctx context.Context, in pathIn) (string, error) {
		if in.Path == "s" {
			close(started)
		}
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(time.Duration(in.N) * time.Millisecond):
			return "slept", nil
		}
	}))
	write := builtin.Must(builtin.Func(tool.Definition{Name: "write", Resources: pathArg},
		func(ctx context.Context, in pathIn) (string, error) { return "wrote", nil }))
	e := newEngine(t, lathe.Options{}, fail, slow, write)
	calls := []*tool.Call{
		{Name: "fail", Arguments: json.RawMessage(`{"path":"f"}`)},
		{Name: "slow", Arguments: json.RawMessage(`{"path":"s","n":60000}`)}, // until cancelled
		{ID: "w", Name: "write", Arguments: json.RawMessage(`{"path":"s"}`)}, // follows the slow one
	}

	outs := e.CallBatch(context.Background(), calls, &lathe.BatchOptions{StopOnError: true})
	if !errors.Is(outs[0].Err(), tool.ErrToolError) {
		t.Errorf("outcome 0 = %v", outs[0].Err())
	}
	for _, i := range []int{1, 2} {
		if !errors.Is(outs[i].Err(), tool.ErrCancelled) ||
			!strings.Contains(outs[i].Result.Text(), "the batch stopped when call #1 (fail) failed") {
			t.Errorf("outcome %d = %v", i, outs[i].Err())
		}
	}
	if !strings.HasPrefix(outs[2].Result.Text(), "write: not run:") {
		t.Errorf("outcome 2 = %q", outs[2].Result.Text())
	}

	// Without StopOnError, a failure stops nothing.
	started = make(chan struct{})
	calls[1].Arguments = json.RawMessage(`{"path":"s","n":1}`)
	outs = e.CallBatch(context.Background(), calls, nil)
	if outs[0].Err() == nil || outs[1].Err() != nil || outs[2].Err() != nil {
		t.Errorf("outcomes = %v, %v, %v", outs[0].Err(), outs[1].Err(), outs[2].Err())
	}
}

func TestBatchCaps(t *testing.T) {
	tr := newTracker()
	mk := func(name, source string, max int) tool.Tool {
		t := builtin.Must(builtin.Func(tool.Definition{Name: name, Source: source},
			func(ctx context.Context, in nIn) (string, error) {
				return "", tr.do(ctx, in.N, 500*time.Microsecond, "tool:"+name, source)
			}))
		t.Concurrency = tool.ConcurrencyShared
		t.MaxConcurrency = max
		return t
	}
	e := newEngine(t, lathe.Options{Batch: lathe.BatchConfig{MaxConcurrency: 5, MaxPerServer: 3,
		Servers: map[string]int{"small": 1}}},
		mk("one", "builtin", 2), mk("two", "builtin", 0), mk("gh_a", "mcp.github", 0), mk("gh_b", "mcp.github", 0),
		mk("tiny", "mcp.small", 0))
	var calls []*tool.Call
	for i := range 60 {
		name := []string{"one", "two", "gh_a", "gh_b", "tiny"}[i%5]
		calls = append(calls, &tool.Call{Name: name, Arguments: json.RawMessage(fmt.Sprintf(`{"n":%d}`, i))})
	}
	for i, o := range e.CallBatch(context.Background(), calls, nil) {
		if o.Err() != nil {
			t.Fatalf("outcome %d: %v", i, o.Err())
		}
	}
	for group, limit := range map[string]int{"all": 5, "tool:one": 2, "mcp.github": 3, "mcp.small": 1} {
		if tr.peak[group] > limit {
			t.Errorf("%d calls of %s ran at once, cap %d", tr.peak[group], group, limit)
		}
	}
	tr = newTracker()
	e.CallBatch(context.Background(), calls[:10], &lathe.BatchOptions{MaxConcurrency: 1})
	if tr.peak["all"] != 1 {
		t.Errorf("%d calls ran at once, cap 1 for this batch", tr.peak["all"])
	}
}

func TestRegisterChecksBatchFields(t *testing.T) {
	base := func() tool.Tool { return addTool() }
	tests := map[string]func(*tool.Tool){
		"concurrency":     func(t *tool.Tool) { t.Concurrency = "sometimes" },
		"max concurrency": func(t *tool.Tool) { t.MaxConcurrency = -1 },
		"no argument":     func(t *tool.Tool) { t.Definition.Resources = []tool.ResourceArg{{Kind: "path"}} },
		"no kind":         func(t *tool.Tool) { t.Definition.Resources = []tool.ResourceArg{{Arg: "a"}} },
		"access": func(t *tool.Tool) {
			t.Definition.Resources = []tool.ResourceArg{{Arg: "a", Kind: "path", Access: "rw"}}
		},
		"bad JSON pointer": func(t *tool.Tool) { t.Definition.Resources = []tool.ResourceArg{{Arg: "/a~2", Kind: "path"}} },
		"root as argument": func(t *tool.Tool) { t.Definition.Resources = []tool.ResourceArg{{Arg: "/", Kind: "path"}} },
	}
	for name, mutate := range tests {
		tl := base()
		mutate(&tl)
		if err := lathe.New(lathe.Options{}).Register(tl); err == nil {
			t.Errorf("%s: registered", name)
		}
	}
}

func ExampleEngine_CallBatch() {
	e := lathe.New(lathe.Options{})
	defer e.Close()
	files := map[string]string{"a.txt": "old"}
	var mu sync.Mutex
	type fileIn struct {
		Path    string `json:"path"`
		Content string `json:"content,omitempty"`
	}
	read := builtin.Must(builtin.Func(tool.Definition{Name: "read_file",
		Annotations: tool.Annotations{ReadOnlyHint: true},
		Resources:   []tool.ResourceArg{{Arg: "path", Kind: tool.ResourcePath}}},
		func(_ context.Context, in fileIn) (string, error) {
			mu.Lock()
			defer mu.Unlock()
			return files[in.Path], nil
		}))
	write := builtin.Must(builtin.Func(tool.Definition{Name: "write_file",
		Resources: []tool.ResourceArg{{Arg: "path", Kind: tool.ResourcePath}}},
		func(ctx context.Context, in fileIn) (string, error) {
			if _, err := builtin.Ask(ctx, tool.Question{ID: "ok", Text: "Write " + in.Path + "?"}); err != nil {
				return "", err
			}
			mu.Lock()
			defer mu.Unlock()
			files[in.Path] = in.Content
			return "written", nil
		}))
	e.Register(read, write)

	calls := []*tool.Call{
		{Name: "write_file", Arguments: json.RawMessage(`{"path":"a.txt","content":"new"}`)},
		{Name: "read_file", Arguments: json.RawMessage(`{"path":"a.txt"}`)}, // must see the write
		{Name: "read_file", Arguments: json.RawMessage(`{"path":"b.txt"}`)}, // free to run
	}
	ctx := context.Background()
	outs := e.CallBatch(ctx, calls, nil)
	fmt.Println(outs[0].Question.Text, outs[1].WaitsFor, outs[2].Result != nil)

	// Answer, and run again: only the pending calls run.
	calls[0].Answers = map[string]any{"ok": "yes"}
	outs = e.CallBatch(ctx, calls, &lathe.BatchOptions{Previous: outs})
	fmt.Println(outs[0].Result.Text(), outs[1].Result.Text())
	// Output:
	// Write a.txt? [0] true
	// written new
}

// TestBatchResolvePathSeesThroughLinks uses a real workspace's resolver: a
// write through a symbolic link and a read of its target are one file.
func TestBatchResolvePathSeesThroughLinks(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "real"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("real", filepath.Join(dir, "link")); err != nil {
		t.Skip("no symbolic links here:", err)
	}
	ws, err := tools.NewWorkspace(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	e := newEngine(t, lathe.Options{Batch: lathe.BatchConfig{ResolvePath: ws.Resolve}}, fileTools(newTracker(), 0)...)
	tests := []struct {
		calls []string
		want  [][]int
	}{
		{[]string{"write", `{"path":"link/f.txt"}`, "read", `{"path":"real/f.txt"}`}, [][]int{nil, {0}}},
		{[]string{"write", `{"path":"` + filepath.Join(dir, "real", "f.txt") + `"}`, "read", `{"path":"real/f.txt"}`}, [][]int{nil, {0}}},
		{[]string{"write", `{"path":"link/f.txt"}`, "read", `{"path":"real/g.txt"}`}, [][]int{nil, nil}},
		{[]string{"write", `{"path":"real/f.txt"}`, "read", `{"path":"../outside"}`}, [][]int{nil, {0}}},
	}
	for _, tt := range tests {
		if got := after(t, e, tt.calls...); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%v: after = %v, want %v", tt.calls, got, tt.want)
		}
	}
}
