package lathe

import (
	"strings"
	"testing"
)

func TestScrubURLs(t *testing.T) {
	for _, c := range []struct {
		in, want string
		secrets  []string
	}{
		{"src/main.go", "src/main.go", nil},
		{"https://api.example.com/v1/items", "https://api.example.com/v1/items", nil},
		{"https://bob:hunter2@api.example.com/x?token=abc&page=2#frag",
			"https://%5Bredacted%5D@api.example.com/x?token=[redacted]&page=[redacted]#%5Bredacted%5D",
			[]string{"bob", "hunter2", "abc", "frag"}},
		{"HTTP://Example.com/?sig", "http://Example.com/?[redacted]", []string{"sig"}},
		// A query is not decoded, so a bad escape in it does not matter; text
		// that does not parse keeps its scheme and host alone.
		{"https://x.example.com?token=abc%zz", "https://x.example.com?token=[redacted]", []string{"abc"}},
		{"https://u:p@x.example.com%zz/a?k=v", "https://[redacted]@x.example.com%zz/[redacted]", []string{"u:p", "k=v"}},
		{`git clone https://tok@github.example/r.git && curl "https://api.example.com/?key=s3cr3t"`,
			`git clone https://%5Bredacted%5D@github.example/r.git && curl "https://api.example.com/?key=[redacted]"`,
			[]string{"tok@", "s3cr3t"}},
	} {
		got := scrubURLs(c.in)
		if got != c.want {
			t.Errorf("scrubURLs(%q) = %q, want %q", c.in, got, c.want)
		}
		for _, s := range c.secrets {
			if strings.Contains(got, s) {
				t.Errorf("scrubURLs(%q) kept %q", c.in, s)
			}
		}
	}
}
