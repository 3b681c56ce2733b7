package cli

import (
	"reflect"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/pelletier/go-toml/v2"

	"github.com/lathe-tools/lathe/config"
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

// What lathe config prints is a configuration file: read back, it sets the
// same values (lathe's defaults among them), so a person can copy from it.
func TestConfigOutputIsTOML(t *testing.T) {
	in := strings.Join([]string{
		`[defaults]`,
		`timeout = "90s"`,
		`[tools.lint]`,
		`command = ["sh", "lint.sh", "{path}"]`,
		`enable = false`,
		`options = { level = 3, tags = ["a"], deep = { x = 1.5 } }`,
		`[tools.lint.parameters.path]`,
		`description = "A \"file\"."`,
		`[tools.glob]`,
		`summary = "tab\there\u001b"`,
		`[mcp.web]`,
		`url = "https://example.invalid/"`,
		`headers = { "X.Api-Key" = "${KEY}" }`,
		`[mcp.gh]`,
		`command = ["gh-mcp"]`,
		`env = { GH_HOST = "${HOST}" }`,
		`prefix = ""`,
		`[[policy.rules]]`,
		`tool = "run_command"`,
		`args = "rm *"`,
		`approval = "deny"`,
		`[[policy.rules]]`,
		`tool = "glob"`,
		`approval = "allow"`,
		`[sandbox.permissions]`,
		`read = ["/opt"]`,
		`network = true`,
		``,
	}, "\n")
	cfg, err := config.Parse("lathe.toml", []byte(in))
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	if err := explainConfig(cfg, nil, t.TempDir()).write(&out); err != nil {
		t.Fatal(err)
	}
	back, err := config.Parse("out.toml", []byte(out.String()))
	if err != nil {
		t.Fatalf("the output does not read back: %v\n%s", err, out.String())
	}
	values := func(c *config.Config) map[string]any {
		m := map[string]any{}
		for _, s := range c.Settings() {
			m[s.Name()] = s.Value
		}
		return m
	}
	got, want := values(back), values(cfg)
	for k, v := range want {
		if !reflect.DeepEqual(got[k], v) {
			t.Errorf("%s: read back %#v, want %#v", k, got[k], v)
		}
	}
	if got["audit.enable"] != true || got["sandbox.limits.wall_time"] == nil {
		t.Errorf("the defaults are not in the output:\n%s", out.String())
	}
}
