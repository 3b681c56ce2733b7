package schema

import (
	"encoding/json"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// maxDepth bounds the nesting of arrays and objects Decode accepts, as
// encoding/json does, so that hostile input cannot grow the stack without end.
const maxDepth = 10000

// Numbers are checked with exact arithmetic (big.Rat), whose cost grows with
// the length of a number and the size of its exponent: a number of a million
// digits takes seconds. No tool argument needs more than these bounds, so
// Decode refuses numbers beyond them.
const (
	maxNumberLen = 1000
	maxExponent  = 1000
)

// SyntaxError reports malformed JSON and the byte offset where it was found.
type SyntaxError struct {
	// Offset is the number of bytes read before the error.
	Offset int
	Msg    string
}

func (e *SyntaxError) Error() string {
	return "invalid JSON at byte offset " + strconv.Itoa(e.Offset) + ": " + e.Msg
}

// Decode parses JSON arguments into the value form that [Schema.Coerce],
// [Schema.ApplyDefaults] and [Schema.Validate] work on: map[string]any for
// objects, []any for arrays, string, bool, nil, and [json.Number] for numbers.
//
// Numbers stay json.Number, the literal text of the number, because that is
// exact (an int64 ID beyond 2^53 survives, 1.0000000000000001 is not an
// integer), costs no float parsing here, and is what the validator itself
// reads: it turns every number into a big.Rat from its text, so a float64
// would only be formatted back into text. Marshalling the value with
// encoding/json writes the numbers back unchanged.
//
// Empty input, or input that is only white space, means {}. Malformed JSON
// gives a [*SyntaxError] naming the byte offset. Duplicate keys keep the last
// value and invalid UTF-8 in strings becomes U+FFFD, as in encoding/json.
// Unlike encoding/json, Decode refuses a number longer than 1000 characters
// or with an exponent beyond ±1000, which would make validation slow and
// which no tool needs.
func Decode(raw json.RawMessage) (any, error) {
	for _, c := range raw {
		if c != ' ' && c != '\t' && c != '\n' && c != '\r' {
			// One copy of the whole input; strings without escapes and
			// numbers are slices of it, so they cost no further allocation.
			return decode(string(raw))
		}
	}
	return map[string]any{}, nil
}

// decode parses the JSON text s, which must hold a value.
func decode(s string) (any, error) {
	d := decoder{data: s}
	d.skipSpace()
	v, err := d.value()
	if err != nil {
		return nil, err
	}
	d.skipSpace()
	if d.pos != len(d.data) {
		return nil, d.errorf("unexpected " + quoteByte(d.data[d.pos]) + " after top-level value")
	}
	return v, nil
}

type decoder struct {
	data  string
	pos   int
	depth int
	// stack holds the elements of the arrays being parsed, so that each
	// array is allocated once at its final length.
	stack []any
}

func (d *decoder) errorf(msg string) error {
	return &SyntaxError{Offset: d.pos, Msg: msg}
}

func (d *decoder) unexpected(context string) error {
	if d.pos >= len(d.data) {
		return d.errorf("unexpected end of input " + context)
	}
	return d.errorf("unexpected " + quoteByte(d.data[d.pos]) + " " + context)
}

func quoteByte(c byte) string {
	if c < utf8.RuneSelf {
		return strconv.QuoteRune(rune(c))
	}
	return "byte 0x" + strconv.FormatUint(uint64(c), 16)
}

func (d *decoder) skipSpace() {
	for d.pos < len(d.data) {
		switch d.data[d.pos] {
		case ' ', '\t', '\n', '\r':
			d.pos++
		default:
			return
		}
	}
}

// value parses one JSON value; the caller has skipped the space before it.
func (d *decoder) value() (any, error) {
	if d.pos >= len(d.data) {
		return nil, d.unexpected("looking for a value")
	}
	switch c := d.data[d.pos]; c {
	case '{':
		return d.object()
	case '[':
		return d.array()
	case '"':
		s, err := d.string()
		if err != nil {
			return nil, err
		}
		return s, nil
	case 't':
		return true, d.literal("true")
	case 'f':
		return false, d.literal("false")
	case 'n':
		return nil, d.literal("null")
	default:
		if c == '-' || (c >= '0' && c <= '9') {
			return d.number()
		}
		return nil, d.unexpected("looking for a value")
	}
}

func (d *decoder) literal(lit string) error {
	for i := 0; i < len(lit); i++ {
		if d.pos >= len(d.data) || d.data[d.pos] != lit[i] {
			return d.unexpected("in literal " + lit)
		}
		d.pos++
	}
	return nil
}

func (d *decoder) number() (any, error) {
	start := d.pos
	if d.data[d.pos] == '-' {
		d.pos++
	}
	switch {
	case d.pos < len(d.data) && d.data[d.pos] == '0':
		d.pos++
	case d.pos < len(d.data) && d.data[d.pos] >= '1' && d.data[d.pos] <= '9':
		d.digits()
	default:
		return nil, d.unexpected("in number")
	}
	if d.pos < len(d.data) && d.data[d.pos] == '.' {
		d.pos++
		if !d.digits() {
			return nil, d.unexpected("after decimal point in number")
		}
	}
	if d.pos < len(d.data) && (d.data[d.pos] == 'e' || d.data[d.pos] == 'E') {
		d.pos++
		if d.pos < len(d.data) && (d.data[d.pos] == '+' || d.data[d.pos] == '-') {
			d.pos++
		}
		expStart := d.pos
		if !d.digits() {
			return nil, d.unexpected("in exponent of number")
		}
		exp := strings.TrimLeft(d.data[expStart:d.pos], "0")
		if len(exp) > 4 || (len(exp) == 4 && exp > strconv.Itoa(maxExponent)) {
			return nil, &SyntaxError{Offset: start, Msg: "number exponent beyond ±" + strconv.Itoa(maxExponent)}
		}
	}
	if d.pos-start > maxNumberLen {
		return nil, &SyntaxError{Offset: start, Msg: "number longer than " + strconv.Itoa(maxNumberLen) + " characters"}
	}
	return json.Number(d.data[start:d.pos]), nil
}

// digits skips a run of decimal digits and reports whether there was one.
func (d *decoder) digits() bool {
	start := d.pos
	for d.pos < len(d.data) && d.data[d.pos] >= '0' && d.data[d.pos] <= '9' {
		d.pos++
	}
	return d.pos > start
}

// string parses a string whose opening quote is at d.pos.
func (d *decoder) string() (string, error) {
	d.pos++
	start := d.pos
	ascii := true
	for d.pos < len(d.data) {
		c := d.data[d.pos]
		switch {
		case c == '"':
			s := d.data[start:d.pos]
			d.pos++
			if !ascii && !utf8.ValidString(s) {
				return string(fixUTF8(nil, s)), nil
			}
			return s, nil
		case c == '\\':
			return d.escapedString(start)
		case c < 0x20:
			return "", d.errorf("control character " + quoteByte(c) + " in string")
		case c >= utf8.RuneSelf:
			ascii = false
		}
		d.pos++
	}
	return "", d.unexpected("in string")
}

// escapedString finishes a string that holds escapes, building it anew.
func (d *decoder) escapedString(start int) (string, error) {
	b := make([]byte, 0, d.pos-start+16)
	b = fixUTF8(b, d.data[start:d.pos])
	for d.pos < len(d.data) {
		c := d.data[d.pos]
		switch {
		case c == '"':
			d.pos++
			return string(b), nil
		case c < 0x20:
			return "", d.errorf("control character " + quoteByte(c) + " in string")
		case c != '\\':
			run := d.pos
			for d.pos < len(d.data) && d.data[d.pos] != '"' && d.data[d.pos] != '\\' && d.data[d.pos] >= 0x20 {
				d.pos++
			}
			b = fixUTF8(b, d.data[run:d.pos])
			continue
		}
		d.pos++
		if d.pos >= len(d.data) {
			return "", d.unexpected("in string escape")
		}
		switch e := d.data[d.pos]; e {
		case '"', '\\', '/':
			b = append(b, e)
		case 'b':
			b = append(b, '\b')
		case 'f':
			b = append(b, '\f')
		case 'n':
			b = append(b, '\n')
		case 'r':
			b = append(b, '\r')
		case 't':
			b = append(b, '\t')
		case 'u':
			r, ok := d.hex4(d.pos + 1)
			if !ok {
				return "", d.errorf("invalid \\u escape in string")
			}
			d.pos += 4
			// A surrogate pair is two escapes; a lone surrogate becomes
			// U+FFFD, as encoding/json does.
			if utf16.IsSurrogate(r) {
				hi := r
				r = unicode.ReplacementChar
				if d.pos+2 < len(d.data) && d.data[d.pos+1] == '\\' && d.data[d.pos+2] == 'u' {
					if lo, ok := d.hex4(d.pos + 3); ok {
						if dec := utf16.DecodeRune(hi, lo); dec != unicode.ReplacementChar {
							r = dec
							d.pos += 6
						}
					}
				}
			}
			b = utf8.AppendRune(b, r)
		default:
			return "", d.errorf("invalid escape " + quoteByte(e) + " in string")
		}
		d.pos++
	}
	return "", d.unexpected("in string")
}

// hex4 reads the four hex digits at i.
func (d *decoder) hex4(i int) (rune, bool) {
	if i+4 > len(d.data) {
		return 0, false
	}
	var r rune
	for _, c := range d.data[i : i+4] {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			c = c - 'A' + 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}

// fixUTF8 appends s to b, each byte of an invalid UTF-8 sequence replaced by
// U+FFFD.
func fixUTF8(b []byte, s string) []byte {
	if utf8.ValidString(s) {
		return append(b, s...)
	}
	for len(s) > 0 {
		r, size := utf8.DecodeRuneInString(s)
		if r == utf8.RuneError && size == 1 {
			b = utf8.AppendRune(b, unicode.ReplacementChar)
		} else {
			b = append(b, s[:size]...)
		}
		s = s[size:]
	}
	return b
}

func (d *decoder) enter() error {
	d.depth++
	if d.depth > maxDepth {
		return d.errorf("nesting deeper than " + strconv.Itoa(maxDepth))
	}
	return nil
}

func (d *decoder) object() (any, error) {
	if err := d.enter(); err != nil {
		return nil, err
	}
	d.pos++
	m := make(map[string]any)
	d.skipSpace()
	if d.pos < len(d.data) && d.data[d.pos] == '}' {
		d.pos++
		d.depth--
		return m, nil
	}
	for {
		if d.pos >= len(d.data) || d.data[d.pos] != '"' {
			return nil, d.unexpected("looking for an object key")
		}
		k, err := d.string()
		if err != nil {
			return nil, err
		}
		d.skipSpace()
		if d.pos >= len(d.data) || d.data[d.pos] != ':' {
			return nil, d.unexpected("after object key")
		}
		d.pos++
		d.skipSpace()
		v, err := d.value()
		if err != nil {
			return nil, err
		}
		m[k] = v
		d.skipSpace()
		if d.pos < len(d.data) {
			switch d.data[d.pos] {
			case ',':
				d.pos++
				d.skipSpace()
				continue
			case '}':
				d.pos++
				d.depth--
				return m, nil
			}
		}
		return nil, d.unexpected("after object value")
	}
}

func (d *decoder) array() (any, error) {
	if err := d.enter(); err != nil {
		return nil, err
	}
	d.pos++
	d.skipSpace()
	if d.pos < len(d.data) && d.data[d.pos] == ']' {
		d.pos++
		d.depth--
		return []any{}, nil
	}
	base := len(d.stack)
	for {
		v, err := d.value()
		if err != nil {
			return nil, err
		}
		d.stack = append(d.stack, v)
		d.skipSpace()
		if d.pos < len(d.data) {
			switch d.data[d.pos] {
			case ',':
				d.pos++
				d.skipSpace()
				continue
			case ']':
				d.pos++
				d.depth--
				a := make([]any, len(d.stack)-base)
				copy(a, d.stack[base:])
				clear(d.stack[base:])
				d.stack = d.stack[:base]
				return a, nil
			}
		}
		return nil, d.unexpected("after array element")
	}
}
