package sdk

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"

	"github.com/invopop/jsonschema"
)

// inferSchema infers a JSON Schema from t, with the same rules and result as
// lathe's schema.ForType, so that a tool's schema is the same whether it runs
// as a builtin or as a process.
//
// It is a copy rather than a call because package schema also holds the
// validator, whose initialisation costs a tool binary several milliseconds
// at every start, and a process tool starts once per call.
func inferSchema(t reflect.Type) (json.RawMessage, error) {
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
	s.Version = ""
	s.ID = ""
	s.Definitions = nil
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(s); err != nil {
		return nil, fmt.Errorf("inferring a schema from %s: %w", t, err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

func reflectType(r *jsonschema.Reflector, t reflect.Type) (s *jsonschema.Schema, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("cannot infer a schema for %s: %v", t, p)
		}
	}()
	return r.ReflectFromType(t), nil
}

var numberType = reflect.TypeFor[json.Number]()

func mapType(t reflect.Type) *jsonschema.Schema {
	if t == numberType {
		return &jsonschema.Schema{Type: "number"}
	}
	return nil
}

var customSchemaType = reflect.TypeFor[interface{ JSONSchema() *jsonschema.Schema }]()

// checkInlinable reports a type that contains itself, which cannot be
// written out without $ref.
func checkInlinable(t reflect.Type, onPath map[reflect.Type]bool) error {
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Array || t.Kind() == reflect.Map {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct || t.Implements(customSchemaType) {
		return nil
	}
	if onPath[t] {
		return fmt.Errorf("cannot infer a schema for %s: it contains itself, which cannot be written out without $ref", t)
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
