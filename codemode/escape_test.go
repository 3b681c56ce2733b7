package codemode_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lathe-tools/lathe/audit"
	"github.com/lathe-tools/lathe/codemode"
	"github.com/lathe-tools/lathe/load"
	"github.com/lathe-tools/lathe/policy"
	"github.com/lathe-tools/lathe/runtime/builtin"
	"github.com/lathe-tools/lathe/tool"
)

// open opens a workspace holding files (and lathe.toml, trusted), whose
// run_code runs f in place of a script. approver may be nil: no one to ask.
func open(t *testing.T, files map[string]string, opts codemode.Options, f codemode.GoScript, approver policy.Approver) *load.Workspace {
	t.Helper()
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_STATE_HOME", filepath.Join(home, "state"))
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(home, "config"))
	t.Setenv("LATHE_CACHE_DIR", filepath.Join(home, "cache"))
	ws := filepath.Join(home, "ws")
	if err := os.MkdirAll(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(ws, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	w, err := load.Open(context.Background(), load.Options{Dir: ws, Approver: approver,
		Trust: func(context.Context, load.Untrusted) (bool, error) { return true, nil }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	if f != nil {
		if err := w.Engine.Replace([]string{codemode.Name}, codemode.NewGo(w.Engine, opts, f)); err != nil {
			t.Fatal(err)
		}
	}
	return w
}

// runCode calls run_code as a person typed it (so that run_code itself
// is approved), with a deadline of its own so that no test hangs.
func runCode(t *testing.T, w *load.Workspace) *tool.Outcome {
	t.Helper()
	ctx, cancel := context.WithTimeout(policy.WithPerson(context.Background(), "test"), 20*time.Second)
	defer cancel()
	out := w.Engine.Call(ctx, &tool.Call{ID: "c1", Name: codemode.Name, Arguments: json.RawMessage(`{"code":"return 1"}`)})
	if ctx.Err() != nil {
		t.Fatal("run_code did not end within 20s: it hung")
	}
	return out
}

// records returns the audit log of w.
func records(t *testing.T, w *load.Workspace) []audit.Record {
	t.Helper()
	s, err := audit.Open(w.AuditPath())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	recs, err := s.List(context.Background(), audit.Filter{Limit: -1})
	if err != nil {
		t.Fatal(err)
	}
	return recs
}

func kindOf(err error) tool.ErrorKind {
	var te *tool.Error
	if errors.As(err, &te) {
		return te.Kind
	}
	return ""
}

// TestDeniedToolFromScript: a tool a rule denies cannot be reached from
// a script: the nested call is denied, the script catches the error and
// goes on, and the audit log shows the denied call as a child of run_code.
// The same script under an allow rule writes the file, so the denial is
// what stopped it.
func TestDeniedToolFromScript(t *testing.T) {
	for _, tc := range []struct {
		name, approval string
		wantWritten    bool
	}{{"deny", "deny", false}, {"allow", "allow", true}} {
		t.Run(tc.name, func(t *testing.T) {
			var caught error
			script := func(ctx context.Context, tools map[string]codemode.Func, _ func(string, string)) (json.RawMessage, error) {
				_, caught = tools["write_file"](ctx, json.RawMessage(`{"path":"out.txt","content":"pwned"}`))
				return tools["read_file"](ctx, json.RawMessage(`{"path":"a.txt"}`))
			}
			w := open(t, map[string]string{"a.txt": "hello\n", "lathe.toml": fmt.Sprintf(
				"[[policy.rules]]\ntool = \"write_file\"\napproval = %q\n", tc.approval)}, codemode.Options{}, script, nil)
			out := runCode(t, w)
			if err := out.Err(); err != nil {
				t.Fatalf("run_code failed: %v", err)
			}
			if !strings.Contains(out.Result.Text(), "hello") {
				t.Errorf("the script did not go on after the write: %q", out.Result.Text())
			}
			_, statErr := os.Stat(filepath.Join(w.Dir, "out.txt"))
			if written := statErr == nil; written != tc.wantWritten {
				t.Fatalf("out.txt written = %v, want %v (the nested call's error: %v)", written, tc.wantWritten, caught)
			}
			if !tc.wantWritten && (kindOf(caught) != tool.KindDenied || !strings.HasPrefix(caught.Error(), "denied: ")) {
				t.Errorf("the script got %v (kind %q), want a denied error starting with its kind", caught, kindOf(caught))
			}
			recs := records(t, w)
			byTool := map[string]audit.Record{}
			for _, r := range recs {
				byTool[r.Tool] = r
			}
			rc, wr, rd := byTool[codemode.Name], byTool["write_file"], byTool["read_file"]
			if rc.ID == 0 || rc.Parent != 0 {
				t.Fatalf("run_code's record = %+v, want one with no parent", rc)
			}
			if wr.Parent != rc.ID || rd.Parent != rc.ID {
				t.Errorf("nested records' parents = %d, %d, want run_code's %d", wr.Parent, rd.Parent, rc.ID)
			}
			if want := map[bool]string{false: "deny", true: "allow"}[tc.wantWritten]; wr.Decision != want {
				t.Errorf("write_file's decision = %q, want %q", wr.Decision, want)
			}
			if !strings.HasPrefix(wr.CallID, "c1/") {
				t.Errorf("write_file's call id = %q, want one under run_code's c1", wr.CallID)
			}
		})
	}
}

// approverFunc answers every request the same way, counting them.
type approverFunc func(*policy.Request) policy.Verdict

func (f approverFunc) Approve(_ context.Context, r *policy.Request) (policy.Answer, error) {
	return policy.Answer{Verdict: f(r)}, nil
}

// TestNestedAskNobodyCanAnswer: run_code typed by a person is approved,
// but that does not approve what its script calls: a nested call that
// asks (write_file, not read-only) fails with a catchable denial when no
// one can be asked, and runs when an approver says yes.
func TestNestedAskNobodyCanAnswer(t *testing.T) {
	for _, tc := range []struct {
		name     string
		approver policy.Approver
		written  bool
	}{
		{"nobody", nil, false},
		{"approver says yes", approverFunc(func(r *policy.Request) policy.Verdict {
			if r.Tool.Name != "write_file" {
				return policy.Refuse
			}
			return policy.AllowOnce
		}), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var caught error
			script := func(ctx context.Context, tools map[string]codemode.Func, _ func(string, string)) (json.RawMessage, error) {
				_, caught = tools["write_file"](ctx, json.RawMessage(`{"path":"out.txt","content":"x"}`))
				return json.RawMessage(`"done"`), nil
			}
			w := open(t, nil, codemode.Options{}, script, tc.approver)
			if out := runCode(t, w); out.Err() != nil {
				t.Fatalf("run_code failed: %v", out.Err())
			}
			_, statErr := os.Stat(filepath.Join(w.Dir, "out.txt"))
			if written := statErr == nil; written != tc.written {
				t.Fatalf("out.txt written = %v, want %v (nested error: %v)", written, tc.written, caught)
			}
			if !tc.written && kindOf(caught) != tool.KindDenied {
				t.Errorf("nested error = %v, want kind denied", caught)
			}
		})
	}
}

// TestNestedCallAfterDeadline: once run_code's time is up, a call the
// script still makes never runs: no file, no audit record of it.
func TestNestedCallAfterDeadline(t *testing.T) {
	late := make(chan error, 1)
	script := func(ctx context.Context, tools map[string]codemode.Func, _ func(string, string)) (json.RawMessage, error) {
		select {
		case <-ctx.Done():
		case <-time.After(10 * time.Second):
			return nil, errors.New("the script's context was not cancelled at its deadline")
		}
		_, err := tools["write_file"](context.WithoutCancel(ctx), json.RawMessage(`{"path":"late.txt","content":"x"}`))
		late <- err
		return nil, ctx.Err()
	}
	w := open(t, map[string]string{"lathe.toml": "[[policy.rules]]\ntool = \"write_file\"\napproval = \"allow\"\n"},
		codemode.Options{}, nil, nil)
	rc := codemode.NewGo(w.Engine, codemode.Options{}, script)
	rc.Timeout = 200 * time.Millisecond
	if err := w.Engine.Replace([]string{codemode.Name}, rc); err != nil {
		t.Fatal(err)
	}
	out := runCode(t, w)
	if out.Err() == nil || out.Result.ErrorKind != tool.KindTimeout {
		t.Errorf("run_code = %+v, want a timeout", out.Result)
	}
	// The engine may return at the deadline before the script's run has
	// ended; the late call's fate is waited for.
	select {
	case err := <-late:
		if kindOf(err) != tool.KindTimeout {
			t.Errorf("the late call's error = %v, want kind timeout", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the script's late call did not return within 10s")
	}
	if _, err := os.Stat(filepath.Join(w.Dir, "late.txt")); err == nil {
		t.Fatal("a call made after the script's deadline ran")
	}
	for _, r := range records(t, w) {
		if r.Tool == "write_file" {
			t.Errorf("the late call reached the engine: %+v", r)
		}
	}
}

// TestNoRecursion: a script has no run_code function, and run_code called
// through the engine with the script's context (as any tool that calls the
// engine would) is refused.
func TestNoRecursion(t *testing.T) {
	var nested *tool.Outcome
	var has bool
	script := func(ctx context.Context, tools map[string]codemode.Func, _ func(string, string)) (json.RawMessage, error) {
		_, has = tools[codemode.Name]
		return json.RawMessage(`1`), nil
	}
	w := open(t, map[string]string{"lathe.toml": "[[policy.rules]]\ntool = \"run_code\"\napproval = \"allow\"\n"}, codemode.Options{}, nil, nil)
	e := w.Engine
	if err := e.Replace([]string{codemode.Name}, codemode.NewGo(e, codemode.Options{},
		func(ctx context.Context, tools map[string]codemode.Func, c func(string, string)) (json.RawMessage, error) {
			nested = e.Call(ctx, &tool.Call{Name: codemode.Name, Arguments: json.RawMessage(`{"code":"return 2"}`)})
			return script(ctx, tools, c)
		})); err != nil {
		t.Fatal(err)
	}
	if out := runCode(t, w); out.Err() != nil {
		t.Fatalf("run_code failed: %v", out.Err())
	}
	if has {
		t.Error("a script was given a run_code function")
	}
	if nested == nil || nested.Err() == nil || !strings.Contains(nested.Result.Text(), "cannot be called from a run_code script") {
		t.Errorf("run_code from run_code = %+v, want refused", nested)
	}
}

// TestCallFlood: calls past the limit throw and reach nothing; the audit
// log holds exactly the limit's worth.
func TestCallFlood(t *testing.T) {
	const limit = 5
	var errs []error
	script := func(ctx context.Context, tools map[string]codemode.Func, _ func(string, string)) (json.RawMessage, error) {
		for range 3 * limit {
			_, err := tools["read_file"](ctx, json.RawMessage(`{"path":"a.txt"}`))
			errs = append(errs, err)
		}
		return json.RawMessage(`null`), nil
	}
	w := open(t, map[string]string{"a.txt": "x\n"}, codemode.Options{MaxCalls: limit}, script, nil)
	if out := runCode(t, w); out.Err() != nil {
		t.Fatalf("run_code failed: %v", out.Err())
	}
	for i, err := range errs {
		if (i < limit) != (err == nil) {
			t.Errorf("call %d: error %v", i+1, err)
		}
		if i >= limit && !strings.Contains(fmt.Sprint(err), "too many tool calls") {
			t.Errorf("call %d: error %v, want too many tool calls", i+1, err)
		}
	}
	n := 0
	for _, r := range records(t, w) {
		if r.Tool == "read_file" {
			n++
		}
	}
	if n != limit {
		t.Errorf("%d read_file calls reached the engine, want %d", n, limit)
	}
}

// TestRunCodeAsksByDefault: with no rule, run_code asks (it is not
// read-only), so with no one to ask it is denied and its script never runs;
// a rule that allows it lets it run.
func TestRunCodeAsksByDefault(t *testing.T) {
	for _, tc := range []struct {
		name, toml string
		runs       bool
	}{{"no rule", "", false}, {"allowed", "[[policy.rules]]\ntool = \"run_code\"\napproval = \"allow\"\n", true}} {
		t.Run(tc.name, func(t *testing.T) {
			ran := false
			w := open(t, map[string]string{"lathe.toml": tc.toml}, codemode.Options{},
				func(context.Context, map[string]codemode.Func, func(string, string)) (json.RawMessage, error) {
					ran = true
					return json.RawMessage(`1`), nil
				}, nil)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			out := w.Engine.Call(ctx, &tool.Call{Name: codemode.Name, Arguments: json.RawMessage(`{"code":"return 1"}`)})
			if ran != tc.runs {
				t.Fatalf("the script ran = %v, want %v (%s)", ran, tc.runs, out.Result.Text())
			}
			if !tc.runs && out.Result.ErrorKind != tool.KindDenied {
				t.Errorf("run_code with no rule and no one to ask = %+v, want denied", out.Result)
			}
		})
	}
}

// TestNestedQuestion: a tool that asks a question fails its call from a
// script (no one in the script can answer it), saying so; it does not end
// the script.
func TestNestedQuestion(t *testing.T) {
	var caught error
	script := func(ctx context.Context, tools map[string]codemode.Func, _ func(string, string)) (json.RawMessage, error) {
		_, caught = tools["asker"](ctx, nil)
		return json.RawMessage(`"went on"`), nil
	}
	w := open(t, nil, codemode.Options{}, nil, nil)
	type in struct{}
	asker := builtin.Must(builtin.Func(tool.Definition{Name: "asker", Annotations: tool.Annotations{ReadOnlyHint: true}},
		func(ctx context.Context, _ in) (string, error) {
			ok, err := builtin.Ask(ctx, tool.Question{ID: "sure", Text: "Sure?", Kind: tool.QuestionBoolean})
			return fmt.Sprint(ok), err
		}))
	// run_code is replaced before the tool is added, so that the loader's
	// Watch, seeing a run_code not its own, leaves it alone.
	if err := w.Engine.Replace([]string{codemode.Name}, codemode.NewGo(w.Engine, codemode.Options{}, script)); err != nil {
		t.Fatal(err)
	}
	if err := w.Engine.Register(asker); err != nil {
		t.Fatal(err)
	}
	out := runCode(t, w)
	if !strings.Contains(out.Result.Text(), "went on") {
		t.Fatalf("run_code = %q", out.Result.Text())
	}
	if caught == nil || !strings.Contains(caught.Error(), "asked a question (Sure?)") {
		t.Errorf("the question's call: %v, want an error naming the question", caught)
	}
}

// TestConfiguredLimits: [tools.run_code.options] sets the limits (here
// max_calls), and a bad value is an error naming the file's line.
func TestConfiguredLimits(t *testing.T) {
	w := open(t, map[string]string{"a.txt": "x\n",
		"lathe.toml": "[tools.run_code.options]\nmax_calls = 2\n" + rule("run_code", "allow")}, codemode.Options{}, nil, nil)
	var got []string
	value(t, script(t, w, `const r: string[] = [];
for (let i = 0; i < 3; i++) { try { await tools.read_file({path: "a.txt"}); r.push("ok"); } catch (e) { r.push(e.message.slice(0, 30)); } }
return r;`), &got)
	if len(got) != 3 || got[0] != "ok" || got[1] != "ok" || !strings.Contains(got[2], "too many tool calls") {
		t.Errorf("with max_calls = 2: %q", got)
	}
	home := t.TempDir()
	ws := filepath.Join(home, "ws")
	os.MkdirAll(ws, 0o755)
	os.WriteFile(filepath.Join(ws, "lathe.toml"), []byte("\n[tools.run_code.options]\nmax_calls = \"lots\"\n"), 0o644)
	_, err := load.Open(context.Background(), load.Options{Dir: ws,
		Trust: func(context.Context, load.Untrusted) (bool, error) { return true, nil }})
	if err == nil || !strings.Contains(err.Error(), "lathe.toml:2") || !strings.Contains(err.Error(), "max_calls") {
		t.Errorf("a bad max_calls: %v, want an error naming lathe.toml:2 and max_calls", err)
	}
}
