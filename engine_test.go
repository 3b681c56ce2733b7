package lathe_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/lathe-tools/lathe"
	"github.com/lathe-tools/lathe/runtime/builtin"
	"github.com/lathe-tools/lathe/schema"
	"github.com/lathe-tools/lathe/tool"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type addIn struct {
	A     int `json:"a" jsonschema:"description=first term"`
	B     int `json:"b" jsonschema:"description=second term,minimum=0"`
	Scale int `json:"scale,omitempty" jsonschema:"default=1"`
}

type addOut struct {
	Sum int `json:"sum"`
}

func add(_ context.Context, in addIn) (addOut, error) {
	return addOut{Sum: (in.A + in.B) * in.Scale}, nil
}

func newEngine(t *testing.T, opts lathe.Options, tools ...tool.Tool) *lathe.Engine {
	t.Helper()
	e := lathe.New(opts)
	t.Cleanup(func() { e.Close() })
	if err := e.Register(tools...); err != nil {
		t.Fatal(err)
	}
	return e
}

func call(t *testing.T, e *lathe.Engine, name, args string) *tool.Outcome {
	t.Helper()
	return e.Call(context.Background(), &tool.Call{Name: name, Arguments: json.RawMessage(args)})
}

func addTool() tool.Tool {
	return builtin.Must(builtin.Func(tool.Definition{Name: "add", Summary: "Add two numbers."}, add))
}

func TestCallSuccess(t *testing.T) {
	e := newEngine(t, lathe.Options{}, addTool())
	out := call(t, e, "add", `{"a":2,"b":3}`)
	if err := out.Err(); err != nil {
		t.Fatal(err)
	}
	if got := string(out.Result.Structured); got != `{"sum":5}` {
		t.Errorf("structured = %s, want {\"sum\":5} (default scale 1 applied)", got)
	}
	if got := out.Result.Text(); got != `{"sum":5}` {
		t.Errorf("text = %q", got)
	}
}

func TestCoercionOfStringEncodedArguments(t *testing.T) {
	e := newEngine(t, lathe.Options{}, addTool())
	out := call(t, e, "add", `{"a":"2","b":"3","scale":"10"}`)
	if err := out.Err(); err != nil {
		t.Fatal(err)
	}
	if got := string(out.Result.Structured); got != `{"sum":50}` {
		t.Errorf("structured = %s", got)
	}
}

func TestInvalidArgumentsListsEveryViolation(t *testing.T) {
	e := newEngine(t, lathe.Options{}, addTool())
	out := call(t, e, "add", `{"b":-1,"scale":"x"}`)
	err := out.Err()
	if !errors.Is(err, tool.ErrInvalidArguments) {
		t.Fatalf("err = %v, want invalid arguments", err)
	}
	if out.Result.ErrorKind != tool.KindInvalidArguments {
		t.Errorf("kind = %q", out.Result.ErrorKind)
	}
	var ve *schema.ValidationError
	if !errors.As(err, &ve) {
		t.Fatalf("err %v carries no *schema.ValidationError", err)
	}
	pointers := map[string]bool{}
	for _, v := range ve.Violations {
		pointers[v.Pointer] = true
	}
	for _, p := range []string{"/b", "/scale"} {
		if !pointers[p] {
			t.Errorf("no violation at %s in %v", p, ve.Violations)
		}
	}
	text := out.Result.Text()
	for _, want := range []string{"/b", "/scale", `"a"`} {
		if !strings.Contains(text, want) {
			t.Errorf("message %q does not mention %s", text, want)
		}
	}
}

func TestMalformedJSON(t *testing.T) {
	e := newEngine(t, lathe.Options{}, addTool())
	out := call(t, e, "add", `{"a":1,`)
	if !errors.Is(out.Err(), tool.ErrInvalidArguments) {
		t.Fatalf("err = %v", out.Err())
	}
}

