package js_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lathe-tools/lathe"
	"github.com/lathe-tools/lathe/host"
	"github.com/lathe-tools/lathe/runtime/js"
	"github.com/lathe-tools/lathe/tool"
)

func evalCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func TestEvalBindingsAndConsole(t *testing.T) {
	var lines []string
	double := func(ctx context.Context, arg json.RawMessage) (json.RawMessage, error) {
		var a struct{ N int }
		if err := json.Unmarshal(arg, &a); err != nil {
			return nil, err
		}
		return json.RawMessage(fmt.Sprint(a.N * 2)), nil
	}
	refuse := func(ctx context.Context, arg json.RawMessage) (json.RawMessage, error) {
		return nil, errors.New("denied by the policy")
	}
	res, err := js.Eval(evalCtx(t), `
		const a = await tools.double({n: 21});
		const b = await tools.double({n: 1});
		let caught = "";
		try { await tools.refuse({}); } catch (e) { caught = e.message; }
		console.log("a is", a, {b});
		console.error("oops");
		return {a, b, caught};`, js.EvalOptions{
		Bindings: map[string]map[string]js.Func{"tools": {"double": double, "refuse": refuse}},
		Console:  func(level, line string) { lines = append(lines, level+": "+line) },
	})
	if err != nil {
		t.Fatal(err)
	}
	if string(res) != `{"a":42,"b":2,"caught":"denied by the policy"}` {
		t.Errorf("result %s", res)
	}
	if strings.Join(lines, "|") != `log: a is 42 {"b":2}|error: oops` {
		t.Errorf("console %q", lines)
	}
}

func TestEvalResults(t *testing.T) {
	for _, tc := range []struct{ code, want string }{
		{`return 1 + 1`, `2`},
		{``, `null`},
		{`return "s"`, `"s"`},
		{`return await Promise.resolve([1, {x: null}])`, `[1,{"x":null}]`},
	} {
		res, err := js.Eval(evalCtx(t), tc.code, js.EvalOptions{})
		if err != nil || string(res) != tc.want {
			t.Errorf("Eval(%q) = %s, %v; want %s", tc.code, res, err, tc.want)
		}
	}
}

func TestEvalErrors(t *testing.T) {
	_, err := js.Eval(evalCtx(t), "const x = 1;\nthrow new TypeError('bad thing');", js.EvalOptions{})
	var te *tool.Error
	if !errors.As(err, &te) || te.Kind != tool.KindToolError || !strings.Contains(te.Message, "TypeError: bad thing") || !strings.Contains(te.Message, ":2") {
		t.Errorf("a throw: %v, want a tool_error naming the TypeError at line 2", err)
	}
	_, err = js.Eval(evalCtx(t), "const a = []; for (;;) a.push(new Array(100000).fill(0));", js.EvalOptions{MemoryLimit: 16 << 20})
	if !errors.As(err, &te) || te.Kind != tool.KindRuntimeFailure || !strings.Contains(te.Message, "memory limit of 16 MiB") {
		t.Errorf("a memory bomb: %v, want a runtime_failure naming the limit", err)
	}
	_, err = js.Eval(evalCtx(t), "return 'x'.repeat(2000)", js.EvalOptions{MaxOutput: 1000})
	if !errors.As(err, &te) || !strings.Contains(te.Message, "over the limit of 1000") {
		t.Errorf("a result too large: %v", err)
	}
	_, err = js.Eval(evalCtx(t), "syntax error here(", js.EvalOptions{})
	if err == nil || !strings.Contains(err.Error(), "SyntaxError") {
		t.Errorf("a syntax error: %v", err)
	}
}

func TestEvalConsoleCap(t *testing.T) {
	var n int
	_, err := js.Eval(evalCtx(t), `for (let i = 0; i < 1000; i++) console.log("line " + i); return 1`,
		js.EvalOptions{MaxOutput: 100, Console: func(level, line string) { n += len(line) }})
	if err != nil {
		t.Fatal(err)
	}
	if n > 200 {
		t.Errorf("the console passed %d bytes, past its cap of 100", n)
	}
}

