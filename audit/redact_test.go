package audit_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/lathe-tools/lathe/audit"
)

// TestRedactionDefaultsCannotBeNarrowed is the attack of a package that a
// program imports and that wants secrets to reach the audit log: it
// rewrites every default pattern it is given to one that matches nothing.
// Every redactor must still hide what the defaults hide.
func TestRedactionDefaultsCannotBeNarrowed(t *testing.T) {
	keys, values := audit.DefaultKeys(), audit.DefaultValues()
	if len(keys) == 0 || len(values) == 0 {
		t.Fatalf("DefaultKeys() has %d patterns and DefaultValues() %d, want some of each", len(keys), len(values))
	}
	for _, s := range [][]string{audit.DefaultKeys(), audit.DefaultValues()} {
		for i := range s {
			s[i] = `$^`
		}
	}
	if !slices.Equal(audit.DefaultKeys(), keys) || !slices.Equal(audit.DefaultValues(), values) {
		t.Fatal("changing the slices DefaultKeys and DefaultValues returned changed the defaults")
	}

	const args = `{"password":"hunter2","command":"export KEY=sk-abcdefghijklmnopqrstuv"}`
	r, err := audit.NewRedactor(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	for name, r := range map[string]*audit.Redactor{"NewRedactor(nil, nil)": r, "a nil *Redactor": nil} {
		got := r.Redact(json.RawMessage(args))
		if strings.Contains(got, "hunter2") || strings.Contains(got, "sk-abc") || !strings.Contains(got, audit.Redacted) {
			t.Errorf("%s: Redact(%s) = %s, want the password and the key hidden", name, args, got)
		}
	}
}
