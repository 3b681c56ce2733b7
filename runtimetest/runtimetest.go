// Package runtimetest is the conformance suite that every lathe runtime
// passes: one table of behaviours, run against each runtime, so that a tool
// behaves the same to a model whether it is a Go function, a process or
// anything later.
//
// A runtime's test supplies the tools the suite names (see [Specs]), built
// the runtime's way, and calls [Run]:
//
//	func TestConformance(t *testing.T) {
//		runtimetest.Run(t, func(t *testing.T, name string) tool.Tool {
//			return myRuntimeTool(t, name) // a tool that does what Specs says of name
//		})
//	}
//
// The suite runs each tool through an engine, as a user would, and checks
// success, a tool's own error, bad arguments, a timeout, a cancellation, a
// crash, huge output and the round trip of a question. A tool that runs
// processes writes their ids to the marker file it is given (see [Sleep]),
// and the suite checks that none of them is left running once the engine is
// closed.
//
// A runtime whose tools run where lathe cannot watch them, such as an MCP
// server reached over the network, runs the suite with [RunOptions] and
// [Options].Remote.
package runtimetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lathe-tools/lathe"
	"github.com/lathe-tools/lathe/tool"
)

// Names of the tools the suite asks for; [Specs] says what each must do.
const (
	Echo  = "echo"
	Fail  = "fail"
	Sleep = "sleep"
	Crash = "crash"
	Huge  = "huge"
	Ask   = "ask"
)

// Spec is one tool the suite needs.
type Spec struct {
	Name string
	// Does says what the tool must do.
	Does string
	// InputSchema is the schema the tool must have, or one equivalent to it:
	// a runtime that infers its own (from a Go type, from the binary) must
	// require and reject the same arguments.
	InputSchema json.RawMessage
}

// Specs returns the tools of the suite.
func Specs() []Spec {
	return []Spec{
		{Echo, `Succeed with the argument "text" as the only text content, and {"text": text} as structured content.`,
			obj(`"text":{"type":"string"}`, "text")},
		{Fail, `Fail as the tool (an error result, kind tool_error) with a message that contains the argument "message".`,
			obj(`"message":{"type":"string"}`, "message")},
		{Sleep, `Append lines "pid N" for every process it runs (none for a Go function) and then a line "started" ` +
			`to the file named by the argument "marker", then wait until stopped, without end.`,
			obj(`"marker":{"type":"string"}`, "marker")},
		{Crash, `Die without an answer, after writing the argument "message" to standard error; a Go function ` +
			`panics with the message; a remote server (see Options.Remote) drops the connection and forgets the session.`,
			obj(`"message":{"type":"string"}`, "message")},
		{Huge, `Succeed with one text block of "size" bytes, all "x" (or be stopped by its runtime's own cap).`,
			obj(`"size":{"type":"integer","minimum":1}`, "size")},
		{Ask, `Ask the boolean question "confirm" with a text that contains the argument "subject"; answered yes, ` +
			`succeed with the text "confirmed SUBJECT"; answered no, fail as the tool with "declined SUBJECT".`,
			obj(`"subject":{"type":"string"}`, "subject")},
	}
}

func obj(props, required string) json.RawMessage {
	return json.RawMessage(`{"type":"object","properties":{` + props + `},"required":["` + required + `"],"additionalProperties":false}`)
}

// NewTool returns a tool that does what the [Spec] named name says, with
// that name. It is called once per subtest; t is the subtest's.
type NewTool func(t *testing.T, name string) tool.Tool

// maxOutput is the engine's output cap in the suite.
const maxOutput = 64 << 10

// Options adjust the suite to what a runtime can see of its tools.
type Options struct {
	// Remote says that the tools run in a process lathe neither started
	// nor can watch, such as an MCP server reached over the network. Such
	// a tool's crash reaches lathe only as a lost connection, so the suite
	// does not look for what the tool wrote to its standard error before
	// it died; every other check stays.
	Remote bool
}

// Run runs the suite.
func Run(t *testing.T, newTool NewTool) { RunOptions(t, newTool, Options{}) }

