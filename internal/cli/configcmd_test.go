package cli

import (
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/pelletier/go-toml/v2"
)

// FuzzTOMLString checks that lathe config writes every string as TOML that
// reads back as the same string, and that what it writes holds no control
// or format character a terminal would act on.
func FuzzTOMLString(f *testing.F) {
	for _, s := range []string{"", "plain", "a \"quoted\" \\ path", "\x1b[2J", "line\r\nnext", "\u202eevil", "\u2028", "\U0001F600", "\x00", "\xff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		q := tomlString(s)
		if strings.ContainsFunc(q, func(r rune) bool { return unicode.IsControl(r) || unicode.Is(unicode.Cf, r) }) {
			t.Fatalf("tomlString(%q) = %q holds a control or format character", s, q)
		}
		var doc struct{ K string }
		if err := toml.Unmarshal([]byte("K = "+q), &doc); err != nil {
			t.Fatalf("tomlString(%q) = %s does not read as TOML: %v", s, q, err)
		}
		// Each byte that is not UTF-8 reads back as one replacement
		// character.
		var want strings.Builder
		for i, r := range s {
			if r == utf8.RuneError && !strings.HasPrefix(s[i:], "\uFFFD") {
				want.WriteRune('\uFFFD')
				continue
			}
			want.WriteRune(r)
		}
		if doc.K != want.String() {
			t.Fatalf("tomlString(%q) = %s reads back as %q", s, q, doc.K)
		}
	})
}
