package config

import (
	"strings"
	"testing"
)

func TestPolicyAndAudit(t *testing.T) {
	cfg, err := Parse("lathe.toml", []byte(`
[[policy.rules]]
tool = "run_command"
args = "git status*"
approval = "allow"

[[policy.rules]]
tool = "*"
approval = "deny"

[audit]
path = "log.db"
redact_keys = ["^x-"]
`))
	if err != nil {
		t.Fatal(err)
	}
	rs := cfg.Policy.Rules
	if len(rs) != 2 || rs[0].Args != "git status*" || rs[1].Approval != "deny" || rs[1].Pos.Line != 7 {
		t.Fatalf("rules: %+v", rs)
	}
	if cfg.Audit.Path != "log.db" || len(cfg.Audit.RedactKeys) != 1 {
		t.Fatalf("audit: %+v", cfg.Audit)
	}
}

func TestBadPolicyNamesItsLine(t *testing.T) {
	_, err := Parse("lathe.toml", []byte("[[policy.rules]]\ntool = \"x\"\napproval = \"maybe\"\n\n[audit]\nredact_values = [\"(\"]\n"))
	for _, want := range []string{`lathe.toml:3: policy.rules.0.approval: must be "allow", "ask" or "deny"`,
		"lathe.toml:6: audit.redact_values.0: invalid regular expression"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v does not contain %q", err, want)
		}
	}
}
