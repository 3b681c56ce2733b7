package policy

import (
	"regexp"
	"strings"
	"testing"
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
