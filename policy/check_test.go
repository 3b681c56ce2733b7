package policy_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/lathe-tools/lathe"
	"github.com/lathe-tools/lathe/policy"
	"github.com/lathe-tools/lathe/runtime/builtin"
	"github.com/lathe-tools/lathe/tool"
)

type brokenGrants struct{}

func (brokenGrants) Granted(context.Context, string, string) (bool, error) {
	return false, errors.New("corrupt record")
}
func (brokenGrants) AddGrant(context.Context, policy.Grant) error { return errors.New("read-only") }

// The dry run and the middleware must agree: what DryRun predicts for a
// call nobody answers is what the pipeline does with it. Each case runs
// both; the tool counts its runs, so a call the dry run says is denied is
// seen not to run, and one it says is allowed is seen to run.
func TestDryRunAgreesWithMiddleware(t *testing.T) {
	granted := &memGrants{m: map[string]bool{"shell git log": true, "wipe ": true}}
	rules := []policy.Rule{
		{Tool: "shell", Args: "rm *", Approval: policy.Deny, Source: "lathe.toml:3"},
		{Tool: "shell", Args: "ls*", Approval: policy.Allow, Source: "lathe.toml:6"},
		{Tool: "look", Approval: policy.Ask, Source: "lathe.toml:9"},
	}
	cases := []struct {
		name, tool, args string
		grants           policy.GrantStore
		want             policy.Approval
		by               string // who decides in the dry run
		grant            bool   // whether a grant settles it
	}{
		{"deny rule", "shell", `{"command":"rm -rf ~"}`, granted, policy.Deny, "rule", false},
		{"deny rule inside a chain", "shell", `{"command":"ls && rm -rf ~"}`, granted, policy.Deny, "rule", false},
		{"allow rule", "shell", `{"command":"ls -l"}`, nil, policy.Allow, "rule", false},
		{"ask rule, no grant", "look", `{}`, granted, policy.Ask, "rule", false},
		{"default ask, no grants", "wipe", `{}`, nil, policy.Ask, "default", false},
		{"default ask, grant of the tool", "wipe", `{}`, granted, policy.Allow, "default", true},
		{"default ask, grant of the command", "shell", `{"command":"git log"}`, granted, policy.Allow, "default", true},
		{"default ask, grant of another command", "shell", `{"command":"git push"}`, granted, policy.Ask, "default", false},
		{"grants unreadable", "wipe", `{}`, brokenGrants{}, policy.Deny, "default", true},
		{"source default deny over a read-only claim", "up__env", `{}`, granted, policy.Deny, "source", false},
		{"source default ask, grant", "gh__list", `{}`, &memGrants{m: map[string]bool{"gh__list ": true}}, policy.Allow, "source", true},
		{"source default allow", "ok__do", `{}`, nil, policy.Allow, "source", false},
	}
	p := &policy.Policy{Rules: rules, Defaults: []policy.SourceDefault{
		{Source: "mcp.up", Approval: policy.Deny}, {Source: "mcp.gh", Approval: policy.Ask}, {Source: "mcp.ok", Approval: policy.Allow}}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var runs atomic.Int32
			e := lathe.New(lathe.Options{Middleware: []lathe.Middleware{policy.Middleware(p, policy.Options{Grants: tc.grants})}})
			defer e.Close()
			type in struct {
				Command string `json:"command,omitempty"`
			}
			f := func(ctx context.Context, in in) (string, error) { runs.Add(1); return "ran", nil }
			for _, d := range []tool.Definition{
				{Name: "shell"},
				{Name: "look", Annotations: tool.Annotations{ReadOnlyHint: true}},
				{Name: "wipe", Annotations: tool.Annotations{DestructiveHint: tool.Bool(true)}},
				{Name: "up__env", Source: "mcp.up", Annotations: tool.Annotations{ReadOnlyHint: true}},
				{Name: "gh__list", Source: "mcp.gh", Annotations: tool.Annotations{ReadOnlyHint: true}},
				{Name: "ok__do", Source: "mcp.ok", Annotations: tool.Annotations{DestructiveHint: tool.Bool(true)}},
			} {
				if err := e.Register(builtin.Must(builtin.Func(d, f))); err != nil {
					t.Fatal(err)
				}
			}
			def, _ := e.Lookup(tc.tool)
			var args any
			if err := json.Unmarshal([]byte(tc.args), &args); err != nil {
				t.Fatal(err)
			}

			r := p.DryRun(context.Background(), tc.grants, &def, args)
			if runs.Load() != 0 {
				t.Fatal("the dry run ran the tool")
			}
			if r.Approval() != tc.want || r.Decision.By != tc.by || (r.Grant != nil) != tc.grant {
				t.Fatalf("DryRun = %s (decision %+v, grant %+v), want %s by %s, grant %v",
					r.Approval(), r.Decision, r.Grant, tc.want, tc.by, tc.grant)
			}
			if r.Decision.By == "rule" && (r.Decision.Rule == nil || !strings.HasPrefix(r.Decision.Rule.Source, "lathe.toml:")) {
				t.Errorf("a rule decided, but the dry run names none: %+v", r.Decision)
			}

			// No approver: an ask is denied by the pipeline, as the dry
			// run's Ask says it would need someone.
			out := e.Call(context.Background(), &tool.Call{Name: tc.tool, Arguments: json.RawMessage(tc.args)})
			ran := runs.Load() == 1
			if ran != (tc.want == policy.Allow) {
				t.Fatalf("the pipeline ran=%v (%s), the dry run said %s", ran, out.Result.Text(), tc.want)
			}
			if !ran && !errors.Is(out.Err(), tool.ErrDenied) {
				t.Fatalf("not run, but not denied: %v", out.Err())
			}
		})
	}
}

// A dry run asks nobody, whatever the decision.
func TestDryRunAsksNobody(t *testing.T) {
	def := &tool.Definition{Name: "wipe", Annotations: tool.Annotations{DestructiveHint: tool.Bool(true)}}
	var asked atomic.Int32
	ctx := policy.WithApprover(context.Background(), policy.ApproverFunc(func(context.Context, *policy.Request) (policy.Answer, error) {
		asked.Add(1)
		return policy.Answer{Verdict: policy.AllowAlways}, nil
	}))
	grants := &memGrants{m: map[string]bool{}}
	r := (&policy.Policy{}).DryRun(ctx, grants, def, map[string]any{})
	if r.Approval() != policy.Ask || asked.Load() != 0 || len(grants.m) != 0 {
		t.Fatalf("dry run: %s, asked %d times, grants %v", r.Approval(), asked.Load(), grants.m)
	}
}
