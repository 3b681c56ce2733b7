// Package scope holds the patterns of lathe's host permissions: the
// entries of the read, write, net, env and run keys of a [tools.NAME] or
// [toolsets.NAME] table, how each is written, and what each matches.
//
// A path pattern is relative to the workspace, with "/" between elements:
//
//	src              src and everything below it
//	src/ or src/**   the same
//	src/*.go         every .go file directly in src (and, were one a directory, what is below it)
//	**/*.md          every .md file at any depth
//	.  or  **        the whole workspace
//
// "*" matches any run of characters within one element, "?" one
// character, and an element "**" any number of elements, none included.
// A pattern that matches a directory grants everything below it, as
// Deno's permissions do: [Path.Match] is true for a path when the pattern
// matches the path or one of its parents. Nothing else is special: "[",
// "]" and "\" are characters of a name.
//
// A net pattern names a host, and a port or not: "api.example.com:443",
// "api.example.com" (any port), "*.example.com" ("*" within a label, which
// never matches a dot), "127.0.0.1:8080", "[::1]:8080".
//
// A run entry is a program's name ("git", looked up in PATH) or its path
// ("/usr/bin/git", or "bin/tool" relative to the workspace); a name
// matches only the same name, never a path that ends in it.
//
// An env entry is a variable's name.
//
// The package imports only the standard library, so that the
// configuration's checks and the host share one reading of every pattern.
package scope

import (
	"errors"
	"fmt"
	"net"
	"path"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"
)

// maxElems bounds the elements of a path pattern and of a path matched
// against one: the match costs their product.
const maxElems = 256

// Path is a compiled path pattern. Its zero value matches nothing.
type Path struct {
	src   string
	elems []string // cleaned; nil for the whole workspace
	valid bool
}

// String returns the pattern as written.
func (p Path) String() string { return p.src }

// CheckPath reports what is wrong with a path pattern as written in the
// configuration, or nil. An absolute pattern is accepted here: whether it
// lies inside the workspace is known only where the workspace is.
func CheckPath(p string) error {
	if filepathIsAbs(p) {
		if strings.IndexByte(p, 0) >= 0 {
			return fmt.Errorf("%q contains a NUL byte", p)
		}
		return nil
	}
	_, err := CompilePath(p)
	return err
}

func filepathIsAbs(p string) bool { return strings.HasPrefix(p, "/") }

// CompilePath compiles a pattern relative to the workspace. A pattern that
// climbs out of it with "..", an empty one and an absolute one are errors.
func CompilePath(p string) (Path, error) {
	switch {
	case p == "":
		return Path{}, errors.New(`an empty path; write "." for the whole workspace`)
	case strings.IndexByte(p, 0) >= 0:
		return Path{}, fmt.Errorf("%q contains a NUL byte", p)
	case filepathIsAbs(p):
		return Path{}, fmt.Errorf("%q is absolute; a pattern here is relative to the workspace", p)
	}
	var elems []string
	for _, e := range strings.Split(p, "/") {
		switch e {
		case "", ".":
			continue
		case "..":
			if len(elems) == 0 || elems[len(elems)-1] == "**" || hasMeta(elems[len(elems)-1]) {
				return Path{}, fmt.Errorf("%q leads out of the workspace (or climbs out of a wildcard) with \"..\"; name the paths inside it", p)
			}
			elems = elems[:len(elems)-1]
			continue
		}
		if strings.Contains(e, "**") && e != "**" {
			return Path{}, fmt.Errorf("%q: \"**\" must be a whole element, as in \"src/**/*.go\"", p)
		}
		// Two "**" in a row match what one does.
		if e == "**" && len(elems) > 0 && elems[len(elems)-1] == "**" {
			continue
		}
		elems = append(elems, e)
	}
	if len(elems) > maxElems {
		return Path{}, fmt.Errorf("%q has more than %d elements", p, maxElems)
	}
	// A trailing "**" adds nothing: a match grants what is below it.
	for len(elems) > 0 && elems[len(elems)-1] == "**" {
		elems = elems[:len(elems)-1]
		if len(elems) == 0 {
			break
		}
	}
	return Path{src: p, elems: elems, valid: true}, nil
}

