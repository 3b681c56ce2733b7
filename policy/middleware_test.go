package policy_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"

	"go.uber.org/goleak"

	"github.com/lathe-tools/lathe"
	"github.com/lathe-tools/lathe/policy"
	"github.com/lathe-tools/lathe/runtime/builtin"
	"github.com/lathe-tools/lathe/tool"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type memGrants struct {
	mu sync.Mutex
	m  map[string]bool
}

func (g *memGrants) Granted(_ context.Context, name, command string) (bool, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.m[name+" "+command], nil
}

func (g *memGrants) AddGrant(_ context.Context, gr policy.Grant) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.m[gr.Tool+" "+gr.Command] = true
	return nil
}

// engine returns an engine with a read-only tool "look" and a destructive
// tool "wipe", behind p.
func engine(t *testing.T, p *policy.Policy, opts policy.Options) *lathe.Engine {
	t.Helper()
	e := lathe.New(lathe.Options{Middleware: []lathe.Middleware{policy.Middleware(p, opts)}})
	t.Cleanup(func() { e.Close() })
	type in struct {
		Path string `json:"path"`
	}
	e.Register(
		builtin.Must(builtin.Func(tool.Definition{Name: "look", Annotations: tool.Annotations{ReadOnlyHint: true}},
			func(ctx context.Context, in in) (string, error) { return "looked at " + in.Path, nil })),
		builtin.Must(builtin.Func(tool.Definition{Name: "wipe", Annotations: tool.Annotations{DestructiveHint: tool.Bool(true)}},
			func(ctx context.Context, in in) (string, error) { return "wiped " + in.Path, nil })),
	)
	return e
}

func call(ctx context.Context, e *lathe.Engine, name string) *tool.Outcome {
	return e.Call(ctx, &tool.Call{Name: name, Arguments: json.RawMessage(`{"path":"a.txt"}`)})
}

func TestAskWithNoOneToAskDenies(t *testing.T) {
	e := engine(t, &policy.Policy{}, policy.Options{})
	if out := call(context.Background(), e, "look"); out.Result.IsError {
		t.Fatalf("read-only tool: %s", out.Result.Text())
	}
	out := call(context.Background(), e, "wipe")
	if !errors.Is(out.Err(), tool.ErrDenied) || !strings.Contains(out.Result.Text(), "no one to ask") {
		t.Fatalf("destructive tool with no approver: %+v %s", out.Err(), out.Result.Text())
	}
}

func TestDenyRuleHoldsForAPerson(t *testing.T) {
	e := engine(t, &policy.Policy{Rules: []policy.Rule{{Tool: "wipe", Approval: policy.Deny}}}, policy.Options{})
	ctx := policy.WithPerson(context.Background(), "person")
	if out := call(ctx, e, "wipe"); !errors.Is(out.Err(), tool.ErrDenied) {
		t.Fatalf("deny rule with a person: %v", out.Err())
	}
	e2 := engine(t, &policy.Policy{}, policy.Options{})
	if out := call(ctx, e2, "wipe"); out.Result.IsError {
		t.Fatalf("ask with a person: %s", out.Result.Text())
	}
}

func TestApproverAnswers(t *testing.T) {
	var asked []policy.Request
	verdict := policy.Refuse
	approver := policy.ApproverFunc(func(ctx context.Context, r *policy.Request) (policy.Answer, error) {
		asked = append(asked, *r)
		return policy.Answer{Verdict: verdict, Reason: "not today"}, nil
	})
	grants := &memGrants{m: map[string]bool{}}
	e := engine(t, &policy.Policy{}, policy.Options{Approver: approver, Grants: grants})
	ctx := context.Background()

	out := call(ctx, e, "wipe")
	if !errors.Is(out.Err(), tool.ErrDenied) || !strings.Contains(out.Result.Text(), "not today") {
		t.Fatalf("refusal: %s", out.Result.Text())
	}
	if len(asked) != 1 || asked[0].Arguments != `{"path":"a.txt"}` || asked[0].Tool.Name != "wipe" || asked[0].Reason == "" {
		t.Fatalf("request: %+v", asked)
	}

	verdict = policy.AllowOnce
	if out := call(ctx, e, "wipe"); out.Result.IsError {
		t.Fatal(out.Result.Text())
	}
	verdict = policy.Refuse
	if out := call(ctx, e, "wipe"); !out.Result.IsError {
		t.Fatal("allow once allowed twice")
	}

	verdict = policy.AllowSession
	call(ctx, e, "wipe")
	verdict = policy.Refuse
	n := len(asked)
	if out := call(ctx, e, "wipe"); out.Result.IsError || len(asked) != n {
		t.Fatalf("session grant: asked again or denied: %s", out.Result.Text())
	}
	if grants.m["wipe "] {
		t.Fatal("a session grant was stored")
	}

	// Always: stored, and a second engine with the same store does not ask.
	e2 := engine(t, &policy.Policy{}, policy.Options{Approver: policy.ApproverFunc(
		func(context.Context, *policy.Request) (policy.Answer, error) {
			return policy.Answer{Verdict: policy.AllowAlways}, nil
		}), Grants: grants})
	call(ctx, e2, "wipe")
	if !grants.m["wipe "] {
		t.Fatal("allow always stored no grant")
	}
	e3 := engine(t, &policy.Policy{}, policy.Options{Grants: grants})
	if out := call(ctx, e3, "wipe"); out.Result.IsError {
		t.Fatalf("stored grant: %s", out.Result.Text())
	}
	// A deny rule beats the grant.
	e4 := engine(t, &policy.Policy{Rules: []policy.Rule{{Tool: "wi*", Approval: policy.Deny}}}, policy.Options{Grants: grants})
	if out := call(ctx, e4, "wipe"); !out.Result.IsError {
		t.Fatal("a grant beat a deny rule")
	}
}