func TestUnknownTool(t *testing.T) {
	e := newEngine(t, lathe.Options{}, addTool())
	out := call(t, e, "sub", `{}`)
	if !errors.Is(out.Err(), tool.ErrUnknownTool) || out.Result.ErrorKind != tool.KindUnknownTool {
		t.Fatalf("outcome = %+v", out.Result)
	}
	if !strings.Contains(out.Result.Text(), "sub") {
		t.Errorf("message %q does not name the tool", out.Result.Text())
	}
}

func TestToolErrorIsAResult(t *testing.T) {
	fail := builtin.Must(builtin.Func(tool.Definition{Name: "fail"}, func(context.Context, struct{}) (string, error) {
		return "", errors.New("disk full")
	}))
	e := newEngine(t, lathe.Options{}, fail)
	out := call(t, e, "fail", ``)
	if !errors.Is(out.Err(), tool.ErrToolError) || out.Result.Text() != "disk full" {
		t.Fatalf("outcome = %+v, err %v", out.Result, out.Err())
	}
}

func TestPanicBecomesRuntimeFailure(t *testing.T) {
	boom := builtin.Must(builtin.Func(tool.Definition{Name: "boom"}, func(context.Context, struct{}) (string, error) {
		panic("kaboom")
	}))
	e := newEngine(t, lathe.Options{}, boom, addTool())
	out := call(t, e, "boom", `{}`)
	if !errors.Is(out.Err(), tool.ErrRuntimeFailure) || !strings.Contains(out.Result.Text(), "kaboom") {
		t.Fatalf("outcome = %+v", out.Result)
	}
	// The engine lives on.
	if err := call(t, e, "add", `{"a":1,"b":1}`).Err(); err != nil {
		t.Fatal(err)
	}
}

// sleeper waits for its context to end and returns its error, as a Go tool
// that watches its context does.
func sleeper() tool.Tool {
	return builtin.Must(builtin.Func(tool.Definition{Name: "sleep"}, func(ctx context.Context, _ struct{}) (string, error) {
		<-ctx.Done()
		return "", ctx.Err()
	}))
}

func TestTimeout(t *testing.T) {
	s := sleeper()
	s.Timeout = 20 * time.Millisecond
	e := newEngine(t, lathe.Options{}, s)
	out := call(t, e, "sleep", `{}`)
	if !errors.Is(out.Err(), tool.ErrTimeout) || out.Result.ErrorKind != tool.KindTimeout {
		t.Fatalf("outcome = %+v", out.Result)
	}
}

func TestDefaultTimeoutAndRuntimeThatIgnoresContext(t *testing.T) {
	release := make(chan struct{})
	defer close(release) // lets the stuck goroutine finish before goleak looks
	// A runtime the engine knows nothing about (not tool.Cooperative) runs
	// on a goroutine of its own, so the deadline holds even when it ignores
	// its context.
	stuck := tool.RuntimeFunc(func(context.Context, *tool.Definition, *tool.Call) (*tool.Outcome, error) {
		<-release
		return &tool.Outcome{Result: tool.TextResult("late")}, nil
	})
	e := newEngine(t, lathe.Options{Timeout: 20 * time.Millisecond},
		tool.Tool{Definition: tool.Definition{Name: "stuck"}, Runtime: stuck})
	out := call(t, e, "stuck", `{}`)
	if !errors.Is(out.Err(), tool.ErrTimeout) {
		t.Fatalf("outcome = %+v", out.Result)
	}
}