// Whole reports whether the pattern grants the whole workspace.
func (p Path) Whole() bool { return p.valid && len(p.elems) == 0 }

// Prefix returns the part of the pattern before its first wildcard, as a
// path relative to the workspace ("." when it starts with one): a
// directory everything the pattern matches lies in.
func (p Path) Prefix() string {
	var lit []string
	for _, e := range p.elems {
		if e == "**" || hasMeta(e) {
			break
		}
		lit = append(lit, e)
	}
	if len(lit) == 0 {
		return "."
	}
	return strings.Join(lit, "/")
}

// Match reports whether rel, a path relative to the workspace with "/"
// between elements, free of "." and ".." elements ("." for the root
// itself), is granted: the pattern matches it or one of its parents.
func (p Path) Match(rel string) bool {
	if !p.valid {
		return false
	}
	if len(p.elems) == 0 {
		return true
	}
	if rel == "." || rel == "" {
		return false
	}
	names := strings.Split(rel, "/")
	if len(names) > maxElems*16 {
		return false
	}
	return matchAnyPrefix(p.elems, names)
}

// matchAnyPrefix reports whether pat matches names[:k] for some k, by
// dynamic programming over (pattern element, name) pairs: "**" never
// makes it backtrack without bound.
func matchAnyPrefix(pat, names []string) bool {
	// cur[j]: pat[:i] matches names[:j].
	cur := make([]bool, len(names)+1)
	next := make([]bool, len(names)+1)
	cur[0] = true
	for _, pe := range pat {
		clear(next)
		any := false
		for j := 0; j <= len(names); j++ {
			if pe == "**" {
				next[j] = cur[j] || (j > 0 && next[j-1])
			} else if j > 0 {
				next[j] = cur[j-1] && matchElem(pe, names[j-1])
			}
			any = any || next[j]
		}
		if !any {
			return false
		}
		cur, next = next, cur
	}
	for _, ok := range cur {
		if ok {
			return true
		}
	}
	return false
}

func hasMeta(e string) bool { return strings.ContainsAny(e, "*?") }

// matchElem matches one element against a pattern of "*" and "?", in
// linear time for each star (the classic greedy algorithm with one
// backtrack point).
func matchElem(pat, name string) bool {
	p, n := 0, 0
	star, mark := -1, 0
	for n < len(name) {
		switch {
		case p < len(pat) && pat[p] == '*':
			star, mark = p, n
			p++
		case p < len(pat) && (pat[p] == '?' || pat[p] == name[n]):
			if pat[p] == '?' {
				// "?" is one character, not one byte.
				_, size := utf8.DecodeRuneInString(name[n:])
				n += size
			} else {
				n++
			}
			p++
		case star >= 0:
			p = star + 1
			mark++
			n = mark
		default:
			return false
		}
	}
	for p < len(pat) && pat[p] == '*' {
		p++
	}
	return p == len(pat)
}

// Net is a compiled net pattern.
type Net struct {
	src    string
	labels []string // lower case, for a name
	ip     net.IP   // for an address
	port   int      // 0: any
}

// String returns the pattern as written.
func (n Net) String() string { return n.src }

// Literal reports whether the pattern names one host, without a wildcard.
func (n Net) Literal() bool {
	if n.ip != nil {
		return true
	}
	for _, l := range n.labels {
		if hasMeta(l) {
			return false
		}
	}
	return len(n.labels) > 0
}

// IP returns the address the pattern names, nil for a name.
func (n Net) IP() net.IP { return n.ip }

var labelPattern = regexp.MustCompile(`^[a-z0-9_*?-]{1,63}$`)

