package schema_test

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/lathe-tools/lathe/schema"
)

const readSchema = `{
	"type": "object",
	"required": ["path"],
	"additionalProperties": false,
	"properties": {
		"path":  {"type": "string"},
		"count": {"type": "integer", "minimum": 1, "default": 10},
		"tail":  {"type": "boolean"}
	}
}`

func ExampleSchema_Validate() {
	s, err := schema.Compile(json.RawMessage(readSchema))
	if err != nil {
		panic(err)
	}
	args, err := schema.Decode(json.RawMessage(`{"count":0,"tial":true}`))
	if err != nil {
		panic(err)
	}

	err = s.Validate(args)
	fmt.Println(err)

	var ve *schema.ValidationError
	if errors.As(err, &ve) {
		for _, v := range ve.Violations {
			fmt.Printf("%q: %s\n", v.Pointer, v.Message)
		}
	}
	// Output:
	// 3 problems: (root): missing required property "path"; /count: must be >= 1 but found 0; /tial: unknown property "tial"; allowed: count, path, tail
	// "": missing required property "path"
	// "/count": must be >= 1 but found 0
	// "/tial": unknown property "tial"; allowed: count, path, tail
}

func ExampleSchema_Coerce() {
	s, err := schema.Compile(json.RawMessage(readSchema))
	if err != nil {
		panic(err)
	}
	// A model sent the number and the boolean as strings.
	args, _ := schema.Decode(json.RawMessage(`{"path":"log.txt","count":"20","tail":"true"}`))

	args, changed := s.Coerce(args)
	out, _ := json.Marshal(args)
	fmt.Println(changed, string(out), s.Validate(args))
	// Output:
	// true {"count":20,"path":"log.txt","tail":true} <nil>
}

func ExampleSchema_ApplyDefaults() {
	s, err := schema.Compile(json.RawMessage(readSchema))
	if err != nil {
		panic(err)
	}
	args, _ := schema.Decode(json.RawMessage(`{"path":"log.txt"}`))

	args, changed := s.ApplyDefaults(args)
	out, _ := json.Marshal(args)
	fmt.Println(changed, string(out))
	// Output:
	// true {"count":10,"path":"log.txt"}
}

func ExampleCompile() {
	_, err := schema.Compile(json.RawMessage(`{"properties":{"count":{"type":"integer","minimum":"1"}}}`))
	fmt.Println(err)
	_, err = schema.Compile(json.RawMessage(`{"type":"array"}`))
	fmt.Println(err)
	// Output:
	// schema: /properties/count/minimum: must be number but found string
	// schema: top-level type must be "object", because tool arguments are a JSON object; found "array"
}

func ExampleDecode() {
	v, _ := schema.Decode(nil)
	fmt.Printf("%v\n", v)

	v, _ = schema.Decode(json.RawMessage(`{"id":9007199254740993}`))
	id := v.(map[string]any)["id"]
	fmt.Printf("%T %v\n", id, id)

	_, err := schema.Decode(json.RawMessage(`{"path":"a",}`))
	fmt.Println(err)
	// Output:
	// map[]
	// json.Number 9007199254740993
	// invalid JSON at byte offset 12: unexpected '}' looking for an object key
}

// Prepare refuses a bad schema at once, as Compile does, and compiles a good
// one at its first use.
func ExamplePrepare() {
	_, err := schema.Prepare(json.RawMessage(`{"properties":{"n":{"type":"int"}}}`))
	fmt.Println(err != nil)

	s, err := schema.Prepare(json.RawMessage(readSchema))
	if err != nil {
		panic(err)
	}
	args, _ := schema.Decode(json.RawMessage(`{"path":"a.txt"}`))
	args, _ = s.ApplyDefaults(args) // the first use: the schema is compiled here
	fmt.Println(args, s.Validate(args))
	// Output:
	// true
	// map[count:10 path:a.txt] <nil>
}
