package trust

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// maxDiffCells bounds the work of [Diff]: past it, the files are shown whole
// rather than compared line by line.
const maxDiffCells = 1 << 20

// Diff returns the lines of old that are not in new, marked "- ", and those
// of new that are not in old, marked "+ ", in file order, with the lines
// they share marked "  ". It returns "" when old and new are equal. Lines
// are shown [Visible].
func Diff(old, new string) string {
	if old == new {
		return ""
	}
	a, b := lines(old), lines(new)
	var sb strings.Builder
	if len(a)*len(b) > maxDiffCells {
		for _, l := range a {
			sb.WriteString("- " + l + "\n")
		}
		for _, l := range b {
			sb.WriteString("+ " + l + "\n")
		}
		return sb.String()
	}
	// lcs[i][j] is the length of the longest common subsequence of a[i:]
	// and b[j:].
	lcs := make([][]int, len(a)+1)
	for i := range lcs {
		lcs[i] = make([]int, len(b)+1)
	}
	for i := len(a) - 1; i >= 0; i-- {
		for j := len(b) - 1; j >= 0; j-- {
			if a[i] == b[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		switch {
		case i < len(a) && j < len(b) && a[i] == b[j]:
			sb.WriteString("  " + a[i] + "\n")
			i, j = i+1, j+1
		case i < len(a) && (j == len(b) || lcs[i+1][j] >= lcs[i][j+1]):
			sb.WriteString("- " + a[i] + "\n")
			i++
		default:
			sb.WriteString("+ " + b[j] + "\n")
			j++
		}
	}
	return sb.String()
}

// lines splits s into lines, each made [Visible].
func lines(s string) []string {
	if s == "" {
		return nil
	}
	ls := strings.Split(strings.TrimSuffix(s, "\n"), "\n")
	for i, l := range ls {
		ls[i] = Visible(l)
	}
	return ls
}

// Visible returns line as it can be shown on a terminal without deceiving:
// a line holding a control character (a carriage return or an escape
// sequence could hide what follows it) or bytes that are not UTF-8 is shown
// quoted, with those escaped.
func Visible(line string) string {
	ok := utf8.ValidString(line) && !strings.ContainsFunc(line, func(r rune) bool {
		return r != '\t' && (unicode.IsControl(r) || unicode.Is(unicode.Cf, r))
	})
	if ok {
		return line
	}
	return strconv.Quote(line)
}
