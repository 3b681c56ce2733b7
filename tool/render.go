package tool

import (
	"encoding/json"
	"reflect"
)

// ResultFor renders a Go value as a result, the way typed tools (builtin
// functions and SDK process tools alike) return their output: a string is
// text, a [Result] is itself, and any other value is its JSON, as text and,
// when it is an object, as structured content too (MCP's rule: structured
// content is an object).
func ResultFor(v any) (*Result, error) {
	switch v := v.(type) {
	case string:
		return TextResult(v), nil
	case *Result:
		if v == nil {
			return TextResult(""), nil
		}
		return v, nil
	case Result:
		return &v, nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	r := TextResult(string(b))
	if len(b) > 0 && b[0] == '{' {
		r.Structured = b
	}
	return r, nil
}

// StructuredType reports whether [ResultFor] renders values of t as
// structured content, so that an output schema inferred from t describes
// them: structs and pointers to structs, other than [Result] itself.
func StructuredType(t reflect.Type) bool {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t.Kind() == reflect.Struct && t != reflect.TypeFor[Result]()
}
