package process_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/lathe-tools/lathe"
	"github.com/lathe-tools/lathe/runtime/process"
	"github.com/lathe-tools/lathe/runtimetest"
	"github.com/lathe-tools/lathe/sdk"
	"github.com/lathe-tools/lathe/tool"
)

// toolArg, as the first argument, makes the test binary a tool built with
// the SDK instead of running the tests (see TestMain): the fake tool needs
// no build step and no fixture.
const toolArg = "lathe-test-tool"

func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == toolArg {
		sdk.Serve(sdkTools()...)
	}
	// A binary built with -race sleeps a second before it exits, unless
	// told not to; the fake tool is told through GORACE, which goTool
	// passes on.
	os.Setenv("GORACE", strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0"))
	goleak.VerifyTestMain(m)
}

// goTool returns the command that runs the test binary as the SDK tool.
func goTool(dir string) process.Command {
	return process.Command{Argv: []string{os.Args[0], toolArg}, Dir: dir, Env: []string{"GORACE"}}
}

// sdkTools are the conformance suite's tools, written with the SDK, and a
// few more for the tests of this file.
func sdkTools() []sdk.Tool {
	return []sdk.Tool{
		sdk.Func(sdk.Definition{Name: runtimetest.Echo, Summary: "Echo the text."},
			func(_ context.Context, in runtimetest.TextIn) (*tool.Result, error) {
				r := tool.TextResult(in.Text)
				r.Structured, _ = json.Marshal(map[string]string{"text": in.Text})
				return r, nil
			}),
		sdk.Func(sdk.Definition{Name: runtimetest.Fail, Summary: "Fail."},
			func(_ context.Context, in runtimetest.MessageIn) (string, error) {
				return "", fmt.Errorf("%s: %w", in.Message, errors.New("the cause"))
			}),
		sdk.Func(sdk.Definition{Name: runtimetest.Sleep, Summary: "Wait until stopped."},
			func(ctx context.Context, in runtimetest.MarkerIn) (string, error) {
				f, err := os.OpenFile(in.Marker, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
				if err != nil {
					return "", err
				}
				fmt.Fprintf(f, "pid %d\nstarted\n", os.Getpid())
				f.Close()
				<-ctx.Done()
				return "", ctx.Err()
			}),
		sdk.Func(sdk.Definition{Name: runtimetest.Crash, Summary: "Die."},
			func(_ context.Context, in runtimetest.MessageIn) (string, error) {
				fmt.Fprintln(os.Stderr, in.Message)
				os.Exit(3)
				return "", nil
			}),
		sdk.Func(sdk.Definition{Name: runtimetest.Huge, Summary: "Write a lot."},
			func(_ context.Context, in runtimetest.SizeIn) (string, error) {
				return strings.Repeat("x", in.Size), nil
			}),
		sdk.Func(sdk.Definition{Name: runtimetest.Ask, Summary: "Ask first."},
			func(ctx context.Context, in runtimetest.SubjectIn) (string, error) {
				ok, err := sdk.AskBool(ctx, "confirm", "Go ahead with "+in.Subject+"?")
				if err != nil {
					return "", err
				}
				if !ok {
					return "", errors.New("declined " + in.Subject)
				}
				return "confirmed " + in.Subject, nil
			}),
		sdk.Func(sdk.Definition{Name: "context", Summary: "Report the request's context and the process's."},
			func(ctx context.Context, _ struct{}) (map[string]any, error) {
				wd, _ := os.Getwd()
				return map[string]any{"root": sdk.Root(ctx), "call_id": sdk.CallID(ctx), "options": sdk.Options(ctx),
					"wd": wd, "env": os.Environ()}, nil
			}),
	}
}

// describedTool builds a tool of the conformance suite from a binary that
// describes itself.
func describedTool(t *testing.T, cache *process.Cache, cmd process.Command, name string, opts process.Options) tool.Tool {
	t.Helper()
	schemas, err := cache.Describe(context.Background(), cmd, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range schemas {
		if s.Name == name {
			opts.Tool = name
			rt, err := process.New(cmd, opts)
			if err != nil {
				t.Fatal(err)
			}
			return tool.Tool{Runtime: rt, Definition: tool.Definition{Name: name, Summary: s.Summary,
				InputSchema: s.Parameters, Source: "local", Runtime: process.RuntimeName}}
		}
	}
	t.Fatalf("the binary does not describe %q", name)
	return tool.Tool{}
}

// small caps keep the huge-output test quick and make it reach the cap.
var conformanceOpts = process.Options{MaxOutputBytes: 1 << 20, GracePeriod: time.Second}

// TestConformanceGo runs the suite against tools written in Go with the SDK.
func TestConformanceGo(t *testing.T) {
	cache, dir := process.NewCache(""), t.TempDir()
	runtimetest.Run(t, func(t *testing.T, name string) tool.Tool {
		return describedTool(t, cache, goTool(dir), name, conformanceOpts)
	})
}

// TestConformancePython runs the suite against tools written in Python 3.
func TestConformancePython(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 is not installed")
	}
	script, _ := filepath.Abs("testdata/conformance.py")
	cache, dir := process.NewCache(""), t.TempDir()
	runtimetest.Run(t, func(t *testing.T, name string) tool.Tool {
		return describedTool(t, cache, process.Command{Argv: []string{"python3", script}, Dir: dir}, name, conformanceOpts)
	})
}

// TestConformanceShell runs the suite against tools written in POSIX shell,
// which do not describe themselves: their schemas come from the suite, as
// they would come from lathe.toml.
func TestConformanceShell(t *testing.T) {
	script, _ := filepath.Abs("testdata/conformance.sh")
	specs := map[string]runtimetest.Spec{}
	for _, s := range runtimetest.Specs() {
		specs[s.Name] = s
	}
	runtimetest.Run(t, func(t *testing.T, name string) tool.Tool {
		opts := conformanceOpts
		opts.Tool = name
		rt, err := process.New(process.Command{Argv: []string{"/bin/sh", script}, Dir: t.TempDir()}, opts)
		if err != nil {
			t.Fatal(err)
		}
		return tool.Tool{Runtime: rt, Definition: tool.Definition{Name: name, InputSchema: specs[name].InputSchema,
			Source: "local", Runtime: process.RuntimeName}}
	})
}

// shTool writes a shell script to a file and returns a runtime that runs it
// as a protocol tool.
func shTool(t *testing.T, script string, opts process.Options) (*process.Runtime, string) {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "tool.sh")
	if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	rt, err := process.New(process.Command{Argv: []string{path}, Dir: dir}, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	return rt, dir
}

func run(t *testing.T, rt tool.Runtime, args string) (*tool.Outcome, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return rt.Execute(ctx, &tool.Definition{Name: "t"}, &tool.Call{ID: "c1", Name: "t", Arguments: json.RawMessage(args)})
}

func text(t *testing.T, out *tool.Outcome, err error) string {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	if out.Result == nil {
		t.Fatalf("got a question %+v", out.Question)
	}
	if out.Result.IsError {
		t.Fatalf("got an error result: %s", out.Result.Text())
	}
	return out.Result.Text()
}

func kindOf(out *tool.Outcome, err error) tool.ErrorKind {
	switch {
	case err != nil:
		return tool.KindOf(err)
	case out.Result != nil && out.Result.IsError:
		return out.Result.ErrorKind
	}
	return ""
}

func TestPlainOutputIsText(t *testing.T) {
	rt, _ := shTool(t, "#!/bin/sh\ncat >/dev/null\necho 'just text'\n", process.Options{})
	out, err := run(t, rt, `{}`)
	if got := text(t, out, err); got != "just text\n" {
		t.Errorf("text = %q", got)
	}
}

func TestJSONThatIsNotAnAnswerIsText(t *testing.T) {
	rt, _ := shTool(t, "#!/bin/sh\necho '{\"name\":\"x\"}'\n", process.Options{})
	out, err := run(t, rt, `{}`)
	if got := text(t, out, err); got != "{\"name\":\"x\"}\n" {
		t.Errorf("text = %q", got)
	}
}

func TestExitWithoutAnswerIsRuntimeFailure(t *testing.T) {
	rt, _ := shTool(t, "#!/bin/sh\necho 'some output'\necho 'log line 1' >&2\necho 'it broke' >&2\nexit 4\n", process.Options{})
	out, err := run(t, rt, `{}`)
	if k := kindOf(out, err); k != tool.KindRuntimeFailure {
		t.Fatalf("kind = %q, want runtime_failure", k)
	}
	msg := err.Error()
	for _, want := range []string{"exit status 4", "without an answer", "it broke"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q does not say %q", msg, want)
		}
	}
}

