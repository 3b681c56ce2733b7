package cli

import "testing"

func TestEscapeControls(t *testing.T) {
	for in, want := range map[string]string{
		"plain text\n\tindented": "plain text\n\tindented",
		"héllo, 世界":              "héllo, 世界",
		"\x1b]0;pwned\x07title":  `\x1b]0;pwned\x07title`,
		"\x1b[2J\x1b[Hcleared":   `\x1b[2J\x1b[Hcleared`,
		"over\rwritten":          `over\rwritten`,
		"del\x7f":                `del\x7f`,
		"c1 \u009b31m":           `c1 \u009b31m`,
		"raw \x9b31m":            `raw \x9b31m`,
		"cut \xe4\xb8":           `cut \xe4\xb8`,
	} {
		if got := string(escapeControls([]byte(in))); got != want {
			t.Errorf("escapeControls(%q) = %q, want %q", in, got, want)
		}
	}
}