func TestDescribe(t *testing.T) {
	code := module(`{ name: "weather", summary: "Weather now", description: "Reads the weather",
		inputSchema: {type: "object", properties: {city: {type: "string"}}},
		annotations: {readOnlyHint: true}, permissions: {net: ["api.example.com"]},
		execute() { throw new Error("execute must not run"); } }`)
	def, err := js.Describe(evalCtx(t), code, js.Options{File: "weather.js"})
	if err != nil {
		t.Fatal(err)
	}
	if def.Name != "weather" || def.Summary != "Weather now" || !def.Annotations.ReadOnlyHint ||
		def.Permissions == nil || def.Permissions.Net[0] != "api.example.com" || !strings.Contains(string(def.InputSchema), "city") {
		t.Errorf("definition %+v", def)
	}
	for src, want := range map[string]string{
		`var __lathe_tool = {};`: "no execute",
		`var x = 1;`:             "no default export",
		string(module(`{ execute() {}, permissions: {nett: []} }`)): "permissions",
		string(module(`{ execute() {}, inputSchema: "str" }`)):      "inputSchema",
		`for (;;) {}`: "deadline",
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		_, err := js.Describe(ctx, []byte(src), js.Options{File: "bad.js"})
		cancel()
		if err == nil || (want != "deadline" && !strings.Contains(err.Error(), want)) || (want == "deadline" && !errors.Is(err, context.DeadlineExceeded)) {
			t.Errorf("Describe(%q) = %v, want an error about %s", src, err, want)
		}
	}
}

func TestSyntaxErrorAtNew(t *testing.T) {
	_, err := js.New([]byte("var __lathe_tool = {\n  default: { execute() { return ) } }\n};"), js.Options{File: "broken.js"})
	if err == nil || !strings.Contains(err.Error(), "broken.js") || !strings.Contains(err.Error(), "SyntaxError") {
		t.Errorf("New = %v, want a SyntaxError naming broken.js", err)
	}
}

// An error's stack points at the original file's line through the source
// map. The map here says that bundle line 3 is line 10 of tool.ts.
func TestSourceMappedStack(t *testing.T) {
	code := "var __lathe_tool = (() => { return { default: {\n" +
		"  execute() {\n" +
		"    throw new Error(\"mapped\");\n" +
		"  } } }; })();\n"
	// Lines 1-2 map to tool.ts line 1; line 3 to line 10 (1-based).
	smap := `{"version":3,"sources":["tool.ts"],"mappings":"AAAA;AAAA;AASA"}`
	opts := js.Options{File: "tool.ts", SourceMap: []byte(smap)}
	rt, err := js.New([]byte(code), opts)
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	out, err := rt.Execute(evalCtx(t), &tool.Definition{Name: "mapped"}, &tool.Call{Name: "mapped"})
	if err != nil {
		t.Fatal(err)
	}
	if !out.Result.IsError || !strings.Contains(out.Result.Text(), "tool.ts:10") {
		t.Errorf("error %q does not point at tool.ts:10", out.Result.Text())
	}
}

func TestCtxAPI(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("LATHE_JS_TEST_VAR", "v1")
	tl := newTool(t, "api", `{ async execute(args, ctx) {
		ctx.fs.writeFile("d/a.txt", "héllo", {makeDirs: true});
		ctx.fs.writeFile("d/a.txt", new Uint8Array([33]), {append: true});
		const text = ctx.fs.readFile("d/a.txt");
		const bytes = ctx.fs.readBytes("d/a.txt");
		const names = ctx.fs.list("d").map((e) => e.name + ":" + e.type);
		const st = await ctx.fs.stat("d/a.txt");
		ctx.fs.remove("d", {recursive: true});
		let gone = false;
		try { ctx.fs.stat("d"); } catch (e) { gone = typeof e.code === "number"; }
		const run = ctx.run(["cat"], {stdin: "piped"});
		ctx.log("a log line", "info");
		ctx.progress(1, 2, "half");
		return {text, n: bytes.length, last: bytes[bytes.length - 1], names, size: st.size, gone,
			run: run.exitCode + run.stdout, env: ctx.env("LATHE_JS_TEST_VAR"), unset: ctx.env("LATHE_JS_UNSET") === undefined,
			root: ctx.root === args.root};
	} }`, dir, host.Permissions{Read: []string{"."}, Write: []string{"."}, Env: []string{"LATHE_JS_TEST_VAR", "LATHE_JS_UNSET"}, Run: []string{"cat"}})
	out := call(t, tl, map[string]any{"root": dir}, time.Minute)
	if out.Result == nil || out.Result.IsError {
		t.Fatalf("got %q", textOf(out))
	}
	want := `{"text":"héllo!","n":7,"last":33,"names":["a.txt:file"],"size":7,"gone":true,"run":"0piped","env":"v1","unset":true,"root":true}`
	if string(out.Result.Structured) != want {
		t.Errorf("got  %s\nwant %s", out.Result.Structured, want)
	}
}