func TestAnswerWinsOverExitStatus(t *testing.T) {
	rt, _ := shTool(t, "#!/bin/sh\necho '{\"type\":\"error\",\"message\":\"bad input\"}'\nexit 1\n", process.Options{})
	out, err := run(t, rt, `{}`)
	if k := kindOf(out, err); k != tool.KindToolError {
		t.Fatalf("kind = %q, want tool_error", k)
	}
	if !strings.Contains(out.Result.Text(), "bad input") {
		t.Errorf("text = %q", out.Result.Text())
	}
}

func TestMalformedAnswer(t *testing.T) {
	rt, _ := shTool(t, "#!/bin/sh\necho '{\"type\":\"success\",\"content\":5}'\n", process.Options{})
	out, err := run(t, rt, `{}`)
	if k := kindOf(out, err); k != tool.KindRuntimeFailure || !strings.Contains(err.Error(), "breaks protocol") {
		t.Fatalf("got %v, %v; want a runtime failure naming the protocol", out, err)
	}
}

func TestContentBlocks(t *testing.T) {
	rt, _ := shTool(t, `#!/bin/sh
echo '{"type":"success","content":[{"type":"text","text":"a"},{"type":"image","data":"iVBO","mimeType":"image/png"}]}'
`, process.Options{})
	out, err := run(t, rt, `{}`)
	if err != nil {
		t.Fatal(err)
	}
	c := out.Result.Content
	if len(c) != 2 || c[0].Text != "a" || c[1].Type != tool.ContentImage || c[1].MIMEType != "image/png" || len(c[1].Data) != 3 {
		t.Errorf("content = %+v", c)
	}
}