// RunOptions runs the suite, adjusted by opts.
func RunOptions(t *testing.T, newTool NewTool, opts Options) {
	t.Run("success", func(t *testing.T) { testSuccess(t, newTool) })
	t.Run("tool_error", func(t *testing.T) { testToolError(t, newTool) })
	t.Run("bad_arguments", func(t *testing.T) { testBadArguments(t, newTool) })
	t.Run("timeout", func(t *testing.T) { testTimeout(t, newTool) })
	t.Run("cancellation", func(t *testing.T) { testCancellation(t, newTool) })
	t.Run("crash", func(t *testing.T) { testCrash(t, newTool, opts) })
	t.Run("huge_output", func(t *testing.T) { testHuge(t, newTool) })
	t.Run("needs_input", func(t *testing.T) { testNeedsInput(t, newTool) })
	t.Run("concurrent", func(t *testing.T) { testConcurrent(t, newTool) })
}

// engine registers the named tools on a fresh engine, closed at the end of
// the test (before the checks that t.Cleanup registered earlier run).
func engine(t *testing.T, newTool NewTool, timeout time.Duration, names ...string) (*lathe.Engine, []tool.Tool) {
	t.Helper()
	e := lathe.New(lathe.Options{MaxOutputBytes: maxOutput})
	t.Cleanup(func() {
		if err := e.Close(); err != nil {
			t.Errorf("closing the engine: %v", err)
		}
	})
	var tools []tool.Tool
	for _, n := range names {
		tl := newTool(t, n)
		if tl.Definition.Name != n {
			t.Fatalf("newTool(%q) returned a tool named %q", n, tl.Definition.Name)
		}
		tl.Timeout = timeout
		tools = append(tools, tl)
	}
	if err := e.Register(tools...); err != nil {
		t.Fatal(err)
	}
	return e, tools
}

func call(e *lathe.Engine, ctx context.Context, name string, args any, answers map[string]any) *tool.Outcome {
	raw, err := json.Marshal(args)
	if err != nil {
		panic(err)
	}
	return e.Call(ctx, &tool.Call{ID: "conformance", Name: name, Arguments: raw, Answers: answers})
}

func wantKind(t *testing.T, out *tool.Outcome, kind tool.ErrorKind) {
	t.Helper()
	switch {
	case out.Result == nil:
		t.Fatalf("got a question %+v, want an error result of kind %s", out.Question, kind)
	case !out.Result.IsError:
		t.Fatalf("got success %q, want an error result of kind %s", excerpt(out.Result.Text()), kind)
	case out.Result.ErrorKind != kind:
		t.Fatalf("got an error of kind %s (%q), want kind %s", out.Result.ErrorKind, excerpt(out.Result.Text()), kind)
	}
}

func wantSuccess(t *testing.T, out *tool.Outcome) *tool.Result {
	t.Helper()
	switch {
	case out.Result == nil:
		t.Fatalf("got a question %+v, want success", out.Question)
	case out.Result.IsError:
		t.Fatalf("got an error of kind %s: %s", out.Result.ErrorKind, excerpt(out.Result.Text()))
	}
	return out.Result
}

func excerpt(s string) string {
	if len(s) > 300 {
		return s[:300] + "…"
	}
	return s
}

// trickyText goes through every layer unchanged: quotes, backslashes, shell
// syntax, HTML, a placeholder, non-ASCII and control characters.
const trickyText = "héllo \"wörld\" \\ 'x' ; rm -rf ~ $(id) `id` {text} <b>&amp;</b>\ttab\nline two ✓"

func testSuccess(t *testing.T, newTool NewTool) {
	e, _ := engine(t, newTool, 0, Echo)
	out := call(e, context.Background(), Echo, map[string]any{"text": trickyText}, nil)
	r := wantSuccess(t, out)
	if got := r.Text(); got != trickyText {
		t.Errorf("text = %q, want %q", got, trickyText)
	}
	var structured map[string]any
	if err := json.Unmarshal(r.Structured, &structured); err != nil {
		t.Fatalf("structured %s: %v", r.Structured, err)
	}
	if want := map[string]any{"text": trickyText}; !reflect.DeepEqual(structured, want) {
		t.Errorf("structured = %v, want %v", structured, want)
	}
}