func TestAskSelect(t *testing.T) {
	tl := newTool(t, "pick", `{ execute(args, ctx) {
		return "picked " + ctx.ask({ id: "color", text: "Which color?", type: { select: ["red", "blue"] } });
	} }`, "", host.Permissions{})
	e := lathe.New(lathe.Options{})
	defer e.Close()
	if err := e.Register(tl); err != nil {
		t.Fatal(err)
	}
	out := e.Call(evalCtx(t), &tool.Call{Name: "pick", Arguments: json.RawMessage(`{}`)})
	if q := out.Question; q == nil || q.ID != "color" || q.Kind != tool.QuestionSelect || len(q.Options) != 2 {
		t.Fatalf("got %+v, want the select question", out)
	}
	out = e.Call(evalCtx(t), &tool.Call{Name: "pick", Arguments: json.RawMessage(`{}`), Answers: map[string]any{"color": "blue"}})
	wantText(t, out, "picked blue")
}

// gate is a bound function that waits, up to a few seconds, until want
// calls have been inside it at once, and records the most it saw: calls
// run one after another would each wait alone and report 1.
type gate struct {
	mu     sync.Mutex
	in     int
	peak   int
	want   int
	change chan struct{}
}

func newGate(want int) *gate { return &gate{want: want, change: make(chan struct{})} }

func (g *gate) fn(ctx context.Context, arg json.RawMessage) (json.RawMessage, error) {
	g.mu.Lock()
	g.in++
	g.peak = max(g.peak, g.in)
	close(g.change)
	g.change = make(chan struct{})
	g.mu.Unlock()
	defer func() {
		g.mu.Lock()
		g.in--
		g.mu.Unlock()
	}()
	wait := time.After(3 * time.Second)
	for {
		g.mu.Lock()
		full, ch := g.peak >= g.want, g.change
		g.mu.Unlock()
		if full {
			return arg, nil
		}
		select {
		case <-ch:
		case <-wait:
			return arg, nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

func (g *gate) max() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.peak
}

// Calls a script starts before awaiting them run at once, up to
// MaxConcurrent and never more; their answers reach the right promises.
func TestEvalConcurrentCalls(t *testing.T) {
	for _, tc := range []struct{ calls, limit, want int }{{4, 4, 4}, {6, 2, 2}, {3, 1, 1}} {
		t.Run(fmt.Sprintf("%d calls, %d at once", tc.calls, tc.limit), func(t *testing.T) {
			g := newGate(tc.limit)
			res, err := js.Eval(evalCtx(t), `
				const ids = Array.from({length: `+fmt.Sprint(tc.calls)+`}, (_, i) => i);
				return await Promise.all(ids.map(i => tools.gate({i})));`, js.EvalOptions{
				MaxConcurrent: tc.limit,
				Bindings:      map[string]map[string]js.Func{"tools": {"gate": g.fn}},
			})
			if err != nil {
				t.Fatal(err)
			}
			var got []struct{ I int }
			if err := json.Unmarshal(res, &got); err != nil || len(got) != tc.calls {
				t.Fatalf("result %s: %v", res, err)
			}
			for i, v := range got {
				if v.I != i {
					t.Fatalf("answer %d went to promise %d: %s", v.I, i, res)
				}
			}
			if p := g.max(); p != tc.want {
				t.Errorf("at most %d calls ran at once, want %d", p, tc.want)
			}
		})
	}
}

// A script that returns while its calls run ends them: their context is
// done, and Eval returns only once they have.
func TestEvalCallsEndWithTheScript(t *testing.T) {
	var running, ended atomic.Int32
	started := make(chan struct{}, 2)
	slow := func(ctx context.Context, arg json.RawMessage) (json.RawMessage, error) {
		running.Add(1)
		defer ended.Add(1)
		started <- struct{}{}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(20 * time.Second):
			return nil, errors.New("not cancelled")
		}
	}
	start := time.Now()
	res, err := js.Eval(evalCtx(t), `
		tools.slow({}); tools.slow({});
		await tools.ready({});
		return "returned";`, js.EvalOptions{Bindings: map[string]map[string]js.Func{"tools": {
		"slow": slow,
		"ready": func(ctx context.Context, arg json.RawMessage) (json.RawMessage, error) {
			<-started
			<-started
			return nil, nil
		},
	}}})
	if err != nil || string(res) != `"returned"` {
		t.Fatalf("Eval = %s, %v", res, err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("Eval took %s: the calls left running were not cancelled", d)
	}
	if running.Load() != 2 || ended.Load() != 2 {
		t.Errorf("%d calls ran and %d had ended when Eval returned, want 2 and 2", running.Load(), ended.Load())
	}
}
