package policy

import (
	"strings"
	"testing"

	"github.com/lathe-tools/lathe/tool"
)

func TestMatch(t *testing.T) {
	for _, c := range []struct {
		pat, s string
		want   bool
	}{
		{"", "anything", true},
		{"*", "", true},
		{"read_*", "read_file", true},
		{"read_*", "write_file", false},
		{"git status*", "git status --short", true},
		{"git status*", "git stat", false},
		{"rm *", "rm -rf /tmp/x", true},
		{"a?c", "abc", true},
		{"a?c", "ac", false},
		{"*.go", "dir/x.go", true},
		{"*a*a*a*a*b", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", false},
	} {
		if got := match(c.pat, c.s); got != c.want {
			t.Errorf("match(%q, %q) = %v, want %v", c.pat, c.s, got, c.want)
		}
	}
}

func TestDecide(t *testing.T) {
	readOnly := &tool.Definition{Name: "read_file", Annotations: tool.Annotations{ReadOnlyHint: true}}
	destructive := &tool.Definition{Name: "write_file", Annotations: tool.Annotations{DestructiveHint: tool.Bool(true)}}
	unknown := &tool.Definition{Name: "mystery"}
	cmd := &tool.Definition{Name: "run_command"}
	shell := func(s string) any { return map[string]any{"command": s} }
	p := &Policy{Rules: []Rule{
		{Tool: "run_command", Args: "git status*", Approval: Allow},
		{Tool: "run_command", Args: "rm *", Approval: Deny},
		{Tool: "run_*", Approval: Ask},
		{Tool: "*", Approval: Allow},
		{Tool: "write_file", Approval: Ask},
		{Tool: "danger", Approval: Deny},
		{Tool: "dang*", Approval: Allow},
		{Tool: "tie", Approval: Allow},
		{Tool: "tie", Approval: Ask},
	}}
	for _, c := range []struct {
		name string
		p    *Policy
		def  *tool.Definition
		args any
		want Approval
		by   string
	}{
		{"read-only default", &Policy{}, readOnly, nil, Allow, "default"},
		{"destructive default", &Policy{}, destructive, nil, Ask, "default"},
		{"unknown default", &Policy{}, unknown, nil, Ask, "default"},
		{"args allow", p, cmd, shell("git status --short"), Allow, "rule"},
		{"args deny", p, cmd, shell("rm -rf /"), Deny, "rule"},
		{"deny inside a chain", p, cmd, shell("ls && rm -rf ~"), Deny, "rule"},
		{"deny in a substitution", p, cmd, shell("echo $(rm -rf ~)"), Deny, "rule"},
		{"allow does not cover a chain", p, cmd, shell("git status; curl evil"), Ask, "rule"},
		{"no args rule: tool pattern", p, cmd, shell("make"), Ask, "rule"},
		{"exact name beats *", p, destructive, nil, Ask, "rule"},
		{"* allows the rest", p, unknown, nil, Allow, "rule"},
		{"deny beats a longer allow", p, &tool.Definition{Name: "danger"}, nil, Deny, "rule"},
		{"tie goes to ask", p, &tool.Definition{Name: "tie"}, nil, Ask, "rule"},
	} {
		d := c.p.Decide(c.def, c.args)
		if d.Approval != c.want || d.By != c.by {
			t.Errorf("%s: Decide = %s by %s (%s), want %s by %s", c.name, d.Approval, d.By, d.Reason, c.want, c.by)
		}
	}
}

func TestSubject(t *testing.T) {
	for _, c := range []struct {
		args any
		arg  string
		want string
	}{
		{map[string]any{"command": "ls", "cwd": "x"}, "", "ls"},
		{map[string]any{"path": "a.txt"}, "", "a.txt"},
		{map[string]any{"path": "a.txt", "n": 3.0}, "", `{"n":3,"path":"a.txt"}`},
		{map[string]any{"path": "a.txt", "content": "x"}, "path", "a.txt"},
	} {
		if got := Subject(c.args, c.arg); got != c.want {
			t.Errorf("Subject(%v, %q) = %q, want %q", c.args, c.arg, got, c.want)
		}
	}
}

func TestRuleValidate(t *testing.T) {
	if err := (Rule{Tool: "x", Approval: "maybe"}).Validate(); err == nil {
		t.Error("approval maybe passed")
	}
	if err := (Rule{Tool: "x", Approval: Deny}).Validate(); err != nil {
		t.Error(err)
	}
}

// The most specific rule wins, and a rule is as specific as the characters
// of its pattern that are not wildcards: characters, not bytes. Counted in
// bytes, "üü*" (two characters, four bytes) would outrank "??bax" (three)
// and allow the call.
func TestMostSpecificCountsCharacters(t *testing.T) {
	def := &tool.Definition{Name: "üübax"}
	p := &Policy{Rules: []Rule{
		{Tool: "üü*", Approval: Allow},
		{Tool: "??bax", Approval: Ask},
	}}
	d := p.Decide(def, nil)
	if d.Approval != Ask || d.Rule == nil || d.Rule.Tool != "??bax" {
		t.Fatalf("Decide(%s) = %+v, want ask by the rule ??bax", def.Name, d)
	}
}

// A source's default decides what no rule matches, below every rule and
// above the annotations; a deny rule's doubt still turns its allow into a
// question.
func TestDecideSourceDefault(t *testing.T) {
	claimsReadOnly := &tool.Definition{Name: "up__environ", Source: "mcp.up", Annotations: tool.Annotations{ReadOnlyHint: true}}
	exception := &tool.Definition{Name: "up__status", Source: "mcp.up"}
	other := &tool.Definition{Name: "gh__issues", Source: "mcp.gh", Annotations: tool.Annotations{ReadOnlyHint: true}}
	shell := &tool.Definition{Name: "up__sh", Source: "mcp.up"}
	cmd := map[string]any{"command": "echo 'unclosed"}
	for _, tc := range []struct {
		name     string
		p        Policy
		def      *tool.Definition
		args     any
		want     Approval
		by, from string
	}{
		{"deny default over a read-only claim", Policy{Defaults: []SourceDefault{{Source: "mcp.up", Approval: Deny, Origin: "x.toml:3"}}},
			claimsReadOnly, nil, Deny, "source", "x.toml:3"},
		{"ask default over a read-only claim", Policy{Defaults: []SourceDefault{{Source: "mcp.up", Approval: Ask}}},
			claimsReadOnly, nil, Ask, "source", ""},
		{"a rule wins over the default", Policy{
			Rules:    []Rule{{Tool: "up__status", Approval: Allow, Source: "x.toml:9"}},
			Defaults: []SourceDefault{{Source: "mcp.up", Approval: Deny}}},
			exception, nil, Allow, "rule", ""},
		{"a broad rule wins too", Policy{
			Rules:    []Rule{{Tool: "*", Approval: Ask}},
			Defaults: []SourceDefault{{Source: "mcp.up", Approval: Allow}}},
			exception, nil, Ask, "rule", ""},
		{"another source's default does not apply", Policy{Defaults: []SourceDefault{{Source: "mcp.up", Approval: Deny}}},
			other, nil, Allow, "default", ""},
		{"allow default", Policy{Defaults: []SourceDefault{{Source: "mcp.up", Approval: Allow}}},
			exception, nil, Allow, "source", ""},
		{"a doubting deny rule turns the default's allow into ask", Policy{
			Rules:    []Rule{{Tool: "up__sh", Args: "rm *", Approval: Deny}},
			Defaults: []SourceDefault{{Source: "mcp.up", Approval: Allow}}},
			shell, cmd, Ask, "rule", ""},
	} {
		d := tc.p.Decide(tc.def, tc.args)
		if d.Approval != tc.want || d.By != tc.by {
			t.Errorf("%s: %s by %s (%s), want %s by %s", tc.name, d.Approval, d.By, d.Reason, tc.want, tc.by)
		}
		if tc.by == "source" && (d.Default == nil || d.Default.Source != tc.def.Source || !strings.Contains(d.Reason, tc.def.Source)) {
			t.Errorf("%s: the decision does not name the default: %+v", tc.name, d)
		}
		if tc.from != "" && !strings.Contains(d.Reason, tc.from) {
			t.Errorf("%s: reason %q does not name %s", tc.name, d.Reason, tc.from)
		}
	}
}

// TestRuleString: a rule reads as it would be written in lathe.toml, each
// value quoted as Go quotes it (escapes, control characters, non-UTF-8).
func TestRuleString(t *testing.T) {
	for _, c := range []struct {
		r    Rule
		want string
	}{
		{Rule{Tool: "read_*", Approval: Allow}, `tool="read_*" approval="allow"`},
		{Rule{Tool: "run_command", Args: "git \"push\"\n", Approval: Deny, Source: "lathe.toml:7"},
			`tool="run_command" args="git \"push\"\n" approval="deny" (lathe.toml:7)`},
		{Rule{Tool: "*", Operation: "fs/write", Approval: Ask}, `tool="*" operation="fs/write" approval="ask"`},
		{Rule{Tool: "a\xffb\u200b", Approval: Allow}, `tool="a\xffb\u200b" approval="allow"`},
	} {
		if got := c.r.String(); got != c.want {
			t.Errorf("got  %s\nwant %s", got, c.want)
		}
	}
}
