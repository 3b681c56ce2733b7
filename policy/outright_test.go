package policy

import (
	"testing"

	"github.com/lathe-tools/lathe/tool"
)

// DeniesOutright agrees with Decide: whenever it says a tool is denied
// outright, Decide denies the tool's calls whatever their arguments; and
// it says so only then.
func TestDeniesOutright(t *testing.T) {
	def := func(name, source string) *tool.Definition { return &tool.Definition{Name: name, Source: source} }
	cases := []struct {
		name   string
		p      Policy
		def    *tool.Definition
		denied bool
	}{
		{"deny rule", Policy{Rules: []Rule{{Tool: "write_*", Approval: Deny}}}, def("write_file", ""), true},
		{"deny rule beats a more specific allow", Policy{Rules: []Rule{{Tool: "write_file", Approval: Allow}, {Tool: "*", Approval: Deny}}}, def("write_file", ""), true},
		{"deny for some arguments", Policy{Rules: []Rule{{Tool: "run_command", Args: "rm *", Approval: Deny}}}, def("run_command", ""), false},
		{"ask", Policy{Rules: []Rule{{Tool: "write_file", Approval: Ask}}}, def("write_file", ""), false},
		{"another tool's deny", Policy{Rules: []Rule{{Tool: "write_file", Approval: Deny}}}, def("read_file", ""), false},
		{"operation rule", Policy{Rules: []Rule{{Tool: "fetch", Operation: "fetch", Approval: Deny}}}, def("fetch", ""), false},
		{"source default", Policy{Defaults: []SourceDefault{{Source: "mcp.web", Approval: Deny}}}, def("get", "mcp.web"), true},
		{"source default and an allow rule", Policy{Rules: []Rule{{Tool: "get", Args: "https://ok/*", Approval: Allow}},
			Defaults: []SourceDefault{{Source: "mcp.web", Approval: Deny}}}, def("get", "mcp.web"), false},
		{"no rule", Policy{}, def("write_file", ""), false},
	}
	argsSets := []any{map[string]any{}, map[string]any{"command": "rm -rf /", "url": "https://ok/x"}, map[string]any{"path": "a.txt"}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d, denied := c.p.DeniesOutright(c.def)
			if denied != c.denied {
				t.Fatalf("DeniesOutright = %v, want %v", denied, c.denied)
			}
			if !denied {
				return
			}
			if d.Approval != Deny || d.Reason == "" {
				t.Errorf("the decision %+v is not a denial with a reason", d)
			}
			for _, args := range argsSets {
				if got := c.p.Decide(c.def, args); got.Approval != Deny {
					t.Errorf("Decide(%v) = %s, but the tool was said to be denied outright", args, got.Approval)
				}
			}
		})
	}
}
