package load_test

import (
	"strings"
	"testing"

	"github.com/lathe-tools/lathe/config"
	"github.com/lathe-tools/lathe/load"
	"github.com/lathe-tools/lathe/policy"
	"github.com/lathe-tools/lathe/tool"
)

// Each way a call can be denied with nobody answering is told the line
// that decided and the key that would let the call run, and not a key that
// would not: a rule for the tool does not beat a rule as specific, and a
// tool that says it destroys is not offered as read-only.
func TestRemedy(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	cfg, err := config.Parse("/ws/lathe.toml", []byte(`
[mcp.up]
command = ["up"]
approval = "ask"

[mcp.honest]
command = ["honest"]
trust_annotations = true

[mcp.plain]
command = ["plain"]

[[policy.rules]]
tool = "run_command"
args = "rm *"
approval = "deny"

[[policy.rules]]
tool = "write_*"
approval = "ask"

[[policy.rules]]
tool = "edit_file"
approval = "ask"

[[policy.rules]]
tool = "run_command"
args = "echo *"
approval = "allow"
`))
	if err != nil {
		t.Fatal(err)
	}
	p, remedy := load.Policy(cfg), load.Remedy(cfg)
	destructive := tool.Annotations{DestructiveHint: tool.Bool(true)}
	for _, tc := range []struct {
		def       tool.Definition
		args      any
		want, not []string
	}{
		{tool.Definition{Name: "run_command"}, map[string]any{"command": "rm -rf ~"},
			[]string{"a deny rule always wins", "the rule at /ws/lathe.toml:13"}, []string{"[[policy.rules]] tool"}},
		{tool.Definition{Name: "run_command"}, map[string]any{"command": "echo 'unclosed"},
			[]string{"the deny rule at /ws/lathe.toml:13 could not read the command"}, nil},
		{tool.Definition{Name: "write_file", Annotations: destructive}, nil,
			[]string{`add [[policy.rules]] tool = "write_file", approval = "allow" in /ws/lathe.toml (then lathe trust)`,
				"more specific than the rule at /ws/lathe.toml:18"}, []string{"read_only"}},
		{tool.Definition{Name: "edit_file", Annotations: destructive}, nil,
			[]string{`change the rule at /ws/lathe.toml:22 to approval = "allow"`}, []string{"add [[policy.rules]]"}},
		{tool.Definition{Name: "up__environ", Source: "mcp.up"}, nil,
			[]string{`add [[policy.rules]] tool = "up__environ", approval = "allow"`, `[mcp.up] approval = "ask" at /ws/lathe.toml:4`}, nil},
		{tool.Definition{Name: "honest__get", Source: "mcp.honest"}, nil,
			[]string{`[mcp.honest] approval = "allow"`, "[tools.honest__get] read_only = true"}, []string{"trust_annotations"}},
		{tool.Definition{Name: "plain__get", Source: "mcp.plain"}, nil,
			[]string{`[mcp.plain] approval = "allow"`, "counts only with [mcp.plain] trust_annotations = true"}, nil},
		{tool.Definition{Name: "list_things"}, nil,
			[]string{`add [[policy.rules]] tool = "list_things"`, "[tools.list_things] read_only = true"}, []string{"trust_annotations"}},
	} {
		d := p.Decide(&tc.def, tc.args)
		if d.Approval == policy.Allow {
			t.Fatalf("%s %v: allowed (%s), want a case for the remedy", tc.def.Name, tc.args, d.Reason)
		}
		got := remedy(&tc.def, d)
		for _, w := range tc.want {
			if !strings.Contains(got, w) {
				t.Errorf("%s %v: remedy %q, want it to say %q", tc.def.Name, tc.args, got, w)
			}
		}
		for _, n := range tc.not {
			if strings.Contains(got, n) {
				t.Errorf("%s %v: remedy %q, want it not to say %q", tc.def.Name, tc.args, got, n)
			}
		}
	}
}
