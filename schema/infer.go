package schema

import (
	"encoding/json"
	"reflect"

	"github.com/lathe-tools/lathe/schema/infer"
)

// For infers an input schema from the Go type T, usually the struct a typed
// tool decodes its arguments into. See [ForType].
func For[T any]() (json.RawMessage, error) {
	return infer.ForType(reflect.TypeFor[T]())
}

// ForType infers a JSON Schema from t and returns it as compact JSON; see
// [infer.ForType] for the rules and the struct tags it reads.
func ForType(t reflect.Type) (json.RawMessage, error) {
	return infer.ForType(t)
}
