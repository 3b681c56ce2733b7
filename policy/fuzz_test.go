package policy

import (
	"regexp"
	"strings"
	"testing"

	"github.com/lathe-tools/lathe/tool"
)

// FuzzMatch checks the glob matcher against a regular expression built from
// the same pattern.
func FuzzMatch(f *testing.F) {
	for _, s := range [][2]string{{"git status*", "git status -s"}, {"rm *", "rm"}, {"a*b?c", "axxbyc"}, {"**", ""}} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, pattern, s string) {
		if pattern == "" {
			return
		}
		var re strings.Builder
		re.WriteString(`(?s)^`)
		for _, r := range pattern {
			switch r {
			case '*':
				re.WriteString(`.*`)
			case '?':
				re.WriteString(`.`)
			default:
				re.WriteString(regexp.QuoteMeta(string(r)))
			}
		}
		re.WriteString(`$`)
		want := regexp.MustCompile(re.String()).MatchString(strings.ToValidUTF8(s, "\uFFFD"))
		if got := match(pattern, strings.ToValidUTF8(s, "\uFFFD")); got != want {
			t.Errorf("match(%q, %q) = %v, regexp says %v", pattern, s, got, want)
		}
	})
}

// FuzzDecideOperation checks, for any subject, that a deny rule which
// matches an operation's subject always denies it, whatever allow rule is
// more specific, and that rules about operations never decide a call.
func FuzzDecideOperation(f *testing.F) {
	for _, s := range [][3]string{
		{"run", "rm *", "sh -c 'rm -rf ~'"}, {"fetch", "*/admin*", "https://x.example/admin"},
		{"read", "src/*", "src/../secret"}, {"env", "AWS_*", "AWS_SECRET"},
	} {
		f.Add(s[0], s[1], s[2])
	}
	f.Fuzz(func(t *testing.T, kind, deny, subject string) {
		// An empty kind would make the first rule one about calls.
		if deny == "" || kind == "" {
			return
		}
		def := &tool.Definition{Name: "confined"}
		p := &Policy{Rules: []Rule{
			{Tool: "confined", Operation: kind, Args: subject, Approval: Allow},
			{Tool: "*", Operation: "*", Args: deny, Approval: Deny},
		}}
		d := p.DecideOperation(def, OperationRequest{Kind: kind, Subject: subject})
		// A command line is read as a call's is, without the spaces
		// around it; any other subject (a path, a URL) is matched as it is.
		text := subject
		if kind == "run" {
			text = strings.TrimSpace(subject)
		}
		if match(deny, text) && d.Approval != Deny {
			t.Errorf("deny %q matches %q (%s), yet %s", deny, subject, kind, d.Approval)
		}
		if c := p.Decide(def, map[string]any{"command": subject}); c.By != "default" {
			t.Errorf("a rule about operations decided a call: %+v", c)
		}
	})
}
