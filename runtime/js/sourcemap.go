package js

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// sourceMap maps the lines of a bundle back to the files it was made from
// (source map version 3, as esbuild writes it). Only what an error's stack
// needs is kept: for each generated line, its segments' columns and
// original positions.
type sourceMap struct {
	sources []string
	lines   [][]segment // by generated line, 0-based
}

type segment struct {
	genCol, src, line, col int
}

func parseSourceMap(b []byte) (*sourceMap, error) {
	var raw struct {
		Version  int      `json:"version"`
		Sources  []string `json:"sources"`
		Mappings string   `json:"mappings"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		return nil, err
	}
	if raw.Version != 3 {
		return nil, fmt.Errorf("source map version %d, want 3", raw.Version)
	}
	m := &sourceMap{sources: raw.Sources}
	var src, line, col int
	for _, l := range strings.Split(raw.Mappings, ";") {
		var segs []segment
		genCol := 0
		for _, s := range strings.Split(l, ",") {
			if s == "" {
				continue
			}
			v, err := vlq(s)
			if err != nil {
				return nil, err
			}
			genCol += v[0]
			if len(v) >= 4 {
				src += v[1]
				line += v[2]
				col += v[3]
				segs = append(segs, segment{genCol, src, line, col})
			}
		}
		m.lines = append(m.lines, segs)
	}
	return m, nil
}

// vlq decodes one segment's base64 VLQ fields.
func vlq(s string) ([]int, error) {
	const digits = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
	var out []int
	shift, value := 0, 0
	for i := 0; i < len(s); i++ {
		d := strings.IndexByte(digits, s[i])
		if d < 0 {
			return nil, fmt.Errorf("bad mapping character %q", s[i])
		}
		value += (d & 31) << shift
		if d&32 != 0 {
			shift += 5
			continue
		}
		if value&1 != 0 {
			out = append(out, -(value >> 1))
		} else {
			out = append(out, value>>1)
		}
		shift, value = 0, 0
	}
	return out, nil
}

// lookup maps a generated position (1-based line, 1-based column; column 0
// when unknown) to the original file and 1-based line and column.
func (m *sourceMap) lookup(line, col int) (string, int, int, bool) {
	if line < 1 || line > len(m.lines) || len(m.lines[line-1]) == 0 {
		return "", 0, 0, false
	}
	segs := m.lines[line-1]
	best := segs[0]
	for _, s := range segs {
		if col > 0 && s.genCol <= col-1 {
			best = s
		}
	}
	if best.src < 0 || best.src >= len(m.sources) {
		return "", 0, 0, false
	}
	return m.sources[best.src], best.line + 1, best.col + 1, true
}

// frameRE finds the positions in the engine's stack frames: "(<eval>:12:5)"
// or "<eval>:12".
var frameRE = regexp.MustCompile(`<[a-z]+>:(\d+)(?::(\d+))?`)

// mapStack rewrites the bundle's positions in a stack to the original
// files'.
func (m *sourceMap) mapStack(stack string) string {
	return frameRE.ReplaceAllStringFunc(stack, func(pos string) string {
		sub := frameRE.FindStringSubmatch(pos)
		line, _ := strconv.Atoi(sub[1])
		col, _ := strconv.Atoi(sub[2])
		if file, l, c, ok := m.lookup(line, col); ok {
			return fmt.Sprintf("%s:%d:%d", file, l, c)
		}
		return pos
	})
}