// JP's tools write the same answers with capitalised answer types.
func TestJPQuestions(t *testing.T) {
	for answer, want := range map[string]tool.Question{
		`{"type":"needs_input","question":{"id":"q","text":"Sure?","answer_type":"Boolean","default":true}}`: {
			ID: "q", Text: "Sure?", Kind: tool.QuestionBoolean, Default: true},
		`{"type":"needs_input","question":{"id":"q","text":"Which?","answer_type":{"Select":{"options":["a","b"]}},"default":null}}`: {
			ID: "q", Text: "Which?", Kind: tool.QuestionSelect, Options: []string{"a", "b"}},
		`{"type":"needs_input","question":{"id":"q","text":"Which?","answer_type":{"select":["a","b"]}}}`: {
			ID: "q", Text: "Which?", Kind: tool.QuestionSelect, Options: []string{"a", "b"}},
		`{"type":"needs_input","question":{"id":"q","text":"Name?","answer_type":"Text"}}`: {
			ID: "q", Text: "Name?", Kind: tool.QuestionText},
	} {
		rt, _ := shTool(t, "#!/bin/sh\necho '"+answer+"'\n", process.Options{})
		out, err := run(t, rt, `{}`)
		if err != nil {
			t.Fatal(err)
		}
		if out.Question == nil || fmt.Sprint(*out.Question) != fmt.Sprint(want) {
			t.Errorf("%s:\ngot  %+v\nwant %+v", answer, out.Question, want)
		}
	}
}

