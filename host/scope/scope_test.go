package scope

import (
	"strings"
	"testing"
)

func TestPathMatch(t *testing.T) {
	cases := []struct {
		pat string
		yes []string
		no  []string
	}{
		{"src", []string{"src", "src/a.go", "src/x/y/z"}, []string{".", "srcs", "secret", "a/src"}},
		{"src/", []string{"src", "src/a.go"}, []string{"srcx", "."}},
		{"src/**", []string{"src", "src/a/b"}, []string{"secret", "."}},
		{"src/*.go", []string{"src/a.go", "src/.go", "src/a.go/inner"}, []string{"src", "src/a.c", "src/x/a.go", "a.go"}},
		{"src/?.go", []string{"src/a.go", "src/é.go"}, []string{"src/ab.go", "src/.go"}},
		{"**/*.md", []string{"a.md", "x/y/a.md", "x/a.md/b"}, []string{"a.txt", "x/md", "."}},
		{"src/**/test", []string{"src/test", "src/a/b/test", "src/test/x"}, []string{"src", "src/a/tests", "test"}},
		{".", []string{".", "a", "a/b"}, nil},
		{"**", []string{".", "a", "a/b"}, nil},
		{"./out/", []string{"out", "out/x"}, []string{"outx", "."}},
		{"src/../secret", []string{"secret", "secret/k"}, []string{"src", "src/secret"}},
		{"a[1]", []string{"a[1]"}, []string{"a1"}},
		{"*", []string{"a", ".hidden", "a/b"}, []string{"."}},
	}
	for _, c := range cases {
		p, err := CompilePath(c.pat)
		if err != nil {
			t.Fatalf("CompilePath(%q): %v", c.pat, err)
		}
		for _, y := range c.yes {
			if !p.Match(y) {
				t.Errorf("%q does not match %q; it should", c.pat, y)
			}
		}
		for _, n := range c.no {
			if p.Match(n) {
				t.Errorf("%q matches %q; it should not", c.pat, n)
			}
		}
	}
}

func TestCompilePathErrors(t *testing.T) {
	for pat, want := range map[string]string{
		"":           "empty",
		"..":         "out of the workspace",
		"../x":       "out of the workspace",
		"src/../../": "out of the workspace",
		"src/*/..":   "wildcard",
		"**/..":      "wildcard",
		"/etc":       "absolute",
		"a/b**":      "whole element",
		"a\x00b":     "NUL",
	} {
		_, err := CompilePath(pat)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("CompilePath(%q) = %v, want an error with %q", pat, err, want)
		}
	}
	if err := CheckPath("/abs/path"); err != nil {
		t.Errorf("CheckPath of an absolute path: %v (the host decides where it lies)", err)
	}
	if err := CheckPath("../up"); err == nil {
		t.Error("CheckPath(../up) = nil, want an error")
	}
}

func TestPathPrefix(t *testing.T) {
	for pat, want := range map[string]string{"src/**": "src", "src/*.go": "src", "**/x": ".", "a/b/c": "a/b/c", ".": "."} {
		p, err := CompilePath(pat)
		if err != nil {
			t.Fatal(err)
		}
		if got := p.Prefix(); got != want {
			t.Errorf("Prefix(%q) = %q, want %q", pat, got, want)
		}
	}
}

func TestPathManyStars(t *testing.T) {
	// Many "**" and "*" against a long path finish quickly: the matcher
	// never backtracks without bound.
	p, err := CompilePath(strings.Repeat("**/a*a*a*a*b/", 40))
	if err != nil {
		t.Fatal(err)
	}
	name := strings.Repeat(strings.Repeat("a", 60)+"/", 200)
	if p.Match(strings.TrimSuffix(name, "/")) {
		t.Error("matched a path with no b")
	}
}

func TestNetMatch(t *testing.T) {
	cases := []struct {
		pat string
		yes []string // host:port
		no  []string
	}{
		{"api.example.com:443", []string{"api.example.com:443", "API.Example.com.:443"}, []string{"api.example.com:80", "example.com:443", "x.api.example.com:443", "api.example.com.evil.test:443"}},
		{"api.example.com", []string{"api.example.com:1", "api.example.com:443"}, []string{"api2.example.com:443"}},
		{"*.example.com", []string{"a.example.com:443", "b.example.com:80"}, []string{"example.com:443", "a.b.example.com:443", "a.example.com.evil.test:443"}},
		{"127.0.0.1:8080", []string{"127.0.0.1:8080"}, []string{"127.0.0.1:8081", "localhost:8080", "127.1:8080"}},
		{"[::1]:8080", []string{"[::1]:8080", "[0:0::1]:8080"}, []string{"[::2]:8080"}},
		{"::1", []string{"[::1]:1"}, []string{"127.0.0.1:1"}},
	}
	for _, c := range cases {
		n, err := CompileNet(c.pat)
		if err != nil {
			t.Fatalf("CompileNet(%q): %v", c.pat, err)
		}
		for _, hp := range c.yes {
			h, p := split(t, hp)
			if !n.Match(h, p) {
				t.Errorf("%q does not match %q; it should", c.pat, hp)
			}
		}
		for _, hp := range c.no {
			h, p := split(t, hp)
			if n.Match(h, p) {
				t.Errorf("%q matches %q; it should not", c.pat, hp)
			}
		}
	}
}