func TestContextApproverAndNote(t *testing.T) {
	e := engine(t, &policy.Policy{}, policy.Options{})
	var d policy.Decision
	ctx := policy.WithNote(context.Background(), func(x policy.Decision) { d = x })
	ctx = policy.WithApprover(ctx, policy.ApproverFunc(func(context.Context, *policy.Request) (policy.Answer, error) {
		return policy.Answer{Verdict: policy.AllowOnce}, nil
	}))
	if out := call(ctx, e, "wipe"); out.Result.IsError {
		t.Fatal(out.Result.Text())
	}
	if d.Approval != policy.Allow || d.By != "approver" {
		t.Fatalf("note: %+v", d)
	}
	// An approver that fails denies.
	ctx = policy.WithApprover(ctx, policy.ApproverFunc(func(context.Context, *policy.Request) (policy.Answer, error) {
		return policy.Answer{}, errors.New("terminal gone")
	}))
	if out := call(ctx, e, "wipe"); !errors.Is(out.Err(), tool.ErrDenied) {
		t.Fatalf("failing approver: %v", out.Err())
	}
}

func TestElicitationApproves(t *testing.T) {
	e := engine(t, &policy.Policy{}, policy.Options{})
	var msg string
	answer := map[string]any{"decision": "once"}
	action := tool.ElicitAccept
	ctx := tool.WithHooks(context.Background(), tool.Hooks{
		Elicit: func(_ context.Context, r *tool.ElicitRequest) (*tool.ElicitResult, error) {
			msg = r.Message
			return &tool.ElicitResult{Action: action, Content: answer}, nil
		},
	})
	if out := call(ctx, e, "wipe"); out.Result.IsError {
		t.Fatal(out.Result.Text())
	}
	if !strings.Contains(msg, "wipe") || !strings.Contains(msg, "a.txt") {
		t.Fatalf("elicitation message %q", msg)
	}
	answer = map[string]any{"decision": "deny", "reason": "use look"}
	if out := call(ctx, e, "wipe"); !strings.Contains(out.Result.Text(), "use look") {
		t.Fatalf("refusal through elicitation: %s", out.Result.Text())
	}
	action = tool.ElicitDecline
	if out := call(ctx, e, "wipe"); !errors.Is(out.Err(), tool.ErrDenied) {
		t.Fatalf("declined elicitation: %v", out.Err())
	}
}

// formatting is a runtime that renders its arguments for a person, as
// runtime/process does with the protocol's format_arguments action.
type formatting struct{}

func (formatting) Execute(context.Context, *tool.Definition, *tool.Call) (*tool.Outcome, error) {
	return &tool.Outcome{Result: &tool.Result{Content: []tool.Content{{Type: tool.ContentText, Text: "ran"}}}}, nil
}

func (formatting) FormatArguments(_ context.Context, _ *tool.Definition, c *tool.Call) (string, error) {
	return "git log -n 3", nil
}

func TestApproverSeesFormattedArguments(t *testing.T) {
	var got *policy.Request
	e := lathe.New(lathe.Options{Middleware: []lathe.Middleware{policy.Middleware(&policy.Policy{}, policy.Options{
		Approver: policy.ApproverFunc(func(_ context.Context, r *policy.Request) (policy.Answer, error) {
			got = r
			return policy.Answer{Verdict: policy.AllowOnce}, nil
		})})}})
	defer e.Close()
	if err := e.Register(tool.Tool{Definition: tool.Definition{Name: "log"}, Runtime: formatting{}}); err != nil {
		t.Fatal(err)
	}
	if out := e.Call(context.Background(), &tool.Call{Name: "log", Arguments: json.RawMessage(`{"n":3}`)}); out.Result.IsError {
		t.Fatal(out.Result.Text())
	}
	if got == nil || got.Arguments != "git log -n 3" {
		t.Fatalf("request: %+v", got)
	}
}

func TestSessionsAreSeparate(t *testing.T) {
	n := 0
	e := engine(t, &policy.Policy{}, policy.Options{Approver: policy.ApproverFunc(
		func(context.Context, *policy.Request) (policy.Answer, error) {
			n++
			return policy.Answer{Verdict: policy.AllowSession}, nil
		})})
	a := lathe.WithSession(context.Background(), "a")
	b := lathe.WithSession(context.Background(), "b")
	call(a, e, "wipe")
	call(a, e, "wipe")
	call(b, e, "wipe")
	if n != 2 {
		t.Fatalf("asked %d times, want once per session", n)
	}
}

