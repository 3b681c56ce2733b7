package jsonscan

import "unicode/utf8"

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
	i := 0
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && b[i] >= '1' && b[i] <= '9':
		i = digits(b, i+1)
	default:
		return false
	}
	if i < len(b) && b[i] == '.' {
		j := digits(b, i+1)
		if j == i+1 {
			return false
		}
		i = j
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		j := digits(b, i)
		if j == i {
			return false
		}
		i = j
	}
	return i == len(b)
}

// digits returns the index of the first byte at or after i that is not a
// decimal digit.
func digits(b []byte, i int) int {
	for i < len(b) && b[i] >= '0' && b[i] <= '9' {
		i++
	}
	return i
}