// A builtin Go function that ignores its context (stuck in a system call, a
// FIFO's open say) still ends its call at the deadline, or when the caller
// cancels: the call returns with a timeout or a cancellation while the
// function runs on, until it returns by itself.
func TestBuiltinThatIgnoresItsContext(t *testing.T) {
	release := make(chan struct{})
	finished := make(chan struct{}, 2)
	stuck := builtin.Must(builtin.Func(tool.Definition{Name: "stuck"}, func(context.Context, struct{}) (string, error) {
		<-release
		finished <- struct{}{}
		return "late", nil
	}))
	e := newEngine(t, lathe.Options{Timeout: 30 * time.Millisecond}, stuck)

	ended := make(chan *tool.Outcome, 1)
	go func() { ended <- call(t, e, "stuck", `{}`) }()
	select {
	case out := <-ended:
		if !errors.Is(out.Err(), tool.ErrTimeout) || out.Result.ErrorKind != tool.KindTimeout {
			t.Fatalf("outcome = %+v", out.Result)
		}
	case <-time.After(10 * time.Second):
		close(release)
		t.Fatal("a builtin call that ignores its context outlived its deadline by 10s")
	}

	e = newEngine(t, lathe.Options{Timeout: time.Hour}, stuck)
	ctx, cancel := context.WithCancel(context.Background())
	go func() { ended <- e.Call(ctx, &tool.Call{Name: "stuck", Arguments: []byte(`{}`)}) }()
	time.AfterFunc(10*time.Millisecond, cancel)
	select {
	case out := <-ended:
		if !errors.Is(out.Err(), tool.ErrCancelled) {
			t.Fatalf("outcome = %+v", out.Result)
		}
	case <-time.After(10 * time.Second):
		close(release)
		t.Fatal("a builtin call that ignores its context outlived its cancellation by 10s")
	}

	// The functions are still running; released, they end, and their late
	// results go nowhere (goleak checks that no goroutine is left).
	close(release)
	for range 2 {
		select {
		case <-finished:
		case <-time.After(10 * time.Second):
			t.Fatal("a released function did not return")
		}
	}
}

func TestPanicOnTheRuntimesOwnGoroutine(t *testing.T) {
	rt := tool.RuntimeFunc(func(context.Context, *tool.Definition, *tool.Call) (*tool.Outcome, error) {
		panic("from a foreign runtime")
	})
	e := newEngine(t, lathe.Options{}, tool.Tool{Definition: tool.Definition{Name: "foreign"}, Runtime: rt})
	out := call(t, e, "foreign", `{}`)
	if !errors.Is(out.Err(), tool.ErrRuntimeFailure) || !strings.Contains(out.Result.Text(), "from a foreign runtime") {
		t.Fatalf("outcome = %+v", out.Result)
	}
}

func TestCancellation(t *testing.T) {
	e := newEngine(t, lathe.Options{}, sleeper())
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(10*time.Millisecond, cancel)
	out := e.Call(ctx, &tool.Call{Name: "sleep"})
	if !errors.Is(out.Err(), tool.ErrCancelled) || out.Result.ErrorKind != tool.KindCancelled {
		t.Fatalf("outcome = %+v", out.Result)
	}
}

func TestOutputCap(t *testing.T) {
	big := builtin.Must(builtin.Func(tool.Definition{Name: "big"}, func(context.Context, struct{}) (string, error) {
		return strings.Repeat("é", 100), nil // 200 bytes
	}))
	e := newEngine(t, lathe.Options{MaxOutputBytes: 51}, big)
	out := call(t, e, "big", `{}`)
	if err := out.Err(); err != nil {
		t.Fatal(err)
	}
	c := out.Result.Content
	if len(c) != 2 {
		t.Fatalf("content = %+v, want the cut text and a note", c)
	}
	if c[0].Text != strings.Repeat("é", 25) {
		t.Errorf("cut text = %q (%d bytes), want 25 runes cut at a rune boundary", c[0].Text, len(c[0].Text))
	}
	if !strings.Contains(c[1].Text, "output truncated") || !strings.Contains(c[1].Text, "51-byte cap") {
		t.Errorf("note = %q", c[1].Text)
	}
}