func testToolError(t *testing.T, newTool NewTool) {
	e, _ := engine(t, newTool, 0, Fail, Echo)
	out := call(e, context.Background(), Fail, map[string]any{"message": "the disk is full"}, nil)
	wantKind(t, out, tool.KindToolError)
	if !strings.Contains(out.Result.Text(), "the disk is full") {
		t.Errorf("text %q does not hold the message", out.Result.Text())
	}
	if err := out.Err(); !errors.Is(err, tool.ErrToolError) {
		t.Errorf("Err() = %v, want one matching tool.ErrToolError", err)
	}
	// The engine carries on.
	wantSuccess(t, call(e, context.Background(), Echo, map[string]any{"text": "after"}, nil))
}

func testBadArguments(t *testing.T, newTool NewTool) {
	e, tools := engine(t, newTool, 0, Echo)
	for _, args := range []string{`{"text":5}`, `{}`, `{"text":"a","extra":1}`, `[1]`} {
		out := e.Call(context.Background(), &tool.Call{Name: Echo, Arguments: json.RawMessage(args)})
		if out.Result == nil || out.Result.ErrorKind != tool.KindInvalidArguments {
			t.Errorf("arguments %s: got %+v, want invalid_arguments", args, out.Result)
		}
	}
	// Called directly, past the engine's validation, the runtime neither
	// crashes nor hangs: it returns an outcome (the tool may have coped) or
	// an error.
	tl := tools[0]
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, args := range []string{`{"text":5}`, `{}`, `{"text":"a","extra":{"deep":[1,2,{"x":null}]}}`} {
		out, err := tl.Runtime.Execute(ctx, &tl.Definition, &tool.Call{Name: Echo, Arguments: json.RawMessage(args)})
		switch {
		case ctx.Err() != nil:
			t.Fatalf("Execute with %s did not return", args)
		case err == nil && (out == nil || (out.Result == nil) == (out.Question == nil)):
			t.Errorf("Execute with %s: got %+v and no error, want one outcome or an error", args, out)
		}
	}
}

func testTimeout(t *testing.T, newTool NewTool) {
	marker := t.TempDir() + "/marker"
	checkStopped(t, marker)
	e, _ := engine(t, newTool, 500*time.Millisecond, Sleep)
	start := time.Now()
	out := call(e, context.Background(), Sleep, map[string]any{"marker": marker}, nil)
	wantKind(t, out, tool.KindTimeout)
	if !errors.Is(out.Err(), tool.ErrTimeout) {
		t.Errorf("Err() = %v, want one matching tool.ErrTimeout", out.Err())
	}
	if d := time.Since(start); d > 20*time.Second {
		t.Errorf("the call returned after %s", d)
	}
}

func testCancellation(t *testing.T, newTool NewTool) {
	marker := t.TempDir() + "/marker"
	checkStopped(t, marker)
	e, _ := engine(t, newTool, time.Minute, Sleep)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan *tool.Outcome, 1)
	go func() { done <- call(e, ctx, Sleep, map[string]any{"marker": marker}, nil) }()
	waitStarted(t, marker, done)
	cancel()
	select {
	case out := <-done:
		wantKind(t, out, tool.KindCancelled)
	case <-time.After(20 * time.Second):
		t.Fatal("the call did not return after it was cancelled")
	}
}

// waitStarted waits until the sleep tool has written "started".
func waitStarted(t *testing.T, marker string, done <-chan *tool.Outcome) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		b, _ := os.ReadFile(marker)
		if strings.Contains(string(b), "started") {
			return
		}
		select {
		case out := <-done:
			t.Fatalf("the sleep tool ended before it started: %+v", out.Result)
		case <-time.After(5 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatal("the sleep tool did not write \"started\" to its marker file")
		}
	}
}

