package tools

import "strings"

// matchLineEndings returns old and new with their line endings made those
// of text, a file's content, so that an edit written with "\n" (as models and
// terminals write text) matches a file whose lines end in "\r\n", and the
// lines it adds end as the file's other lines do.
//
// A file whose every line ends in "\r\n" gets "\r\n" in old and new. In a
// file that mixes both endings, old is taken as written when it occurs, and
// with "\r\n" only when it does not occur as written; new follows old. A file
// with no "\r\n" changes nothing.
func matchLineEndings(text, old, new string) (string, string) {
	if !strings.Contains(text, "\r\n") || !strings.Contains(old+new, "\n") {
		return old, new
	}
	if !hasLoneLF(text) {
		return toCRLF(old), toCRLF(new)
	}
	if strings.Contains(text, old) {
		return old, new
	}
	if o := toCRLF(old); o != old && strings.Contains(text, o) {
		return o, toCRLF(new)
	}
	return old, new
}

// hasLoneLF reports whether s holds a "\n" not preceded by "\r".
func hasLoneLF(s string) bool {
	for i := strings.IndexByte(s, '\n'); i >= 0; {
		if i == 0 || s[i-1] != '\r' {
			return true
		}
		j := strings.IndexByte(s[i+1:], '\n')
		if j < 0 {
			return false
		}
		i += j + 1
	}
	return false
}

// toCRLF returns s with every "\n" not preceded by "\r" made "\r\n".
func toCRLF(s string) string {
	if !hasLoneLF(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + strings.Count(s, "\n"))
	for i := 0; i < len(s); i++ {
		if s[i] == '\n' && (i == 0 || s[i-1] != '\r') {
			b.WriteByte('\r')
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