func TestOutputCapDropsBinaryAndStructured(t *testing.T) {
	r := &tool.Result{
		Content:    []tool.Content{{Type: tool.ContentImage, Data: make([]byte, 100), MIMEType: "image/png"}, {Type: tool.ContentText, Text: "ok"}},
		Structured: json.RawMessage(`{"x":"` + strings.Repeat("a", 100) + `"}`),
	}
	rt := tool.RuntimeFunc(func(context.Context, *tool.Definition, *tool.Call) (*tool.Outcome, error) {
		return &tool.Outcome{Result: r}, nil
	})
	e := newEngine(t, lathe.Options{MaxOutputBytes: 50}, tool.Tool{Definition: tool.Definition{Name: "img"}, Runtime: rt})
	out := call(t, e, "img", `{}`)
	if out.Result.Structured != nil {
		t.Errorf("structured kept: %s", out.Result.Structured)
	}
	if len(out.Result.Content) != 2 || out.Result.Content[0].Text != "ok" ||
		!strings.Contains(out.Result.Content[1].Text, "image block of 100 bytes omitted") {
		t.Errorf("content = %+v", out.Result.Content)
	}
}

func TestQuestionRoundTrip(t *testing.T) {
	var runs atomic.Int32
	confirm := builtin.Must(builtin.Func(tool.Definition{Name: "confirm"}, func(ctx context.Context, in struct {
		File string `json:"file"`
	}) (string, error) {
		runs.Add(1)
		a, err := builtin.Ask(ctx, tool.Question{ID: "overwrite", Text: "Overwrite " + in.File + "?", Kind: tool.QuestionBoolean})
		if err != nil {
			return "", err
		}
		if builtin.AnswerBool(a) {
			return "overwrote " + in.File, nil
		}
		return "kept " + in.File, nil
	}))
	e := newEngine(t, lathe.Options{}, confirm)
	first := call(t, e, "confirm", `{"file":"a.txt"}`)
	if first.Question == nil || first.Result != nil {
		t.Fatalf("first outcome = %+v, want a question", first)
	}
	if q := first.Question; q.ID != "overwrite" || q.Kind != tool.QuestionBoolean || q.Text != "Overwrite a.txt?" {
		t.Errorf("question = %+v", q)
	}
	if first.Err() != nil {
		t.Errorf("a question is not an error: %v", first.Err())
	}
	for answer, want := range map[any]string{true: "overwrote a.txt", "no": "kept a.txt"} {
		out := e.Call(context.Background(), &tool.Call{Name: "confirm", Arguments: json.RawMessage(`{"file":"a.txt"}`),
			Answers: map[string]any{"overwrite": answer}})
		if out.Result == nil || out.Result.Text() != want {
			t.Errorf("answer %v: outcome = %+v, want %q", answer, out, want)
		}
	}
	if runs.Load() != 3 {
		t.Errorf("tool ran %d times, want 3", runs.Load())
	}
}

func TestRegisterRejectsBadTools(t *testing.T) {
	rt := tool.RuntimeFunc(func(context.Context, *tool.Definition, *tool.Call) (*tool.Outcome, error) { return nil, nil })
	cases := []struct {
		name string
		t    tool.Tool
		want string
	}{
		{"bad name", tool.Tool{Definition: tool.Definition{Name: "1bad"}, Runtime: rt}, "invalid tool name"},
		{"long name", tool.Tool{Definition: tool.Definition{Name: strings.Repeat("a", 65)}, Runtime: rt}, "invalid tool name"},
		{"no runtime", tool.Tool{Definition: tool.Definition{Name: "x"}}, "no runtime"},
		{"bad schema", tool.Tool{Definition: tool.Definition{Name: "x", InputSchema: json.RawMessage(`{"type":"string"}`)}, Runtime: rt}, "input schema"},
		{"collision", addTool(), "collides"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := newEngine(t, lathe.Options{}, addTool())
			other := tool.Tool{Definition: tool.Definition{Name: "other"}, Runtime: rt}
			err := e.Register(other, c.t)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want it to mention %q", err, c.want)
			}
			if _, ok := e.Lookup("other"); ok {
				t.Error("a failed Register added some of its tools")
			}
		})
	}
}

