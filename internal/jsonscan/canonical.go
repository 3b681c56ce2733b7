package jsonscan

import (
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// maxMarshaledDepth bounds the nesting Marshaled follows, well below the
// 10000 levels past which encoding/json refuses text: what is deeper is
// left to encoding/json, whose answer for it Marshaled does not know.
const maxMarshaledDepth = 1000

// Marshaled returns what encoding/json's Marshal writes for the value its
// Unmarshal decodes from s into an any, when it can tell without building
// that value: s without its insignificant space, with each object's
// members in increasing byte order of their keys and only the last of
// equal keys kept, provided every number in s is written as Marshal
// writes a float64 and every string as Marshal escapes it (HTML
// characters and U+2028/U+2029 included), in valid UTF-8. When s needs no
// change it returns s itself, at no cost.
//
// It calls key with every object key and str with every string value,
// decoded, in the order they are written, and stops with false at the
// first call that returns false. It reports false, too, for text whose
// round trip it does not know (such as numbers it cannot cheaply prove
// written as Marshal writes them, nesting deeper than it follows, or text
// that is not JSON); the round trip then tells.
func Marshaled(s string, key, str func(string) bool) (string, bool) {
	w := rewriter{s: s}
	stack := make([]frame, 0, 8)
	members := make([]span, 0, 16)
	i := w.space(0)
	for {
		// At the start of a value.
		if i >= len(s) {
			return "", false
		}
		switch c := s[i]; c {
		case '{', '[':
			if len(stack) == maxMarshaledDepth {
				return "", false
			}
			stack = append(stack, frame{obj: c == '{', open: w.pos(i), m0: len(members)})
			i = w.space(i + 1)
			if i < len(s) && s[i] == c+2 { // '}' is '{'+2, ']' is '['+2
				stack = stack[:len(stack)-1]
				i++
				break
			}
			if c == '{' {
				var ok bool
				if i, members, ok = w.member(i, &stack[len(stack)-1], members, key); !ok {
					return "", false
				}
			}
			continue
		case '"':
			v, e, ok := canonicalString(s, i)
			if !ok || !str(v) {
				return "", false
			}
			i = e
		case 't':
			if !strings.HasPrefix(s[i:], "true") {
				return "", false
			}
			i += len("true")
		case 'f':
			if !strings.HasPrefix(s[i:], "false") {
				return "", false
			}
			i += len("false")
		case 'n':
			if !strings.HasPrefix(s[i:], "null") {
				return "", false
			}
			i += len("null")
		default:
			e := numberRunEnd(s, i)
			if e == i || !canonicalNumber(s[i:e]) {
				return "", false
			}
			i = e
		}
		// After a value: close what it ends, up to the next value.
		for {
			i = w.space(i)
			if len(stack) == 0 {
				if i != len(s) {
					return "", false
				}
				return w.result(), true
			}
			if i >= len(s) {
				return "", false
			}
			top := &stack[len(stack)-1]
			if top.obj && (s[i] == ',' || s[i] == '}') {
				members[len(members)-1].end = w.pos(i)
			}
			if s[i] == ',' {
				i = w.space(i + 1)
				if top.obj {
					var ok bool
					if i, members, ok = w.member(i, top, members, key); !ok {
						return "", false
					}
				}
				break
			}
			if top.obj && s[i] == '}' {
				if top.unsorted && !w.sort(i, top, members[top.m0:]) {
					return "", false
				}
				members = members[:top.m0]
			} else if top.obj || s[i] != ']' {
				return "", false
			}
			stack = stack[:len(stack)-1]
			i++
		}
	}
}

// frame is an object or array Marshaled is in: where it opens in the
// output, and for an object the index of its first member among the
// members read, the last key read, and whether a key has come out of
// order.
type frame struct {
	obj      bool
	unsorted bool
	open     int
	m0       int
	prev     string
}

// span is an object's member in the output: its key, decoded, and the
// bytes from its key's opening quotation mark to the end of its value.
type span struct {
	key        string
	start, end int
}

// rewriter is the output of Marshaled: s itself up to s[done] while out
// is nil, and out followed by what of s from s[done] has been read
// otherwise. The output is copied out of s only from the first byte it
// must leave out or move.
type rewriter struct {
	s     string
	out   []byte
	done  int
	moved int // bytes sort has moved, bounded by maxMoved
}

// maxMoved bounds the bytes sort may move, as a multiple of the text's
// length. An object is moved again with every object around it that is
// sorted, so text of deeply nested objects out of order would cost its
// length times its depth; such text is left to encoding/json, which costs
// its length.
const maxMoved = 4

// pos returns where s[i] is in the output, i being past every byte left
// out or moved.
func (w *rewriter) pos(i int) int {
	if w.out == nil {
		return i
	}
	return len(w.out) + i - w.done
}

// flush writes the output up to s[i] into out.
func (w *rewriter) flush(i int) {
	if w.out == nil {
		w.out = make([]byte, 0, len(w.s))
	}
	w.out = append(w.out, w.s[w.done:i]...)
	w.done = i
}

// space leaves out the JSON white space at s[i], and returns where it
// ends.
func (w *rewriter) space(i int) int {
	j := i
	for j < len(w.s) && (w.s[j] == ' ' || w.s[j] == '\t' || w.s[j] == '\n' || w.s[j] == '\r') {
		j++
	}
	if j > i {
		w.flush(i)
		w.done = j
	}
	return j
}

// result returns the whole output.
func (w *rewriter) result() string {
	if w.out == nil {
		return w.s
	}
	w.flush(len(w.s))
	return string(w.out)
}

// member reads the key of an object's member that starts at s[i] and the
// colon after it, and returns where the member's value starts.
func (w *rewriter) member(i int, f *frame, members []span, key func(string) bool) (int, []span, bool) {
	s := w.s
	if i >= len(s) || s[i] != '"' {
		return 0, members, false
	}
	k, e, ok := canonicalString(s, i)
	if !ok || !key(k) {
		return 0, members, false
	}
	if len(members) > f.m0 && k <= f.prev {
		f.unsorted = true
	}
	f.prev = k
	members = append(members, span{key: k, start: w.pos(i)})
	e = w.space(e)
	if e >= len(s) || s[e] != ':' {
		return 0, members, false
	}
	return w.space(e + 1), members, true
}

// sort writes the members ms of the object f, which closes at s[i], in
// the order Marshal writes a map's entries, keeping only the last of equal
// keys as Unmarshal does. It reports false, having done nothing, when
// that would move more than its bound.
func (w *rewriter) sort(i int, f *frame, ms []span) bool {
	w.flush(i)
	base := f.open + 1
	if w.moved += len(w.out) - base; w.moved > maxMoved*len(w.s) {
		return false
	}
	written := slices.Clone(w.out[base:])
	slices.SortStableFunc(ms, func(a, b span) int { return strings.Compare(a.key, b.key) })
	w.out = w.out[:base]
	for j, m := range ms {
		if j+1 < len(ms) && ms[j+1].key == m.key {
			continue
		}
		if len(w.out) > base {
			w.out = append(w.out, ',')
		}
		w.out = append(w.out, written[m.start-base:m.end-base]...)
	}
	return true
}

// plain marks the ASCII bytes that encoding/json's Marshal writes as they
// are inside a string: every printable one but the quotation mark, the
// backslash and the HTML characters <, > and &.
var plain = func() (t [utf8.RuneSelf]bool) {
	for c := ' '; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\' && c != '<' && c != '>' && c != '&'
	}
	return t
}()

