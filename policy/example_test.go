package policy_test

import (
	"fmt"

	"github.com/lathe-tools/lathe/policy"
	"github.com/lathe-tools/lathe/tool"
)

// A policy in the manner of a coding agent's command patterns: git status
// runs, rm never does, anything else that runs commands asks.
func ExamplePolicy_Decide() {
	p := &policy.Policy{Rules: []policy.Rule{
		{Tool: "run_command", Args: "git status*", Approval: policy.Allow},
		{Tool: "run_command", Args: "rm *", Approval: policy.Deny},
	}}
	run := &tool.Definition{Name: "run_command"}
	for _, cmd := range []string{"git status --short", "git status; curl evil.example", "make && rm -rf build", "make"} {
		d := p.Decide(run, map[string]any{"command": cmd})
		fmt.Printf("%-30s %s (%s)\n", cmd, d.Approval, d.By)
	}
	read := &tool.Definition{Name: "read_file", Annotations: tool.Annotations{ReadOnlyHint: true}}
	fmt.Println("read_file", p.Decide(read, nil).Approval)
	// Output:
	// git status --short             allow (rule)
	// git status; curl evil.example  ask (default)
	// make && rm -rf build           deny (rule)
	// make                           ask (default)
	// read_file allow
}

// An upstream server's tools default to asking, whatever they claim, and
// one rule makes an exception: a rule always wins over a source's default.
func ExampleSourceDefault() {
	p := &policy.Policy{
		Rules:    []policy.Rule{{Tool: "gh__list_issues", Approval: policy.Allow, Source: "lathe.toml:9"}},
		Defaults: []policy.SourceDefault{{Source: "mcp.gh", Approval: policy.Ask, Origin: "lathe.toml:4"}},
	}
	for _, name := range []string{"gh__list_issues", "gh__get_env"} {
		def := &tool.Definition{Name: name, Source: "mcp.gh", Annotations: tool.Annotations{ReadOnlyHint: true}}
		d := p.Decide(def, nil)
		fmt.Printf("%s: %s (%s) %s\n", name, d.Approval, d.By, d.Reason)
	}
	// Output:
	// gh__list_issues: allow (rule) the rule tool="gh__list_issues" approval="allow" (lathe.toml:9)
	// gh__get_env: ask (source) the default approval="ask" of the tools of mcp.gh (lathe.toml:4)
}
