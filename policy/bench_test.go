package policy_test

import (
	"testing"

	"github.com/lathe-tools/lathe/policy"
	"github.com/lathe-tools/lathe/tool"
)

// BenchmarkDecide measures the policy's cost per call. "none" is the floor,
// a policy with no rules (the annotations decide); the others add the rules
// and server defaults a gateway's configuration has, every rule matching
// the tool's name, so that each is scored.
func BenchmarkDecide(b *testing.B) {
	def := &tool.Definition{Name: "gh__list_issues", Source: "mcp.gh", Annotations: tool.Annotations{ReadOnlyHint: true}}
	args := map[string]any{"repo": "lathe", "state": "open"}
	rules := make([]policy.Rule, 10)
	for i := range rules {
		rules[i] = policy.Rule{Tool: "gh__*", Approval: policy.Ask, Source: "lathe.toml:1"}
	}
	defaults := []policy.SourceDefault{{Source: "mcp.fs", Approval: policy.Allow}, {Source: "mcp.gh", Approval: policy.Ask}}
	for _, bc := range []struct {
		name string
		p    *policy.Policy
	}{
		{"none", &policy.Policy{}},
		{"defaults", &policy.Policy{Defaults: defaults}},
		{"rules=10", &policy.Policy{Rules: rules}},
		{"rules=10+defaults", &policy.Policy{Rules: rules, Defaults: defaults}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if d := bc.p.Decide(def, args); !d.Approval.Valid() {
					b.Fatal(d)
				}
			}
		})
	}
}