// TestCommandGrantsCoverOneCommandLine: approving one command line of a tool
// that runs commands, for the session or for good, approves no other.
func TestCommandGrantsCoverOneCommandLine(t *testing.T) {
	asked := 0
	grants := &memGrants{m: map[string]bool{}}
	e := lathe.New(lathe.Options{Middleware: []lathe.Middleware{policy.Middleware(&policy.Policy{}, policy.Options{
		Grants: grants,
		Approver: policy.ApproverFunc(func(_ context.Context, r *policy.Request) (policy.Answer, error) {
			asked++
			if strings.Contains(r.Arguments, "rm") {
				return policy.Answer{Verdict: policy.Refuse}, nil
			}
			return policy.Answer{Verdict: policy.AllowAlways}, nil
		})})}})
	defer e.Close()
	e.Register(builtin.Must(builtin.Func(tool.Definition{Name: "run_command"},
		func(_ context.Context, in struct {
			Command string `json:"command"`
		}) (string, error) {
			return "ran " + in.Command, nil
		})))
	run := func(cmd string) *tool.Outcome {
		raw, _ := json.Marshal(map[string]string{"command": cmd})
		return e.Call(context.Background(), &tool.Call{Name: "run_command", Arguments: raw})
	}
	run("git log")
	run("git log")
	if asked != 1 || !grants.m["run_command git log"] {
		t.Fatalf("asked %d times; grants %v", asked, grants.m)
	}
	if out := run("rm -rf ~"); !out.Result.IsError || asked != 2 {
		t.Fatalf("a grant for git log let rm run: %s (asked %d)", out.Result.Text(), asked)
	}
}

// A denial nobody answered says what would let the call run: the remedy
// is asked with the decision of the rules or defaults, and its answer
// reaches the caller. A person's refusal gets none.
func TestMiddlewareRemedy(t *testing.T) {
	p := &policy.Policy{
		Rules:    []policy.Rule{{Tool: "wipe", Approval: policy.Deny, Source: "x.toml:7"}},
		Defaults: []policy.SourceDefault{{Source: "mcp.up", Approval: policy.Ask, Origin: "x.toml:3"}},
	}
	ctx := context.Background()
	for _, tc := range []struct {
		name     string
		approver policy.Approver
		tool     string
		by       string // who decided what the remedy is asked about; "" for no remedy
	}{
		{"deny rule", nil, "wipe", "rule"},
		{"ask with nobody to ask", nil, "up__look", "source"},
		{"ask that cannot be asked", policy.ApproverFunc(func(context.Context, *policy.Request) (policy.Answer, error) {
			return policy.Answer{}, errors.New("the client does not elicit")
		}), "up__look", "source"},
		{"a person refuses", policy.ApproverFunc(func(context.Context, *policy.Request) (policy.Answer, error) {
			return policy.Answer{Verdict: policy.Refuse}, nil
		}), "up__look", ""},
	} {
		var got []policy.Decision
		remedy := func(def *tool.Definition, d policy.Decision) string {
			got = append(got, d)
			return "add a rule for " + def.Name
		}
		e := engine(t, p, policy.Options{Approver: tc.approver, Remedy: remedy})
		// A tool that claims to be read-only, of a source whose default asks.
		e.Register(builtin.Must(builtin.Func(tool.Definition{Name: "up__look", Source: "mcp.up", Annotations: tool.Annotations{ReadOnlyHint: true}},
			func(context.Context, struct {
				Path string `json:"path"`
			}) (string, error) {
				return "looked", nil
			})))
		out := e.Call(ctx, &tool.Call{Name: tc.tool, Arguments: json.RawMessage(`{"path":"a.txt"}`)})
		if !errors.Is(out.Err(), tool.ErrDenied) {
			t.Fatalf("%s: outcome %+v, want a denial", tc.name, out.Result)
		}
		text := out.Result.Text()
		hasRemedy := strings.Contains(text, "add a rule for "+tc.tool)
		switch {
		case tc.by == "" && (hasRemedy || len(got) > 0):
			t.Errorf("%s: a refusal got a remedy: %q", tc.name, text)
		case tc.by != "" && (!hasRemedy || len(got) != 1 || got[0].By != tc.by):
			t.Errorf("%s: message %q, remedy asked about %+v, want one decided by %s", tc.name, text, got, tc.by)
		case tc.by == "rule" && (got[0].Rule == nil || got[0].Rule.Source != "x.toml:7"):
			t.Errorf("%s: the remedy was not told the rule: %+v", tc.name, got[0])
		case tc.by == "source" && (got[0].Default == nil || got[0].Default.Origin != "x.toml:3"):
			t.Errorf("%s: the remedy was not told the default: %+v", tc.name, got[0])
		}
	}
}
