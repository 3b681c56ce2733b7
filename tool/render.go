package tool

import (
	"encoding"
	"encoding/json"
	"reflect"
	"slices"
	"strings"
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
	if rv := reflect.ValueOf(v); rv.IsValid() {
		if nv, ok := emptyForNil(rv, 0); ok {
			v = nv.Interface()
		}
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

var (
	marshalerType     = reflect.TypeFor[json.Marshaler]()
	textMarshalerType = reflect.TypeFor[encoding.TextMarshaler]()
)

// marshals reports whether values of t encode themselves.
func marshals(t reflect.Type) bool {
	return t.Implements(marshalerType) || t.Implements(textMarshalerType)
}

// emptyForNil returns a copy of v in which every nil slice and nil map that
// encoding/json would write as null is an empty one, written as [] or {},
// and reports whether there was one; v itself is never changed. The schema
// inferred from a Go type says an array or an object for a slice or a map
// field (null is not allowed), so a tool that leaves one nil, as Go code
// does, would otherwise send output that breaks its own output schema. A
// field with omitempty or omitzero keeps its nil, which encoding/json leaves
// out. Values that encode themselves are left alone, and so is anything
// deeper than encoding/json follows before it reports a cycle.
func emptyForNil(v reflect.Value, depth int) (reflect.Value, bool) {
	if depth > 1000 || (v.Kind() != reflect.Pointer && marshals(v.Type())) {
		return v, false
	}
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() || marshals(v.Type()) {
			return v, false
		}
		e, ok := emptyForNil(v.Elem(), depth+1)
		if !ok {
			return v, false
		}
		p := reflect.New(e.Type())
		p.Elem().Set(e)
		return p, true
	case reflect.Interface:
		if v.IsNil() {
			return v, false
		}
		e, ok := emptyForNil(v.Elem(), depth+1)
		if !ok {
			return v, false
		}
		i := reflect.New(v.Type()).Elem()
		i.Set(e)
		return i, true
	case reflect.Slice:
		if v.IsNil() {
			return reflect.MakeSlice(v.Type(), 0, 0), true
		}
		if v.Type().Elem().Kind() == reflect.Uint8 {
			return v, false // []byte is a base64 string
		}
		return elements(v, depth)
	case reflect.Array:
		return elements(v, depth)
	case reflect.Map:
		if v.IsNil() {
			return reflect.MakeMap(v.Type()), true
		}
		var out reflect.Value
		for it := v.MapRange(); it.Next(); {
			e, ok := emptyForNil(it.Value(), depth+1)
			if !ok {
				continue
			}
			if !out.IsValid() {
				out = reflect.MakeMapWithSize(v.Type(), v.Len())
				for it := v.MapRange(); it.Next(); {
					out.SetMapIndex(it.Key(), it.Value())
				}
			}
			out.SetMapIndex(it.Key(), e)
		}
		return out, out.IsValid()
	case reflect.Struct:
		var out reflect.Value
		t := v.Type()
		for i := range t.NumField() {
			f := t.Field(i)
			if !f.IsExported() {
				continue // an unexported embedded struct cannot be copied field by field
			}
			name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name == "-" && opts == "" {
				continue
			}
			fv := v.Field(i)
			if (fv.Kind() == reflect.Slice || fv.Kind() == reflect.Map) && fv.IsNil() && hasOption(opts, "omitempty", "omitzero") {
				continue
			}
			e, ok := emptyForNil(fv, depth+1)
			if !ok {
				continue
			}
			if !out.IsValid() {
				out = reflect.New(t).Elem()
				out.Set(v)
			}
			out.Field(i).Set(e)
		}
		return out, out.IsValid()
	}
	return v, false
}

// elements is emptyForNil for the items of a slice or an array.
func elements(v reflect.Value, depth int) (reflect.Value, bool) {
	var out reflect.Value
	for i := range v.Len() {
		e, ok := emptyForNil(v.Index(i), depth+1)
		if !ok {
			continue
		}
		if !out.IsValid() {
			if v.Kind() == reflect.Slice {
				out = reflect.MakeSlice(v.Type(), v.Len(), v.Len())
			} else {
				out = reflect.New(v.Type()).Elem()
			}
			reflect.Copy(out, v)
		}
		out.Index(i).Set(e)
	}
	return out, out.IsValid()
}

func hasOption(opts string, names ...string) bool {
	for _, o := range strings.Split(opts, ",") {
		if slices.Contains(names, o) {
			return true
		}
	}
	return false
}
