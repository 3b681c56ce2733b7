package audit

import (
	"strings"
	"testing"
)

// checkNeeds holds Redactor.text to what it does without the cheap tests
// (needs): they may only spare patterns that cannot match.
func checkNeeds(t testing.TB, r *Redactor, s string) {
	slow := &Redactor{keys: r.keys, values: r.values, needs: make([]func(string) bool, len(r.needs))}
	if got, want := r.text(s), slow.text(s); got != want {
		t.Fatalf("text(%q) = %q, without the cheap tests %q", s, got, want)
	}
}

// TestRedactNeeds: each default value pattern's cheap test passes every
// string the pattern matches, in any case where the pattern ignores case.
func TestRedactNeeds(t *testing.T) {
	if len(defaultNeeds) != len(defaultValues) {
		t.Fatalf("%d cheap tests for %d default patterns", len(defaultNeeds), len(defaultValues))
	}
	r, err := NewRedactor(nil, []string{`zz\d+`})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{
		"", "plain text", "sk-abcdefghijklmnopqrstuv", "x ghp_abcdefghijklmnopqrstuvwxyz0123", "AKIAABCDEFGHIJKLMNOP",
		"xoxb-1234567890-abc", "Authorization: Bearer abcdefghijklmnopqrstuvwxyz", "BEARER abcdefghijklmnopqrstuvwxyz",
		"bEaReR\tabcdefghijklmnopqrstuvwxyz==", "-----BEGIN RSA PRIVATE KEY-----\nabc\n-----END RSA PRIVATE KEY-----",
		"PASSWORD=hunter2 and Token=abc&x", "api-key=1 API_KEY=2 apikey=3", "zz123 custom", "ﬀ bearer ſecret=1 K",
	} {
		checkNeeds(t, r, s)
		checkNeeds(t, r, strings.ToUpper(s))
	}
}

func FuzzRedactNeeds(f *testing.F) {
	r, err := NewRedactor(nil, nil)
	if err != nil {
		f.Fatal(err)
	}
	f.Add("Bearer abcdefghijklmnopqrstuvwxyz password=x sk-abcdefghijklmnopqrstuv")
	f.Fuzz(func(t *testing.T, s string) { checkNeeds(t, r, s) })
}
