package config

import (
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/pelletier/go-toml/v2/unstable"
)

// positions maps each key path of a document to the line that defines it.
//
// go-toml reports lines for the errors it finds itself, but the values it
// decodes carry no position. So the document's syntax tree is walked once
// more, here, to remember where every key and table appeared; the decoder
// asks for the line of a path when it finds something wrong. This is the only
// file that uses go-toml's unstable package, so a change of that API stays
// here.
//
// A path is a list of key parts. The elements of an array, and the tables of
// an array of tables, are numbered from 0, as in "mcp", "0", "name".
type positions struct {
	lines map[string]int
	// explicit marks paths whose line is that of a [table] header, which wins
	// over the line of a key that only implied the table.
	explicit map[string]bool
	// arrays counts the [[path]] tables seen so far, to number the next one.
	arrays map[string]int
	// newlines holds the offset of every '\n', to turn offsets into lines.
	newlines []int
}

// pathKey joins a path into a map key. NUL cannot appear in a bare key and is
// rare enough in a quoted one that a clash only costs a less precise line.
func pathKey(path []string) string { return strings.Join(path, "\x00") }

// indexPositions walks data, which go-toml has already accepted as valid TOML.
func indexPositions(data []byte) (*positions, error) {
	x := &positions{
		lines:    map[string]int{},
		explicit: map[string]bool{},
		arrays:   map[string]int{},
	}
	for i, b := range data {
		if b == '\n' {
			x.newlines = append(x.newlines, i)
		}
	}
	var p unstable.Parser
	p.Reset(data)
	var table []string
	for p.NextExpression() {
		e := p.Expression()
		switch e.Kind {
		case unstable.Table:
			keys := keyNodes(e)
			table = x.resolve(nil, keys)
			x.define(table, x.line(keys[0].Raw), true)
		case unstable.ArrayTable:
			keys := keyNodes(e)
			last := keys[len(keys)-1]
			path := append(x.resolve(nil, keys[:len(keys)-1]), string(last.Data))
			line := x.line(last.Raw)
			x.define(path, line, false)
			n := x.arrays[pathKey(path)]
			x.arrays[pathKey(path)] = n + 1
			table = append(path, strconv.Itoa(n))
			x.define(table, line, true)
		case unstable.KeyValue:
			x.keyValue(table, e)
		}
	}
	return x, p.Error()
}

func keyNodes(e *unstable.Node) []*unstable.Node {
	var keys []*unstable.Node
	it := e.Key()
	for it.Next() {
		keys = append(keys, it.Node())
	}
	return keys
}

// resolve appends keys to base, defining every prefix on the way, and steps
// into the last table of an array of tables where a key names one.
func (x *positions) resolve(base []string, keys []*unstable.Node) []string {
	path := slices.Clone(base)
	for _, k := range keys {
		path = append(path, string(k.Data))
		x.define(path, x.line(k.Raw), false)
		if n := x.arrays[pathKey(path)]; n > 0 {
			path = append(path, strconv.Itoa(n-1))
		}
	}
	return path
}

func (x *positions) keyValue(table []string, e *unstable.Node) {
	keys := keyNodes(e)
	path := x.resolve(table, keys)
	x.value(path, x.line(keys[len(keys)-1].Raw), e.Value())
}

func (x *positions) value(path []string, line int, v *unstable.Node) {
	switch v.Kind {
	case unstable.InlineTable:
		it := v.Children()
		for it.Next() {
			if n := it.Node(); n.Kind == unstable.KeyValue {
				x.keyValue(path, n)
			}
		}
	case unstable.Array:
		i := 0
		it := v.Children()
		for it.Next() {
			n := it.Node()
			if n.Kind == unstable.Comment {
				continue
			}
			l := line
			if n.Raw.Length > 0 {
				l = x.line(n.Raw)
			}
			elem := append(slices.Clip(path), strconv.Itoa(i))
			x.define(elem, l, false)
			x.value(elem, l, n)
			i++
		}
	}
}

func (x *positions) define(path []string, line int, explicit bool) {
	k := pathKey(path)
	if explicit && !x.explicit[k] {
		x.lines[k] = line
		x.explicit[k] = true
		return
	}
	if _, ok := x.lines[k]; !ok {
		x.lines[k] = line
	}
}

// line returns the 1-based line on which r starts.
func (x *positions) line(r unstable.Range) int {
	return sort.SearchInts(x.newlines, int(r.Offset)) + 1
}

// lineOf returns the line that defines path, or failing that the line of its
// nearest defined ancestor, or 1.
func (x *positions) lineOf(path []string) int {
	for i := len(path); i > 0; i-- {
		if l, ok := x.lines[pathKey(path[:i])]; ok {
			return l
		}
	}
	return 1
}
