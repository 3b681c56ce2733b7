package config

import (
	"strings"
	"testing"

	"github.com/lathe-tools/lathe/policy"
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

func TestPolicyRuleOperation(t *testing.T) {
	cfg, err := Parse("lathe.toml", []byte("[[policy.rules]]\ntool = \"scrape\"\noperation = \"fetch\"\nargs = \"https://internal.example.com/*\"\napproval = \"deny\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	if r := cfg.Policy.Rules[0]; r.Operation != "fetch" || r.Args != "https://internal.example.com/*" {
		t.Fatalf("rule = %+v", r)
	}
	_, err = Parse("lathe.toml", []byte("[[policy.rules]]\ntool = \"x\"\napproval = \"deny\"\n\n[[policy.rules]]\ntool = \"y\"\napproval = \"deny\"\noperation = \"exec\"\n\n[[policy.rules]]\ntool = \"z\"\noperation = \"read\"\narg = \"path\"\napproval = \"allow\"\n"))
	for _, want := range []string{
		`lathe.toml:8: policy.rules.1.operation: must be one of "read", "write", "list", "stat", "remove", "fetch", "run", "env", or "*" for any, got "exec"`,
		`lathe.toml:10: policy.rules.2: arg does not apply to a rule with operation = "read"`,
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v does not contain %q", err, want)
		}
	}
}

// The configuration and the policy must agree on the operations a rule may
// name: a kind the policy knows but the configuration refuses could never
// be written, and one the configuration accepts but the policy does not
// know would make a rule that matches nothing.
func TestOperationKindsMatchThePolicy(t *testing.T) {
	if got, want := strings.Join(operationKinds, ","), strings.Join(policy.OperationKinds(), ","); got != want {
		t.Errorf("config knows %s, policy %s", got, want)
	}
}