// canonicalString returns the string whose opening quotation mark is s[i],
// decoded, and the index just past it, if it is written as Marshal writes
// it. Without escapes the string is a part of s and costs nothing.
func canonicalString(s string, i int) (string, int, bool) {
	start := i + 1
	j := plainEnd(s, start)
	switch {
	case j == len(s):
		return "", 0, false
	case s[j] == '"':
		return s[start:j], j + 1, true
	case s[j] == '\\':
		return escapedString(s, start, j)
	}
	return "", 0, false
}

// plainEnd returns the index of the first byte at or after s[j] that
// Marshal would not write as it is inside a string: a byte that is not
// plain (see plain), or that starts no valid UTF-8 sequence, or that
// starts U+2028 or U+2029.
func plainEnd(s string, j int) int {
	for j < len(s) {
		c := s[j]
		if c < utf8.RuneSelf {
			if !plain[c] {
				return j
			}
			j++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[j:])
		if r == utf8.RuneError && size == 1 || r == '\u2028' || r == '\u2029' {
			return j
		}
		j += size
	}
	return j
}

// escapedString goes on with canonicalString from s[j], the first
// backslash of the string that starts at s[start], decoding into a copy.
func escapedString(s string, start, j int) (string, int, bool) {
	// Decoded, the string is no longer than it is written, up to the
	// first quotation mark no backslash escapes.
	end := j
	for end < len(s) && s[end] != '"' {
		if s[end] == '\\' {
			end++
		}
		end++
	}
	if end >= len(s) {
		return "", 0, false
	}
	var b strings.Builder
	b.Grow(end - start)
	b.WriteString(s[start:j])
	for {
		// At a backslash.
		if j+1 >= len(s) {
			return "", 0, false
		}
		switch e := s[j+1]; e {
		case '"', '\\':
			b.WriteByte(e)
		case 'b':
			b.WriteByte('\b')
		case 'f':
			b.WriteByte('\f')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 't':
			b.WriteByte('\t')
		case 'u':
			r, ok := canonicalEscape(s[j+2:])
			if !ok {
				return "", 0, false
			}
			b.WriteRune(r)
			j += len(`\u0000`) - len(`\n`)
		default:
			return "", 0, false
		}
		j += len(`\n`)
		k := plainEnd(s, j)
		b.WriteString(s[j:k])
		switch {
		case k == len(s):
			return "", 0, false
		case s[k] == '"':
			return b.String(), k + 1, true
		case s[k] != '\\':
			return "", 0, false
		}
		j = k
	}
}