// checkStopped registers a check, run after the engine is closed, that
// every process listed in the marker file is gone.
func checkStopped(t *testing.T, marker string) {
	t.Cleanup(func() {
		b, err := os.ReadFile(marker)
		if err != nil {
			return // the tool never started, or runs no process
		}
		for _, line := range strings.Split(string(b), "\n") {
			f, ok := strings.CutPrefix(line, "pid ")
			if !ok {
				continue
			}
			pid, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || pid <= 0 {
				t.Errorf("marker line %q: not a pid", line)
				continue
			}
			// The signals have been sent; give the system a moment to
			// deliver them.
			deadline := time.Now().Add(5 * time.Second)
			for Alive(pid) && time.Now().Before(deadline) {
				time.Sleep(10 * time.Millisecond)
			}
			if Alive(pid) {
				t.Errorf("process %d is still running after the engine closed", pid)
			}
		}
	})
}

func testCrash(t *testing.T, newTool NewTool, opts Options) {
	e, _ := engine(t, newTool, 0, Crash, Echo)
	out := call(e, context.Background(), Crash, map[string]any{"message": "boom goes the tool"}, nil)
	wantKind(t, out, tool.KindRuntimeFailure)
	if !opts.Remote && !strings.Contains(out.Result.Text(), "boom goes the tool") {
		t.Errorf("text %q does not hold what the tool said before it died", out.Result.Text())
	}
	wantSuccess(t, call(e, context.Background(), Echo, map[string]any{"text": "still here"}, nil))
}

func testHuge(t *testing.T, newTool NewTool) {
	e, _ := engine(t, newTool, 0, Huge, Echo)
	const size = 4 << 20
	out := call(e, context.Background(), Huge, map[string]any{"size": size}, nil)
	switch {
	case out.Result == nil:
		t.Fatalf("got a question")
	case out.Result.IsError:
		if k := out.Result.ErrorKind; k != tool.KindRuntimeFailure && k != tool.KindToolError {
			t.Errorf("a stopped huge output has kind %s, want runtime_failure or tool_error", k)
		}
	default:
		var n int
		for _, c := range out.Result.Content {
			n += len(c.Text) + len(c.Data)
		}
		if n > maxOutput+512 {
			t.Errorf("the result holds %d bytes, past the engine's cap of %d", n, maxOutput)
		}
		if !strings.HasPrefix(out.Result.Text(), "xxxxxxxx") || !strings.Contains(out.Result.Text(), "truncated") {
			t.Errorf("the result does not start with the output and end with a note: %q…", excerpt(out.Result.Text()))
		}
	}
	wantSuccess(t, call(e, context.Background(), Echo, map[string]any{"text": "still here"}, nil))
}

func testNeedsInput(t *testing.T, newTool NewTool) {
	e, _ := engine(t, newTool, 0, Ask)
	args := map[string]any{"subject": "the release"}
	out := call(e, context.Background(), Ask, args, nil)
	if out.Question == nil {
		t.Fatalf("got %+v, want a question", out.Result)
	}
	q := out.Question
	if q.ID != "confirm" || q.Kind != tool.QuestionBoolean || !strings.Contains(q.Text, "the release") {
		t.Errorf("question = %+v, want id confirm, kind boolean, a text about the release", q)
	}
	yes := wantSuccess(t, call(e, context.Background(), Ask, args, map[string]any{"confirm": true}))
	if got := yes.Text(); got != "confirmed the release" {
		t.Errorf("answered yes: %q, want %q", got, "confirmed the release")
	}
	no := call(e, context.Background(), Ask, args, map[string]any{"confirm": false})
	wantKind(t, no, tool.KindToolError)
	if !strings.Contains(no.Result.Text(), "declined the release") {
		t.Errorf("answered no: %q, want it to say declined the release", no.Result.Text())
	}
}

func testConcurrent(t *testing.T, newTool NewTool) {
	e, _ := engine(t, newTool, 0, Echo)
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for i := range 8 {
		wg.Go(func() {
			text := fmt.Sprintf("call %d", i)
			out := call(e, context.Background(), Echo, map[string]any{"text": text}, nil)
			if out.Result == nil || out.Result.IsError || out.Result.Text() != text {
				errs <- fmt.Errorf("call %d: %+v", i, out.Result)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