func split(t *testing.T, hp string) (string, int) {
	i := strings.LastIndexByte(hp, ':')
	port := 0
	for _, c := range hp[i+1:] {
		port = port*10 + int(c-'0')
	}
	return hp[:i], port
}

func TestCompileNetErrors(t *testing.T) {
	for pat, want := range map[string]string{
		"":                        "empty",
		"https://api.example.com": "not URLs",
		"api.example.com/v1":      "not URLs",
		"user@host":               "not URLs",
		"host:0":                  "port",
		"host:99999":              "port",
		"host:http":               "port",
		"*":                       "one-label",
		"*:443":                   "one-label",
		"bad host":                "not a host name",
		"[::1":                    "missing",
	} {
		_, err := CompileNet(pat)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("CompileNet(%q) = %v, want an error with %q", pat, err, want)
		}
	}
}

func TestNetLiteral(t *testing.T) {
	for pat, want := range map[string]bool{"a.example.com": true, "*.example.com": false, "127.0.0.1": true, "localhost:1": true} {
		n, err := CompileNet(pat)
		if err != nil {
			t.Fatal(err)
		}
		if n.Literal() != want {
			t.Errorf("Literal(%q) = %v, want %v", pat, n.Literal(), want)
		}
	}
}

func TestCheckRunEnv(t *testing.T) {
	for _, ok := range []string{"git", "/usr/bin/git", "bin/tool", "./bin/tool"} {
		if err := CheckRun(ok); err != nil {
			t.Errorf("CheckRun(%q): %v", ok, err)
		}
	}
	for _, bad := range []string{"", "git status", "g*", "../bin/x", "a\x00"} {
		if err := CheckRun(bad); err == nil {
			t.Errorf("CheckRun(%q) = nil, want an error", bad)
		}
	}
	if err := CheckEnv("LANG"); err != nil {
		t.Error(err)
	}
	for _, bad := range []string{"", "LC_*", "A=B", "1X"} {
		if err := CheckEnv(bad); err == nil {
			t.Errorf("CheckEnv(%q) = nil, want an error", bad)
		}
	}
}

// FuzzPathMatch checks the matcher against what a pattern promises: a
// literal pattern grants exactly its path and what lies below it, and no
// pattern grants a path outside its literal prefix.
func FuzzPathMatch(f *testing.F) {
	f.Add("src/**", "src/a/b")
	f.Add("src/*.go", "src/x.go")
	f.Add("**/a?", "x/ab")
	f.Add("a/../b", "b/c")
	f.Fuzz(func(t *testing.T, pat, rel string) {
		p, err := CompilePath(pat)
		if err != nil {
			return
		}
		rel = cleanRel(rel)
		got := p.Match(rel)
		pre := p.Prefix()
		if got && pre != "." && rel != pre && !strings.HasPrefix(rel, pre+"/") {
			t.Fatalf("%q matches %q, outside its prefix %q", pat, rel, pre)
		}
		if !strings.ContainsAny(pat, "*?") && !p.Whole() {
			want := rel == pre || strings.HasPrefix(rel, pre+"/")
			if got != want {
				t.Fatalf("literal %q on %q = %v, want %v", pat, rel, got, want)
			}
		}
		// What a pattern grants, it grants below too.
		if got && !p.Match(rel+"/child") && rel != "." {
			t.Fatalf("%q matches %q but not %q", pat, rel, rel+"/child")
		}
	})
}

func cleanRel(rel string) string {
	var out []string
	for _, e := range strings.Split(rel, "/") {
		if e == "" || e == "." || e == ".." {
			continue
		}
		out = append(out, e)
	}
	if len(out) == 0 {
		return "."
	}
	return strings.Join(out, "/")
}

// FuzzNet checks that compiling never panics and a pattern with a port
// never grants another.
func FuzzNet(f *testing.F) {
	f.Add("api.example.com:443", "api.example.com", 443)
	f.Add("*.example.com", "a.example.com", 80)
	f.Add("[::1]:80", "::1", 80)
	f.Fuzz(func(t *testing.T, pat, host string, port int) {
		n, err := CompileNet(pat)
		if err != nil {
			return
		}
		if n.port != 0 && port != n.port && n.Match(host, port) {
			t.Fatalf("%q matches port %d", pat, port)
		}
	})
}