func TestRequestAndEnvironment(t *testing.T) {
	t.Setenv("LATHE_TEST_SECRET", "hunter2")
	t.Setenv("LATHE_TEST_PASSED", "yes")
	dir := t.TempDir()
	cmd := goTool(dir)
	cmd.Env = append(cmd.Env, "LATHE_TEST_PASSED")
	rt, err := process.New(cmd, process.Options{Tool: "context", Options: map[string]any{"depth": 3}})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	out, err := run(t, rt, `{}`)
	var got struct {
		Root    string         `json:"root"`
		CallID  string         `json:"call_id"`
		Options map[string]any `json:"options"`
		WD      string         `json:"wd"`
		Env     []string       `json:"env"`
	}
	if err := json.Unmarshal([]byte(text(t, out, err)), &got); err != nil {
		t.Fatal(err)
	}
	if got.Root != dir || got.WD != dir || got.CallID != "c1" || got.Options["depth"] != 3.0 {
		t.Errorf("context = %+v, want root and working directory %s, call id c1, options depth=3", got, dir)
	}
	allowed := map[string]bool{"LATHE_TEST_PASSED": true, "GORACE": true}
	for _, n := range process.DefaultEnv() {
		allowed[n] = true
	}
	var passed bool
	for _, kv := range got.Env {
		name, _, _ := strings.Cut(kv, "=")
		if !allowed[name] {
			t.Errorf("the tool sees %s, which is neither a default nor listed", name)
		}
		passed = passed || kv == "LATHE_TEST_PASSED=yes"
	}
	if !passed {
		t.Errorf("the listed variable did not reach the tool: %v", got.Env)
	}
}