func TestRuntimeGoErrorIsRuntimeFailure(t *testing.T) {
	rt := tool.RuntimeFunc(func(context.Context, *tool.Definition, *tool.Call) (*tool.Outcome, error) {
		return nil, errors.New("connection lost")
	})
	e := newEngine(t, lathe.Options{}, tool.Tool{Definition: tool.Definition{Name: "up", Runtime: "mcp"}, Runtime: rt})
	out := call(t, e, "up", `{}`)
	var te *tool.Error
	if !errors.As(out.Err(), &te) || te.Kind != tool.KindRuntimeFailure || te.Stage != "execute" || te.Runtime != "mcp" {
		t.Fatalf("err = %#v", out.Err())
	}
}

func TestMalformedOutcomes(t *testing.T) {
	for name, o := range map[string]*tool.Outcome{
		"nil":         nil,
		"empty":       {},
		"both":        {Result: tool.TextResult("x"), Question: &tool.Question{ID: "q"}},
		"question-id": {Question: &tool.Question{Text: "?"}},
	} {
		rt := tool.RuntimeFunc(func(context.Context, *tool.Definition, *tool.Call) (*tool.Outcome, error) { return o, nil })
		e := newEngine(t, lathe.Options{}, tool.Tool{Definition: tool.Definition{Name: "t"}, Runtime: rt})
		if err := call(t, e, "t", `{}`).Err(); !errors.Is(err, tool.ErrRuntimeFailure) {
			t.Errorf("%s: err = %v, want runtime failure", name, err)
		}
	}
}

func TestMiddlewareSeesValidatedArguments(t *testing.T) {
	var seen any
	deny := func(next lathe.Handler) lathe.Handler {
		return func(ctx context.Context, inv *lathe.Invocation) (*tool.Outcome, error) {
			seen = inv.Args
			if inv.Call.Name == "add" {
				return nil, &tool.Error{Kind: tool.KindDenied, Tool: inv.Call.Name, Stage: "policy", Message: "not today"}
			}
			return next(ctx, inv)
		}
	}
	e := newEngine(t, lathe.Options{Middleware: []lathe.Middleware{deny}}, addTool())
	out := call(t, e, "add", `{"a":"1","b":2}`)
	if !errors.Is(out.Err(), tool.ErrDenied) {
		t.Fatalf("err = %v", out.Err())
	}
	if got := fmt.Sprint(seen); !strings.Contains(got, "scale:1") || !strings.Contains(got, "a:1") {
		t.Errorf("middleware saw %v, want coerced arguments with defaults", got)
	}
	// Invalid arguments never reach the middleware.
	seen = nil
	call(t, e, "add", `{}`)
	if seen != nil {
		t.Errorf("middleware ran on invalid arguments: %v", seen)
	}
}

func TestToolsAndUnregister(t *testing.T) {
	e := newEngine(t, lathe.Options{}, addTool(), sleeper())
	var names []string
	for _, d := range e.Tools() {
		names = append(names, d.Name)
	}
	if strings.Join(names, ",") != "add,sleep" {
		t.Errorf("tools = %v", names)
	}
	d, _ := e.Lookup("add")
	if d.Runtime != "builtin" || len(d.InputSchema) == 0 || len(d.OutputSchema) == 0 {
		t.Errorf("definition = %+v", d)
	}
	e.Unregister("add")
	if _, ok := e.Lookup("add"); ok {
		t.Error("add still registered")
	}
}

type closingRuntime struct{ closed atomic.Int32 }

func (c *closingRuntime) Execute(context.Context, *tool.Definition, *tool.Call) (*tool.Outcome, error) {
	return &tool.Outcome{Result: tool.TextResult("ok")}, nil
}
func (c *closingRuntime) Close() error { c.closed.Add(1); return nil }

