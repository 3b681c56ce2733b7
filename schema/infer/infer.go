// Package infer derives JSON Schemas from Go types. It is apart from package
// schema, which holds the validator, for two reasons: a process tool built
// with lathe's SDK infers its schema without paying for the validator's
// initialisation at every start (a process tool starts once per call), and
// the engine, which only validates, does not compile the reflection library
// inference needs.
package infer

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/invopop/jsonschema"
)

// For infers an input schema from the Go type T, usually the struct a typed
// tool decodes its arguments into. See [ForType].
func For[T any]() (json.RawMessage, error) {
	return ForType(reflect.TypeFor[T]())
}

// ForType infers a JSON Schema from t and returns it as compact JSON.
//
// Property names come from json tags. A field is required unless its json tag
// has omitempty or omitzero. Struct tags add keywords:
//
//	Path  string `json:"path" jsonschema:"description=File to read,minLength=1"`
//	Mode  string `json:"mode,omitempty" jsonschema:"enum=text,enum=binary,default=text"`
//	Limit int    `json:"limit,omitempty" jsonschema:"minimum=1,maximum=1000,default=100"`
//	Note  string `json:"note,omitempty" jsonschema_description:"Free text, commas allowed"`
//
// A pointer field that is required may be null, as a nil pointer encodes
// as null: its schema is {"anyOf":[schema of the element, {"type":"null"}]},
// so that a value of the type, encoded, always fits the schema inferred from
// it. (Slices and maps are arrays and objects; the SDK and builtin tools
// send a nil one as [] or {}.)
//
// Structs do not allow properties they do not declare. Nested structs and
// slices of structs are written out in place: the result has no "$ref",
// "$defs", "$schema" or "$id", which is what model providers accept best. A
// type that contains itself therefore cannot be inferred and gives an error,
// as do channels, functions and complex numbers.
func ForType(t reflect.Type) (json.RawMessage, error) {
	if t == nil {
		return nil, fmt.Errorf("schema: cannot infer a schema for a nil type")
	}
	if err := checkInlinable(t, map[reflect.Type]bool{}); err != nil {
		return nil, err
	}
	r := jsonschema.Reflector{
		DoNotReference: true,
		ExpandedStruct: true,
		Anonymous:      true,
		Mapper:         mapType,
	}
	s, err := reflectType(&r, t)
	if err != nil {
		return nil, err
	}
	nullablePointers(t, s, 0)
	s.Version = ""
	s.ID = ""
	s.Definitions = nil
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(s); err != nil {
		return nil, fmt.Errorf("schema: inferring from %s: %w", t, err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// reflectType turns the reflector's panic on an unsupported type into an error.
func reflectType(r *jsonschema.Reflector, t reflect.Type) (s *jsonschema.Schema, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("schema: cannot infer a schema for %s: %v", t, p)
		}
	}()
	return r.ReflectFromType(t), nil
}

var numberType = reflect.TypeFor[json.Number]()

// mapType gives the types the reflector gets wrong their JSON form.
func mapType(t reflect.Type) *jsonschema.Schema {
	if t == numberType {
		return &jsonschema.Schema{Type: "number"}
	}
	return nil
}

var customSchemaType = reflect.TypeFor[interface{ JSONSchema() *jsonschema.Schema }]()

// checkInlinable reports a type that contains itself: written out in place it
// would never end (the reflector would recurse until the stack overflows).
// onPath holds the struct types being visited.
func checkInlinable(t reflect.Type, onPath map[reflect.Type]bool) error {
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Array || t.Kind() == reflect.Map {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct || t.Implements(customSchemaType) {
		return nil
	}
	if onPath[t] {
		return fmt.Errorf("schema: cannot infer a schema for %s: it contains itself, which cannot be written out without $ref", t)
	}
	onPath[t] = true
	defer delete(onPath, t)
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() && !f.Anonymous {
			continue
		}
		if name, _, _ := strings.Cut(f.Tag.Get("json"), ","); name == "-" {
			continue
		}
		if err := checkInlinable(f.Type, onPath); err != nil {
			return err
		}
	}
	return nil
}

// nullablePointers lets each required pointer field of the struct t, and of
// the structs inside it, be null. s is the schema inferred for t.
func nullablePointers(t reflect.Type, s *jsonschema.Schema, depth int) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if s == nil || depth > 64 || t.Implements(customSchemaType) {
		return
	}
	switch t.Kind() {
	case reflect.Slice, reflect.Array, reflect.Map:
		// The schema of the elements: the items of an array, the
		// additional properties of an object.
		elem := &s.Items
		if t.Kind() == reflect.Map {
			elem = &s.AdditionalProperties
		}
		nullablePointers(t.Elem(), *elem, depth+1)
		if t.Elem().Kind() == reflect.Pointer && *elem != nil {
			*elem = orNull(*elem)
		}
	case reflect.Struct:
		if s.Properties == nil {
			return
		}
		for i := range t.NumField() {
			f := t.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name == "-" || (!f.IsExported() && !f.Anonymous) {
				continue
			}
			if f.Anonymous && name == "" {
				// The fields of an embedded struct are the parent's.
				nullablePointers(f.Type, s, depth+1)
				continue
			}
			if name == "" {
				name = f.Name
			}
			prop, ok := s.Properties.Get(name)
			if !ok || prop == nil {
				continue
			}
			nullablePointers(f.Type, prop, depth+1)
			if f.Type.Kind() == reflect.Pointer && slices.Contains(s.Required, name) {
				s.Properties.Set(name, orNull(prop))
			}
		}
	}
}

// orNull is s or null. The title and description move out, so they stay
// where a model reads them, beside the property's name.
func orNull(s *jsonschema.Schema) *jsonschema.Schema {
	if s.Type == "null" {
		return s
	}
	outer := &jsonschema.Schema{Title: s.Title, Description: s.Description, AnyOf: []*jsonschema.Schema{s, {Type: "null"}}}
	s.Title, s.Description = "", ""
	return outer
}