// A command with placeholders passes each argument as one element of argv,
// whatever it holds, and drops an element whose argument is absent.
func TestPlaceholders(t *testing.T) {
	dir := t.TempDir()
	rt, err := process.New(process.Command{
		Argv: []string{"/bin/sh", "-c", `for a; do printf '[%s]\n' "$a"; done`, "sh",
			"{msg}", "-n", "{count}", "--flag={opt}", "{list}", "{{literal}", "{}",
			"{{.Dir}}", "{{range .}}{{.}}{{end}}", "{{{msg}}}", "{count}}", "{{count}", `{"k": {count}}`, "{count}{count}"},
		Dir: dir,
	}, process.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	evil := "; rm -rf x $(touch pwned) `touch pwned2` *"
	out, err := run(t, rt, `{"msg":`+quote(evil)+`,"count":3,"list":["a b","c"]}`)
	// Doubled braces are text, whatever they hold: a Go template reaches
	// the program as written, with every brace.
	want := "[" + evil + "]\n[-n]\n[3]\n[[\"a b\",\"c\"]]\n[{{literal}]\n[{}]\n" +
		"[{{.Dir}}]\n[{{range .}}{{.}}{{end}}]\n[{{{msg}}}]\n[3}]\n[{{count}]\n[{\"k\": 3}]\n[33]\n"
	if got := text(t, out, err); got != want {
		t.Errorf("argv:\n%s\nwant:\n%s", got, want)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("the arguments ran as commands: the workspace holds %v", entries)
	}
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// With shell = true, values reach the script as positional parameters:
// quoted where the script does not quote them, never run.
func TestShellPlaceholders(t *testing.T) {
	dir := t.TempDir()
	rt, err := process.New(process.Command{
		Argv:  []string{`printf '[%s]\n' {msg} "in quotes: {msg}"; echo {n} | tr 0-9 a-j`},
		Shell: true, Dir: dir,
	}, process.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	evil := `a  b; touch pwned "$(touch pwned2)" * $HOME`
	out, err := run(t, rt, `{"msg":`+quote(evil)+`,"n":42}`)
	want := "[" + evil + "]\n[in quotes: " + evil + "]\nec\n"
	if got := text(t, out, err); got != want {
		t.Errorf("output:\n%s\nwant:\n%s", got, want)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("the arguments ran as commands: the workspace holds %v", entries)
	}

	if _, err := process.New(process.Command{Argv: []string{`echo '{msg}'`}, Shell: true}, process.Options{}); err == nil ||
		!strings.Contains(err.Error(), "single quotes") {
		t.Errorf("a placeholder in single quotes: err = %v", err)
	}
	if _, err := process.New(process.Command{Argv: []string{"echo", "{msg}"}, Shell: true}, process.Options{}); err == nil {
		t.Error("a shell command of two elements was accepted")
	}
}

func TestCommandFailureIsToolError(t *testing.T) {
	rt, err := process.New(process.Command{Argv: []string{"/bin/sh", "-c", "echo out; echo 'no such file' >&2; exit 2", "sh", "{x}"}},
		process.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	out, err := run(t, rt, `{"x":"y"}`)
	if k := kindOf(out, err); k != tool.KindToolError {
		t.Fatalf("kind = %q, want tool_error", k)
	}
	for _, want := range []string{"exit status 2", "out", "no such file"} {
		if !strings.Contains(out.Result.Text(), want) {
			t.Errorf("text %q does not say %q", out.Result.Text(), want)
		}
	}
}

// A program that takes its arguments on the command line may still answer
// in the protocol, as JP's tools do.
func TestCommandWithAnswer(t *testing.T) {
	rt, err := process.New(process.Command{Argv: []string{"/bin/sh", "-c",
		`printf '{"type":"needs_input","question":{"id":"ok","text":"Delete %s?","answer_type":"Boolean"}}' "$1"`, "sh", "{path}"}},
		process.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	out, err := run(t, rt, `{"path":"a.txt"}`)
	if err != nil || out.Question == nil || out.Question.Text != "Delete a.txt?" || out.Question.Kind != tool.QuestionBoolean {
		t.Errorf("got %+v, %v; want a boolean question", out, err)
	}
}

func TestFormatArguments(t *testing.T) {
	rt, err := process.New(process.Command{Argv: []string{"git", "log", "-n", "{count}", "--", "{path}"}}, process.Options{})
	if err != nil {
		t.Fatal(err)
	}
	got, err := rt.FormatArguments(context.Background(), &tool.Definition{Name: "log"},
		&tool.Call{Arguments: json.RawMessage(`{"count":5,"path":"my file"}`)})
	if want := "git log -n 5 -- 'my file'"; err != nil || got != want {
		t.Errorf("FormatArguments = %q, %v; want %q", got, err, want)
	}

	rt, err = process.New(goTool(t.TempDir()), process.Options{Tool: runtimetest.Echo})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	got, err = rt.FormatArguments(context.Background(), &tool.Definition{Name: "echo"},
		&tool.Call{Arguments: json.RawMessage(`{ "text": "hi" }`)})
	if want := `{"text":"hi"}`; err != nil || got != want {
		t.Errorf("FormatArguments = %q, %v; want %q", got, err, want)
	}
}

func TestOutputCap(t *testing.T) {
	rt, _ := shTool(t, "#!/bin/sh\nexec yes\n", process.Options{MaxOutputBytes: 64 << 10})
	out, err := run(t, rt, `{}`)
	if k := kindOf(out, err); k != tool.KindRuntimeFailure || !strings.Contains(err.Error(), "more than 65536 bytes") {
		t.Fatalf("got %v, %v; want a runtime failure about the cap", out, err)
	}
}

// A tool that ignores SIGTERM is killed, with its whole group, after the
// grace period.
func TestSIGTERMIgnored(t *testing.T) {
	rt, dir := shTool(t, `#!/bin/sh
trap '' TERM
sleep 300 &
echo "pid $$" >> marker; echo "pid $!" >> marker
wait
`, process.Options{GracePeriod: 200 * time.Millisecond})
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := rt.Execute(ctx, &tool.Definition{Name: "t"}, &tool.Call{})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("err = %v, want the context's error", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("Execute returned after %s", d)
	}
	checkGone(t, filepath.Join(dir, "marker"))
}

// What a tool leaves running in its group is killed when it exits.
func TestLeftoversKilled(t *testing.T) {
	rt, dir := shTool(t, `#!/bin/sh
sleep 300 &
echo "pid $!" > marker
echo done
`, process.Options{})
	out, err := run(t, rt, `{}`)
	if got := text(t, out, err); got != "done\n" {
		t.Errorf("text = %q", got)
	}
	checkGone(t, filepath.Join(dir, "marker"))
}

func checkGone(t *testing.T, marker string) {
	t.Helper()
	b, err := os.ReadFile(marker)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range strings.Fields(string(b)) {
		var pid int
		if _, err := fmt.Sscan(f, &pid); err != nil {
			continue
		}
		deadline := time.Now().Add(5 * time.Second)
		for runtimetest.Alive(pid) && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		if runtimetest.Alive(pid) {
			t.Errorf("process %d is still running", pid)
		}
	}
}

// Close stops the calls in flight and waits for their processes.
func TestCloseStopsCalls(t *testing.T) {
	rt, dir := shTool(t, "#!/bin/sh\nsleep 300 &\necho \"pid $$\" >> marker; echo \"pid $!\" >> marker\nwait\n", process.Options{})
	done := make(chan error, 1)
	go func() {
		_, err := rt.Execute(context.Background(), &tool.Definition{Name: "t"}, &tool.Call{})
		done <- err
	}()
	marker := filepath.Join(dir, "marker")
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if b, _ := os.ReadFile(marker); strings.Count(string(b), "pid") == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the tool did not start")
		}
	}
	rt.Close()
	if err := <-done; kindOf(nil, err) != tool.KindRuntimeFailure || !strings.Contains(err.Error(), "closed") {
		t.Errorf("err = %v, want a runtime failure saying the runtime closed", err)
	}
	checkGone(t, marker)
	if _, err := run(t, rt, `{}`); err == nil {
		t.Error("a closed runtime ran a call")
	}
}

// A missing program fails its calls, not the loading of the others.
func TestMissingProgram(t *testing.T) {
	rt, err := process.New(process.Command{Argv: []string{"./no-such-tool"}, Dir: t.TempDir()}, process.Options{})
	if err != nil {
		t.Fatal(err)
	}
	out, err := run(t, rt, `{}`)
	if k := kindOf(out, err); k != tool.KindRuntimeFailure || !strings.Contains(err.Error(), "does not exist") {
		t.Errorf("got %v, %v", out, err)
	}
	if _, err := process.New(process.Command{}, process.Options{}); err == nil {
		t.Error("an empty command was accepted")
	}
}

// Through the engine, a timeout is a timeout and the process is gone once
// the engine is closed.
func TestEngineTimeout(t *testing.T) {
	rt, dir := shTool(t, "#!/bin/sh\nsleep 300 &\necho \"pid $$\" >> marker; echo \"pid $!\" >> marker\nwait\n", process.Options{})
	e := lathe.New(lathe.Options{})
	if err := e.Register(tool.Tool{Definition: tool.Definition{Name: "slow"}, Runtime: rt, Timeout: 300 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	out := e.Call(context.Background(), &tool.Call{Name: "slow"})
	if !errors.Is(out.Err(), tool.ErrTimeout) {
		t.Errorf("got %v, want a timeout", out.Err())
	}
	e.Close()
	if _, err := os.Stat(filepath.Join(dir, "marker")); err == nil {
		checkGone(t, filepath.Join(dir, "marker"))
	}
}
