// Package schema checks tool arguments against a tool's JSON Schema and
// repairs the common ways models get them slightly wrong; its package infer
// derives a schema from a Go struct.
//
// # Compile once
//
// A tool's input schema is compiled once, when the tool is registered or at
// its first use, and never again:
//
//	s, err := schema.Compile(def.InputSchema) // compiled now
//	s, err := schema.Prepare(def.InputSchema) // checked now, compiled at first use
//
// [Compile] rejects a schema that is not valid JSON Schema or whose top level
// is not an object schema, with an error that points into the schema. An empty
// schema accepts any object.
//
// Compiling costs about a hundred microseconds a schema, most of it the JSON
// Schema library's fixed cost, so a source of thousands of tools uses
// [Prepare]: it refuses what Compile refuses, with the same error, but when a
// quick check of its own is sure the schema compiles (the common keywords,
// references within the schema) it leaves the compilation to the schema's
// first use, which then happens once however many callers use it at the same
// time. [Schema.Ready] compiles a prepared schema and says whether that
// failed, which the check is there to make impossible.
//
// A schema may come from a program lathe does not trust, so Compile also
// refuses one that would cost without bound: nested deeper than [MaxDepth],
// holding more than [MaxObjects] objects, or with defaults that fill
// themselves in without end or grow past [MaxDefaultValues] values. Whatever
// a schema holds, Compile ends, and so does every step of a call.
//
// # Each call: decode, coerce, fill defaults, validate
//
// The arguments of a call go through four steps, in this order:
//
//	v, err := schema.Decode(call.Arguments) // JSON to map[string]any; "" means {}
//	v, _ = s.Coerce(v)                      // "5" becomes 5 where a number is wanted
//	v, _ = s.ApplyDefaults(v)               // absent properties get their default
//	err = s.Validate(v)                     // nil, or every violation
//
// [Decode] keeps numbers as json.Number, exact and as the validator wants them.
//
// [Schema.Coerce] undoes the commonest slip of a model: sending JSON inside a
// string, such as "{\"a\":1}" for an object, "3" for a number or "true" for a
// boolean. It only touches a string where the schema does not allow a
// string, so it never changes a value that was valid.
//
// [Schema.ApplyDefaults] fills in absent properties that have a "default",
// at any depth, with a fresh copy of the default each time.
//
// [Schema.Validate] reports every violation at once, so that a model can fix
// its call in one go. Each [Violation] has the JSON pointer of the value at
// fault and a short message; a missing property is reported at the object that
// lacks it:
//
//	2 problems: (root): missing required property "path"; /count: must be >= 1 but found 0
//
// All four steps are safe for concurrent use and cost little when there is
// nothing to do: Coerce and ApplyDefaults learn at Compile where a coercion or
// a default can happen and visit only those places.
//
// # Schemas from Go types
//
// Builtin tools declare their arguments as a struct.
// [github.com/lathe-tools/lathe/schema/infer.For] turns it into a schema,
// self-contained with no $ref, taking names from json tags and keywords from
// jsonschema tags:
//
//	type ReadArgs struct {
//		Path  string `json:"path" jsonschema:"description=File to read"`
//		Limit int    `json:"limit,omitempty" jsonschema:"minimum=1,default=100"`
//	}
//	raw, err := infer.For[ReadArgs]()
//
// A field is required unless its json tag says omitempty or omitzero.
// Inference lives in its own package, with the reflection library it
// needs, so that a program that only validates (the engine itself) does not
// compile that library.
package schema