// canonicalEscape decodes the four hexadecimal digits of a \u escape at
// the start of s if Marshal writes the character they encode so: the
// control characters without a short escape, the HTML characters, and
// U+2028 and U+2029, all in lower-case hexadecimal.
func canonicalEscape(s string) (rune, bool) {
	if len(s) < 4 {
		return 0, false
	}
	var r rune
	for _, c := range []byte(s[:4]) {
		switch {
		case '0' <= c && c <= '9':
			r = r<<4 | rune(c-'0')
		case 'a' <= c && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		default:
			return 0, false
		}
	}
	switch {
	case r < ' ':
		return r, r != '\b' && r != '\f' && r != '\n' && r != '\r' && r != '\t'
	case r == '<' || r == '>' || r == '&' || r == '\u2028' || r == '\u2029':
		return r, true
	}
	return 0, false
}

// numberRunEnd returns the end of the run of bytes a JSON number may hold
// that starts at s[i].
func numberRunEnd(s string, i int) int {
	for i < len(s) && (s[i] >= '0' && s[i] <= '9' || s[i] == '-' || s[i] == '+' || s[i] == '.' || s[i] == 'e' || s[i] == 'E') {
		i++
	}
	return i
}

// canonicalNumber reports whether n is written as Marshal writes the
// float64 Unmarshal decodes from it. An integer of up to 15 digits is
// held exactly by a float64 and written back with its digits, so it needs
// no conversion; anything else is converted and written again as Marshal
// writes it, and compared. Text that is not a JSON number never compares
// equal, since what Marshal writes is one.
func canonicalNumber(n string) bool {
	d := n
	if d != "" && d[0] == '-' {
		d = d[1:]
	}
	if d != "" && len(d) <= 15 && d[0] != '0' {
		i := 0
		for i < len(d) && '0' <= d[i] && d[i] <= '9' {
			i++
		}
		if i == len(d) {
			return true
		}
	}
	if n == "0" {
		return true
	}
	// No float64 is written in more than 32 bytes; longer text is not
	// worth converting.
	if len(n) > 32 {
		return false
	}
	f, err := strconv.ParseFloat(n, 64)
	if err != nil {
		return false
	}
	var buf [32]byte
	return string(appendFloat(buf[:0], f)) == n
}

// appendFloat writes f as encoding/json's Marshal writes a float64: like
// ECMAScript, in exponent form below 1e-6 and from 1e21 up, with no
// leading zero in a negative exponent.
func appendFloat(b []byte, f float64) []byte {
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b
}