// CompileNet compiles a net pattern: "host", "host:port" or
// "[ipv6]:port", with "*" or "?" within a label of a name.
func CompileNet(s string) (Net, error) {
	if s == "" {
		return Net{}, errors.New(`an empty host; write "api.example.com:443" or "api.example.com"`)
	}
	if strings.Contains(s, "://") || strings.ContainsAny(s, "/@") {
		return Net{}, fmt.Errorf("%q is not a host: net lists hosts, as in \"api.example.com:443\", not URLs", s)
	}
	host, port := s, ""
	switch {
	case strings.HasPrefix(s, "["):
		h, p, err := net.SplitHostPort(s)
		if err != nil {
			if end := strings.IndexByte(s, ']'); end == len(s)-1 {
				h, p = s[1:end], ""
			} else {
				return Net{}, fmt.Errorf("%q: %v", s, err)
			}
		}
		host, port = h, p
	case strings.Count(s, ":") == 1:
		host, port, _ = strings.Cut(s, ":")
	}
	n := Net{src: s}
	if port != "" && port != "*" {
		v, err := strconv.Atoi(port)
		if err != nil || v < 1 || v > 65535 {
			return Net{}, fmt.Errorf("%q: the port must be a number from 1 to 65535", s)
		}
		n.port = v
	}
	if ip := net.ParseIP(host); ip != nil {
		n.ip = ip
		return n, nil
	}
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	if host == "" {
		return Net{}, fmt.Errorf("%q names no host", s)
	}
	labels := strings.Split(host, ".")
	for _, l := range labels {
		if !labelPattern.MatchString(l) {
			return Net{}, fmt.Errorf("%q is not a host name: each label is letters, digits, - or _, with * or ? for any", s)
		}
	}
	if len(labels) == 1 && labels[0] == "*" {
		return Net{}, fmt.Errorf("%q would match only one-label names (as localhost), not every host; list the hosts (\"*.example.com\" for the names in one domain)", s)
	}
	n.labels = labels
	return n, nil
}

// Match reports whether the pattern grants host (a name or an address,
// as in a URL, brackets allowed around an IPv6 one) on port.
func (n Net) Match(host string, port int) bool {
	if n.port != 0 && n.port != port {
		return false
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if ip := net.ParseIP(host); ip != nil || n.ip != nil {
		return ip != nil && n.ip != nil && ip.Equal(n.ip)
	}
	if len(n.labels) == 0 {
		return false
	}
	labels := strings.Split(strings.TrimSuffix(strings.ToLower(host), "."), ".")
	if len(labels) != len(n.labels) {
		return false
	}
	for i, l := range labels {
		if !matchElem(n.labels[i], l) {
			return false
		}
	}
	return true
}

var envPattern = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// CheckEnv reports what is wrong with an env entry: it must be a
// variable's name, without a wildcard.
func CheckEnv(name string) error {
	if !envPattern.MatchString(name) {
		return fmt.Errorf("%q is not a variable name; env lists names, whose values come from lathe's environment", name)
	}
	return nil
}

// CheckRun reports what is wrong with a run entry: a program's name
// (no "/") or its path, absolute or relative to the workspace, that stays
// inside it.
func CheckRun(prog string) error {
	switch {
	case prog == "":
		return errors.New("an empty program name")
	case strings.IndexByte(prog, 0) >= 0:
		return fmt.Errorf("%q contains a NUL byte", prog)
	case strings.ContainsAny(prog, "*?"):
		return fmt.Errorf("%q: run lists programs by name or path, without wildcards", prog)
	case strings.ContainsAny(prog, " \t\n") && !strings.ContainsRune(prog, '/'):
		return fmt.Errorf("%q: run lists programs, not command lines; the tool gives the arguments", prog)
	case strings.ContainsRune(prog, '/') && !filepathIsAbs(prog):
		if c := path.Clean(prog); c == ".." || strings.HasPrefix(c, "../") {
			return fmt.Errorf("%q leads out of the workspace", prog)
		}
	}
	return nil
}
