// Package jsonscan walks JSON text without building it and without
// recursion, so that no nesting, however deep, costs more than a counter and
// a stack of brackets. It checks brackets and strings, not every rule of
// JSON: a caller that needs valid JSON checks it first (json.Valid), or
// decodes what it found with encoding/json afterwards. Keys are matched as
// they are written (escapes decoded), exactly, as the MCP SDK matches them.
// [Marshaled], which stands in for a round trip through encoding/json,
// checks every rule, and leaves to encoding/json whatever it does not know.
package jsonscan

import (
	"bytes"
	"errors"
)

// ErrSyntax is the error of text that is not JSON where a value was expected.
var ErrSyntax = errors.New("malformed JSON")

// SkipSpace returns the index of the first byte at or after i that is not
// JSON white space.
func SkipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// stringEnd returns the index just past the string that starts at b[i].
func stringEnd(b []byte, i int) (int, error) {
	for i++; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			return i + 1, nil
		}
	}
	return 0, ErrSyntax
}

// Value returns the end of the value that starts at b[i] and its depth:
// 0 for a scalar, 1 for an empty object or array, one more per level. It
// checks the brackets and strings, not every rule of JSON: what passes is
// decoded by encoding/json afterwards.
func Value(b []byte, i int) (end, depth int, err error) {
	var stack []byte
	for {
		if i >= len(b) {
			return 0, 0, ErrSyntax
		}
		switch c := b[i]; c {
		case '"':
			if i, err = stringEnd(b, i); err != nil {
				return 0, 0, err
			}
		case '{', '[':
			stack = append(stack, c)
			depth = max(depth, len(stack))
			i++
		case '}', ']':
			if len(stack) == 0 || (c == '}') != (stack[len(stack)-1] == '{') {
				return 0, 0, ErrSyntax
			}
			stack = stack[:len(stack)-1]
			i++
		default:
			i++
		}
		if len(stack) == 0 {
			// A scalar ends at the next delimiter.
			if depth == 0 && b[i-1] != '"' {
				for i < len(b) && !bytes.ContainsRune([]byte(",}] \t\r\n"), rune(b[i])) {
					i++
				}
			}
			return i, depth, nil
		}
	}
}

// Members calls f with the key and value span of each member of the object
// that starts at b[i] (after any space).
func Members(b []byte, i int, f func(key string, vs, ve int)) error {
	return MembersKnown(b, i, nil, f)
}

// Elements calls f with the span and depth of each element of the array
// b, which starts with '['.
func Elements(b []byte, f func(vs, ve, depth int)) error {
	return items(b, 0, ']', func(vs int) (int, error) {
		ve, depth, err := Value(b, vs)
		if err != nil {
			return 0, err
		}
		f(vs, ve, depth)
		return ve, nil
	})
}

// items calls item at the start of each item of the object or array whose
// opening bracket is b[open], up to the closing bracket end; item returns
// where its item ends. It reads the commas and the brackets, which Members
// and Elements share.
func items(b []byte, open int, end byte, item func(i int) (int, error)) error {
	i := SkipSpace(b, open+1)
	if i < len(b) && b[i] == end {
		return nil
	}
	for {
		e, err := item(i)
		if err != nil {
			return err
		}
		i = SkipSpace(b, e)
		if i < len(b) && b[i] == ',' {
			i = SkipSpace(b, i+1)
			continue
		}
		if i < len(b) && b[i] == end {
			return nil
		}
		return ErrSyntax
	}
}
