package lathe

import (
	"slices"
	"strings"

	"github.com/lathe-tools/lathe/tool"
)

// maxSuggestions is how many names an unknown tool's error suggests.
const maxSuggestions = 3

// unknownToolError is the error of a call to a tool that is not registered.
// It names the registered tools closest to the name called, so that a model
// that misspelt a name, or left out an upstream server's prefix, can repair
// the call at once instead of listing every tool.
func unknownToolError(name string, reg *registry) *tool.Error {
	msg := "no tool of this name; list the tools to see what exists"
	if s := suggest(name, reg); len(s) > 0 {
		msg = "no tool of this name; did you mean " + strings.Join(s, ", ") + "? (list the tools to see what exists)"
	}
	return &tool.Error{Kind: tool.KindUnknownTool, Tool: name, Stage: "resolve", Message: msg}
}

// UnknownTool returns the error of a call to name, a tool e does not hold:
// an error of kind [tool.KindUnknownTool] whose message suggests the
// registered names closest to it. Faces that look a tool up before calling
// it ("describe", a face's catalog) report a miss with it, as a call would.
func (e *Engine) UnknownTool(name string) *tool.Error {
	return unknownToolError(name, e.tools.Load())
}

// suggest returns up to [maxSuggestions] registered names close to name,
// closest first and none much farther than the closest: the same name in
// another case, a name that is name with an upstream server's prefix ("files__read_file" for "read_file") or without
// it, or one a few edits away (a third of the name's length, at most 3).
// It is on the error path only, and costs one small edit-distance table per
// registered name of about the right length.
func suggest(name string, reg *registry) []string {
	// No registered name is longer than a valid name; a longer one is no
	// misspelling of any, and is not worth the tables.
	if name == "" || len(name) > 2*64 {
		return nil
	}
	lower := strings.ToLower(name)
	limit := min(3, max(1, len(name)/3))
	type cand struct {
		name string
		dist int
	}
	var cands []cand
	var rows [3][]int // the edit-distance table's rows, shared by every name
	for i := range rows {
		rows[i] = make([]int, 2*64+1)
	}
	for n := range reg.all() {
		ln := strings.ToLower(n)
		var d int
		switch {
		case ln == lower:
			d = 0
		case prefixed(ln, lower) || prefixed(lower, ln):
			d = 1
		default:
			if abs(len(ln)-len(lower)) > limit || len(ln) > 2*64 {
				continue
			}
			if d = editDistance(lower, ln, limit, &rows); d > limit {
				continue
			}
		}
		cands = append(cands, cand{n, d})
	}
	slices.SortFunc(cands, func(a, b cand) int {
		if a.dist != b.dist {
			return a.dist - b.dist
		}
		return strings.Compare(a.name, b.name)
	})
	// Names much farther than the closest one would only distract.
	var out []string
	for _, c := range cands {
		if len(out) == maxSuggestions || c.dist > cands[0].dist+1 {
			break
		}
		out = append(out, c.name)
	}
	return out
}

// editDistance is the optimal string alignment distance between a and b:
// insertions, deletions, substitutions and swaps of two neighbouring bytes
// each cost one ("raed_file" is one swap from "read_file").
// rows holds three rows of at least len(b)+1 cells. A distance above limit
// may be reported as any number above limit, found sooner.
func editDistance(a, b string, limit int, rows *[3][]int) int {
	prev2, prev, cur := rows[0][:len(b)+1], rows[1][:len(b)+1], rows[2][:len(b)+1]
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		rowMin := i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
			rowMin = min(rowMin, cur[j])
		}
		// The distance never falls below a row's least cell: past the
		// limit, the rest of the table cannot matter.
		if rowMin > limit {
			return rowMin
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(b)]
}

// prefixed reports whether long is short with a server's prefix:
// "files__read_file" for "read_file".
func prefixed(long, short string) bool {
	return len(long) > len(short)+2 && strings.HasSuffix(long, short) && long[len(long)-len(short)-2:len(long)-len(short)] == "__"
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}
