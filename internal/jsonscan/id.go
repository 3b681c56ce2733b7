package jsonscan

import (
	"bytes"
	"encoding/json"
	"unicode/utf8"
)

// PlainString returns the text of b when b is exactly one JSON string, with
// no white space around it, whose text is its own bytes: no escapes, no
// control characters, valid UTF-8. Such a string decodes with encoding/json
// to those very bytes, so a caller can take them without decoding; anything
// else (escapes, invalid UTF-8, not a string) it reports false for, and the
// caller decodes it with encoding/json, which knows every rule.
func PlainString(b []byte) ([]byte, bool) {
	if len(b) < 2 || b[0] != '"' || b[len(b)-1] != '"' {
		return nil, false
	}
	s := b[1 : len(b)-1]
	ascii := true
	for _, c := range s {
		switch {
		case c == '"' || c == '\\' || c < 0x20:
			return nil, false
		case c >= utf8.RuneSelf:
			ascii = false
		}
	}
	if !ascii && !utf8.Valid(s) {
		return nil, false
	}
	return s, true
}

// Number reports whether b is exactly one JSON number, by RFC 8259's
// grammar, with no white space around it: what encoding/json reads as a
// number, and what strconv.ParseFloat then converts as encoding/json does.
// ParseFloat alone takes more (hexadecimal, "Inf", "NaN", underscores, a
// leading "+" or "."), which JSON does not.
func Number(b []byte) bool {
	return len(b) > 0 && numberEnd(b, 0) == len(b)
}

// digits returns the index of the first byte at or after i that is not a
// decimal digit.
func digits(b []byte, i int) int {
	for i < len(b) && b[i] >= '0' && b[i] <= '9' {
		i++
	}
	return i
}

// MembersKnown is Members, except that a key written without escapes that
// equals one of known is given as that string of known, not as a copy:
// a caller that reads many objects of the same few keys (the members of a
// JSON-RPC message) does not allocate each key anew.
func MembersKnown(b []byte, i int, known []string, f func(key string, vs, ve int)) error {
	i = SkipSpace(b, i)
	if i >= len(b) || b[i] != '{' {
		return ErrSyntax
	}
	return items(b, i, '}', func(i int) (int, error) {
		if i >= len(b) || b[i] != '"' {
			return 0, ErrSyntax
		}
		ke, err := stringEnd(b, i)
		if err != nil {
			return 0, err
		}
		var key string
		if raw := b[i+1 : ke-1]; bytes.IndexByte(raw, '\\') >= 0 {
			// A variable of its own, which json.Unmarshal makes escape:
			// key would be allocated for every member.
			var escaped string
			if json.Unmarshal(b[i:ke], &escaped) != nil {
				return 0, ErrSyntax
			}
			key = escaped
		} else {
			key = knownKey(raw, known)
		}
		i = SkipSpace(b, ke)
		if i >= len(b) || b[i] != ':' {
			return 0, ErrSyntax
		}
		vs := SkipSpace(b, i+1)
		ve, _, err := Value(b, vs)
		if err != nil {
			return 0, err
		}
		f(key, vs, ve)
		return ve, nil
	})
}

// knownKey is the string of known equal to raw, else a copy of raw.
func knownKey(raw []byte, known []string) string {
	for _, k := range known {
		if string(raw) == k {
			return k
		}
	}
	return string(raw)
}