func TestCloseClosesRuntimesOnce(t *testing.T) {
	rt := &closingRuntime{}
	e := lathe.New(lathe.Options{})
	if err := e.Register(tool.Tool{Definition: tool.Definition{Name: "a"}, Runtime: rt},
		tool.Tool{Definition: tool.Definition{Name: "b"}, Runtime: rt}); err != nil {
		t.Fatal(err)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	e.Close()
	if rt.closed.Load() != 1 {
		t.Errorf("closed %d times", rt.closed.Load())
	}
	if err := call(t, e, "a", `{}`).Err(); !errors.Is(err, tool.ErrRuntimeFailure) {
		t.Errorf("call after close: %v", err)
	}
}

func TestOutputSchemaMismatchIsAWarning(t *testing.T) {
	rt := tool.RuntimeFunc(func(_ context.Context, _ *tool.Definition, c *tool.Call) (*tool.Outcome, error) {
		return &tool.Outcome{Result: &tool.Result{Structured: c.Arguments}}, nil
	})
	echo := tool.Tool{Definition: tool.Definition{Name: "echo",
		OutputSchema: json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]}`)}, Runtime: rt}
	var logs strings.Builder
	e := newEngine(t, lathe.Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))}, echo)

	out := call(t, e, "echo", `{"n":"seven"}`)
	if err := out.Err(); err != nil {
		t.Fatalf("a mismatched output failed the call: %v", err)
	}
	if len(out.Result.Structured) != 0 {
		t.Errorf("structured output %s that breaks the output schema was handed on", out.Result.Structured)
	}
	if c := out.Result.Content; len(c) != 2 || c[0].Text != `{"n":"seven"}` ||
		!strings.Contains(c[1].Text, "structured output left out") || !strings.Contains(c[1].Text, "/n") {
		t.Errorf("content = %+v, want the structured JSON as text and a note naming /n", c)
	}
	if !strings.Contains(logs.String(), "does not match the output schema") || !strings.Contains(logs.String(), "/n") {
		t.Errorf("log = %q, want a warning naming /n", logs.String())
	}

	logs.Reset()
	out = call(t, e, "echo", `{"n":7}`)
	if logs.Len() != 0 {
		t.Errorf("log = %q for a matching output", logs.String())
	}
	if string(out.Result.Structured) != `{"n":7}` || len(out.Result.Content) != 1 {
		t.Errorf("a matching output changed: %+v", out.Result)
	}
}

// TestOutputSchemaCheckedWithoutALogger: the check once ran only when a
// logger would read its warning, so an engine without one (the MCP server's,
// a library user's) handed on structured output that broke the schema. The
// shared result the runtime returns is not changed.
func TestOutputSchemaCheckedWithoutALogger(t *testing.T) {
	shared := &tool.Result{Content: []tool.Content{{Type: tool.ContentText, Text: "done"}}, Structured: json.RawMessage(`{"n":"x"}`)}
	rt := tool.RuntimeFunc(func(context.Context, *tool.Definition, *tool.Call) (*tool.Outcome, error) {
		return &tool.Outcome{Result: shared}, nil
	})
	e := newEngine(t, lathe.Options{}, tool.Tool{Definition: tool.Definition{Name: "fixed",
		OutputSchema: json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer"}}}`)}, Runtime: rt})
	for range 2 {
		out := call(t, e, "fixed", `{}`)
		if out.Result.IsError || len(out.Result.Structured) != 0 || len(out.Result.Content) != 2 {
			t.Fatalf("got %+v, want a success without the structured output, with a note", out.Result)
		}
	}
	if string(shared.Structured) != `{"n":"x"}` || len(shared.Content) != 1 {
		t.Fatalf("the runtime's result was changed: %+v", shared)
	}
}

func TestOutputCapOddBlocks(t *testing.T) {
	r := &tool.Result{Content: []tool.Content{
		// A text block that also carries data must not trip the cutter.
		{Type: tool.ContentText, Text: "abc", Data: make([]byte, 100)},
		{Type: tool.ContentText, Text: "tail"},
	}, Structured: json.RawMessage(`{"small":1}`)}
	rt := tool.RuntimeFunc(func(context.Context, *tool.Definition, *tool.Call) (*tool.Outcome, error) {
		return &tool.Outcome{Result: r}, nil
	})
	e := newEngine(t, lathe.Options{MaxOutputBytes: 20}, tool.Tool{Definition: tool.Definition{Name: "odd"}, Runtime: rt})
	out := call(t, e, "odd", `{}`)
	if out.Err() != nil {
		t.Fatal(out.Err())
	}
	if string(out.Result.Structured) != `{"small":1}` {
		t.Errorf("structured under the cap was dropped: %s", out.Result.Structured)
	}
	c := out.Result.Content
	if len(c) != 2 || c[0].Text != "tail" || !strings.Contains(c[1].Text, "text block of 103 bytes omitted") {
		t.Errorf("content = %+v", c)
	}
}

