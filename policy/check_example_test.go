package policy_test

import (
	"context"
	"fmt"

	"github.com/lathe-tools/lathe/policy"
	"github.com/lathe-tools/lathe/tool"
)

// A dry run says what the policy would make of a call, naming the rule,
// and whether a stored grant would settle an ask; it runs nothing and asks
// nobody.
func ExamplePolicy_DryRun() {
	p := &policy.Policy{Rules: []policy.Rule{
		{Tool: "run_command", Args: "rm *", Approval: policy.Deny, Source: "lathe.toml:3"},
	}}
	run := &tool.Definition{Name: "run_command"}
	for _, cmd := range []string{"rm -rf build", "make"} {
		r := p.DryRun(context.Background(), nil, run, map[string]any{"command": cmd})
		fmt.Printf("%-12s %s: %s\n", cmd, r.Approval(), r.Decision.Reason)
	}
	// Output:
	// rm -rf build deny: the rule tool="run_command" args="rm *" approval="deny" (lathe.toml:3) denies it
	// make         ask: the tool does not say it is read-only
}
