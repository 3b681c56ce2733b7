package schema

import (
	"encoding/json"
	"math/big"
	"strings"
)

// Coerce repairs arguments a model sent as string-encoded JSON: where the
// schema wants an object, an array, a number, an integer, a boolean or null
// and the value is a string holding one ("{\"a\":1}", "[1,2]", "3", "2.5",
// "true", "null"), the string is replaced by the value it encodes. Where the
// schema wants an array and the string encodes none, but fits as one of its
// items, it becomes a list of that one item ("read_file" → ["read_file"]). It
// recurses through properties, additionalProperties and array items, and
// into what it has just decoded.
//
// A string is left alone where the schema also allows a string, when it does
// not parse as JSON, and when what it encodes is of a type the schema does not
// allow there ("2.5" where only integers are). Coercion therefore only ever
// replaces a string the schema would have rejected, and coercing twice
// changes nothing the second time.
//
// Objects and arrays are changed in place; the result is v itself unless v is
// a string that was replaced. The bool reports whether anything changed. When
// nothing does, Coerce does not allocate.
func (s *Schema) Coerce(v any) (any, bool) {
	if s.load() != nil {
		return v, false
	}
	return s.root.coerceValue(v)
}

func (n *node) coerceValue(v any) (any, bool) {
	if n == nil || !n.coerce {
		return v, false
	}
	switch x := v.(type) {
	case string:
		if !n.coerceHere {
			return v, false
		}
		p, ok := n.parse(x)
		if !ok {
			return n.wrap(x)
		}
		p, _ = n.coerceValue(p)
		return p, true
	case map[string]any:
		changed := false
		if n.addl != nil && n.addl.coerce {
			for k, e := range x {
				if nv, ok := n.child(k).coerceValue(e); ok {
					x[k] = nv
					changed = true
				}
			}
			return x, changed
		}
		for _, p := range n.coerceProps {
			e, ok := x[p.name]
			if !ok {
				continue
			}
			if nv, ok := p.n.coerceValue(e); ok {
				x[p.name] = nv
				changed = true
			}
		}
		return x, changed
	case []any:
		changed := false
		for i, e := range x {
			if nv, ok := n.item(i).coerceValue(e); ok {
				x[i] = nv
				changed = true
			}
		}
		// v, not x: boxing the slice again would allocate.
		return v, changed
	}
	return v, false
}

// wrap returns s as a list of one where n wants an array and s fits as its
// item (after coercion: "3" where the items are integers), since a model, or
// a person typing key=value, gives one value where the schema wants a list of
// them (names="read_file"). Text that starts as an array but does not parse
// is left alone, so that a broken list is reported, not taken as one item.
func (n *node) wrap(s string) (any, bool) {
	if n.types&tArray == 0 || strings.HasPrefix(strings.TrimLeft(s, " \t\r\n"), "[") {
		return s, false
	}
	k := n.item(0)
	if k == nil {
		return []any{s}, true
	}
	if k.types&tString != 0 {
		return []any{s}, true
	}
	e, ok := k.coerceValue(s)
	if !ok {
		return s, false
	}
	return []any{e}, true
}

// parse decodes s if it holds JSON of a type n allows and not a string.
func (n *node) parse(s string) (any, bool) {
	t := strings.TrimLeft(s, " \t\r\n")
	if t == "" {
		return nil, false
	}
	// Look at the first byte before parsing, so that ordinary text costs
	// nothing.
	var want typeSet
	switch c := t[0]; {
	case c == '{':
		want = tObject
	case c == '[':
		want = tArray
	case c == '-' || (c >= '0' && c <= '9'):
		want = tNumber
	case c == 't' || c == 'f':
		want = tBoolean
	case c == 'n':
		want = tNull
	}
	if n.types&want == 0 {
		return nil, false
	}
	v, err := decode(s)
	if err != nil {
		return nil, false
	}
	if num, ok := v.(json.Number); ok {
		if n.types&tFraction == 0 && !isIntegral(num) {
			return nil, false
		}
		return v, true
	}
	return v, n.types&typeOfValue(v) != 0
}

// isIntegral reports whether num is an integer, as the validator decides it.
func isIntegral(num json.Number) bool {
	if !strings.ContainsAny(string(num), ".eE") {
		return true
	}
	r, ok := new(big.Rat).SetString(string(num))
	return ok && r.IsInt()
}