func TestCallersSoonerDeadlineGoverns(t *testing.T) {
	e := newEngine(t, lathe.Options{Timeout: time.Hour}, sleeper())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	out := e.Call(ctx, &tool.Call{Name: "sleep"})
	// The message names the caller's deadline, not the engine's hour: the
	// time left of it when the tool started, or, on a machine so busy that
	// none was left, that it had passed.
	if !errors.Is(out.Err(), tool.ErrTimeout) ||
		!regexp.MustCompile(`stopped after [1-9][0-9]*ms;|the caller's deadline had passed`).MatchString(out.Result.Text()) {
		t.Fatalf("outcome = %+v", out.Result)
	}
}

// A caller's deadline that has passed before the tool runs is a timeout
// that says so, not a run of a negative length ("stopped after -7ms").
func TestCallersPassedDeadline(t *testing.T) {
	e := newEngine(t, lathe.Options{Timeout: time.Hour}, sleeper())
	ctx, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel()
	out := e.Call(ctx, &tool.Call{Name: "sleep"})
	if !errors.Is(out.Err(), tool.ErrTimeout) || strings.Contains(out.Result.Text(), "-") {
		t.Fatalf("outcome = %+v", out.Result)
	}
}

// The goroutines kept to run builtin calls end with the engine.
func TestCloseEndsIdleWorkers(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	e := lathe.New(lathe.Options{})
	if err := e.Register(sleeper()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() { e.Call(ctx, &tool.Call{Name: "sleep", Arguments: []byte(`{}`)}) })
	}
	time.Sleep(10 * time.Millisecond)
	cancel()
	wg.Wait()
	e.Close()
}

// TestRegisterRefusesBadSchemas: registration checks each schema, even when
// it leaves the compilation to the first call, and refuses a bad one with
// the tool's name and the place in the schema.
func TestRegisterRefusesBadSchemas(t *testing.T) {
	rt := tool.RuntimeFunc(func(context.Context, *tool.Definition, *tool.Call) (*tool.Outcome, error) { return nil, nil })
	for _, c := range []struct {
		name, input, output string
		want                []string
	}{
		{"wrong type keyword", `{"type":"object","properties":{"n":{"type":"int"}}}`, "",
			[]string{`tool "bad": input schema: schema: /properties/n/type: `}},
		{"bad regex", `{"properties":{"s":{"type":"string","pattern":"a(b"}}}`, "",
			[]string{`tool "bad": input schema: schema: /properties/s/pattern: must be a valid regex`}},
		{"ref to nowhere", `{"properties":{"s":{"$ref":"#/$defs/gone"}}}`, "",
			[]string{`tool "bad": input schema: schema: /properties/s/$ref: reference "#/$defs/gone" points to nothing`}},
		{"not an object", `"object"`, "", []string{`tool "bad": input schema: schema: must be a JSON object, not a string`}},
		{"bad output schema", `{}`, `{"properties":{"r":{"minimum":"1"}}}`,
			[]string{`tool "bad": output schema: schema: /properties/r/minimum: must be number`}},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newEngine(t, lathe.Options{})
			bad := tool.Tool{Definition: tool.Definition{Name: "bad", InputSchema: json.RawMessage(c.input)}, Runtime: rt}
			if c.output != "" {
				bad.Definition.OutputSchema = json.RawMessage(c.output)
			}
			err := e.Register(bad)
			if err == nil {
				t.Fatal("Register accepted the tool")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("err = %v\nwant it to hold %q", err, w)
				}
			}
			if _, ok := e.Lookup("bad"); ok {
				t.Error("the refused tool is registered")
			}
		})
	}
}
