package schema

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// Schema is a compiled JSON Schema. It is made once, by [Compile] or
// [Prepare], when a tool is registered, and compiled once: by Compile at
// once, or, for a schema Prepare has checked, at its first use. A Schema is
// immutable once compiled and safe for concurrent use, its first use too.
type Schema struct {
	raw json.RawMessage
	// once compiles a prepared schema at its first use; a schema from
	// Compile has used it up already. err is why that compilation failed,
	// which Prepare's check is there to make impossible.
	once     sync.Once
	err      error
	compiled *jsonschema.Schema
	root     *node
	check    *check
	// closed maps the location of each schema with additionalProperties
	// false to the property names it allows, for messages.
	closed map[string][]string
}

// location names the schema document inside the compiler. Messages never
// show it; see trimLocation.
const (
	locationBase = "lathe:///"
	location     = locationBase + "input.json"
)

var objectSchema = json.RawMessage(`{"type":"object"}`)

// Compile checks and compiles a tool's input schema. Empty raw (nil, or only
// white space) gives a schema that accepts any object.
//
// The schema must be a JSON object whose top-level type, if it has one,
// includes "object", because tool arguments are objects. Schemas without
// "$schema" are read as draft 2020-12; drafts 4, 6, 7 and 2019-09 are
// supported through "$schema". References must stay inside the schema: Compile
// never reads a file or the network. "format" is checked only under drafts 7
// and earlier; later drafts make it an annotation and so does Compile.
//
// The error says what is wrong and where, for example
//
//	schema: /properties/n/minimum: must be number but found string
func Compile(raw json.RawMessage) (*Schema, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		raw = objectSchema
	}
	if s := remembered(raw); s != nil {
		// It may be a prepared schema, not compiled yet.
		if err := s.load(); err != nil {
			return nil, err
		}
		return s, nil
	}
	s, err := compile(raw)
	if err != nil {
		return nil, err
	}
	remember(raw, s)
	return s, nil
}

// compiles counts the schemas compiled, for the tests that hold a prepared
// schema to being compiled once.
var compiles atomic.Int64

// compile is [Compile] without the memo.
func compile(raw json.RawMessage) (*Schema, error) {
	compiles.Add(1)
	if err := checkNesting(raw); err != nil {
		return nil, err
	}
	doc, err := Decode(raw)
	if err != nil {
		return nil, fmt.Errorf("schema: %w", err)
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, raw); err != nil {
		return nil, fmt.Errorf("schema: %w", err)
	}
	obj, ok := doc.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("schema: must be a JSON object, not %s", jsonTypeName(doc))
	}
	if err := checkObjectType(obj["type"]); err != nil {
		return nil, err
	}

	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.UseLoader(noLoader{})
	if err := c.AddResource(location, doc); err != nil {
		return nil, fmt.Errorf("schema: %w", err)
	}
	compiled, err := c.Compile(location)
	if err != nil {
		return nil, compileError(err, doc)
	}
	root, err := buildTree(compiled)
	if err != nil {
		return nil, err
	}
	s := &Schema{
		raw:      compact.Bytes(),
		compiled: compiled,
		root:     root,
		check:    buildChecks(compiled),
		closed:   closedSchemas(compiled),
	}
	s.once.Do(func() {})
	return s, nil
}

// MustCompile is like [Compile] but panics on error. It is for schemas written
// in the program, in tests and package-level variables.
func MustCompile(raw json.RawMessage) *Schema {
	s, err := Compile(raw)
	if err != nil {
		panic(err)
	}
	return s
}

// Raw returns the schema's JSON, compacted. The caller must not modify it.
func (s *Schema) Raw() json.RawMessage { return s.raw }

func checkObjectType(t any) error {
	switch t := t.(type) {
	case nil:
		return nil
	case string:
		if t == "object" {
			return nil
		}
	case []any:
		if slices.Contains(t, any("object")) {
			return nil
		}
	}
	return fmt.Errorf("schema: top-level type must be \"object\", because tool arguments are a JSON object; found %s", display(t))
}

func jsonTypeName(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case string:
		return "a string"
	case []any:
		return "an array"
	case json.Number:
		return "a number"
	}
	return "an object"
}

// noLoader refuses to load anything, so a schema from an untrusted source
// cannot make Compile read local files or reach the network.
type noLoader struct{}

func (noLoader) Load(url string) (any, error) {
	return nil, errors.New("loading is disabled")
}

// compileError words an error of the compiler; doc is the schema, in which
// it finds the place of a reference that does not resolve.
func compileError(err error, doc any) error {
	var sve *jsonschema.SchemaValidationError
	if errors.As(err, &sve) {
		var ve *jsonschema.ValidationError
		if errors.As(sve.Err, &ve) {
			vs := violations(ve, nil)
			parts := make([]string, len(vs))
			for i, v := range vs {
				at := v.Pointer
				if at == "" && strings.HasPrefix(v.Message, "must be a valid regex") {
					// The metaschema checks the names of
					// patternProperties and the library loses their
					// place; find it.
					at = badPatternPlace(doc)
				}
				if at == "" {
					at = "(root)"
				}
				parts[i] = at + ": " + v.Message
			}
			return fmt.Errorf("schema: %s", strings.Join(parts, "; "))
		}
	}
	var notFound *jsonschema.JSONPointerNotFoundError
	if errors.As(err, &notFound) {
		ref := trimLocation(notFound.URL)
		return fmt.Errorf("schema: %sreference %q points to nothing in the schema", refPlace(doc, ref), ref)
	}
	var load *jsonschema.LoadURLError
	if errors.As(err, &load) {
		ref := trimLocation(load.URL)
		return fmt.Errorf("schema: %sreference %q is outside the schema; only references within the schema are supported", refPlace(doc, ref), ref)
	}
	return fmt.Errorf("schema: %s", trimLocation(err.Error()))
}

// refPlace returns the JSON pointer of the first "$ref" in doc whose value
// is ref, followed by ": ", or "" if there is none (the compiler may name a
// reference resolved against a base, not as written).
func refPlace(doc any, ref string) string {
	tokens, ok := firstPlace(doc, func(x map[string]any) []string {
		if x["$ref"] == ref {
			return []string{"$ref"}
		}
		return nil
	})
	if !ok {
		return ""
	}
	return pointer(tokens) + ": "
}

// badPatternPlace returns the JSON pointer of the first name of a
// patternProperties in doc that is not a regular expression, or "".
func badPatternPlace(doc any) string {
	tokens, ok := firstPlace(doc, func(x map[string]any) []string {
		pp, _ := x["patternProperties"].(map[string]any)
		for _, name := range slices.Sorted(maps.Keys(pp)) {
			if _, err := regexp.Compile(name); err != nil {
				return []string{"patternProperties", name}
			}
		}
		return nil
	})
	if !ok {
		return ""
	}
	return pointer(tokens)
}

// firstPlace walks doc depth first, keys in order, and returns the tokens
// of the first object for which at returns some, followed by those.
func firstPlace(doc any, at func(map[string]any) []string) ([]string, bool) {
	var tokens []string
	var find func(v any) bool
	find = func(v any) bool {
		switch x := v.(type) {
		case map[string]any:
			if here := at(x); here != nil {
				tokens = append(tokens, here...)
				return true
			}
			for _, k := range slices.Sorted(maps.Keys(x)) {
				tokens = append(tokens, k)
				if find(x[k]) {
					return true
				}
				tokens = tokens[:len(tokens)-1]
			}
		case []any:
			for i, e := range x {
				tokens = append(tokens, strconv.Itoa(i))
				if find(e) {
					return true
				}
				tokens = tokens[:len(tokens)-1]
			}
		}
		return false
	}
	return tokens, find(doc)
}

// trimLocation takes the compiler's name for the document out of a message,
// leaving the JSON pointer or the relative reference inside it.
func trimLocation(msg string) string {
	msg = strings.ReplaceAll(msg, location, "")
	return strings.ReplaceAll(msg, locationBase, "")
}

// Validate checks v, a value from [Decode], against the schema. It returns
// nil or a [*ValidationError] listing every violation, each with the JSON
// pointer of the value at fault.
//
// Valid arguments are usually recognised by a quick check that allocates
// nothing; the full validator, which finds and words every violation, runs
// when that check fails or cannot decide. Values not made by Decode (float64
// numbers, say) are accepted but always take the slower path.
//
// On a prepared schema whose compilation failed, Validate returns that
// error, which is not a [*ValidationError]; see [Schema.Ready].
func (s *Schema) Validate(v any) error {
	if err := s.load(); err != nil {
		return err
	}
	if s.check != nil && s.check.eval(v) == valid {
		return nil
	}
	err := s.compiled.Validate(v)
	if err == nil {
		return nil
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return &ValidationError{Violations: []Violation{{Pointer: "", Message: err.Error()}}}
	}
	return &ValidationError{Violations: violations(ve, s.closed)}
}

// closedSchemas finds every schema that forbids additional properties and
// records the names it allows.
func closedSchemas(root *jsonschema.Schema) map[string][]string {
	closed := map[string][]string{}
	seen := map[*jsonschema.Schema]bool{}
	var walk func(s *jsonschema.Schema)
	walk = func(s *jsonschema.Schema) {
		if s == nil || seen[s] {
			return
		}
		seen[s] = true
		if b, ok := s.AdditionalProperties.(bool); ok && !b {
			names := make([]string, 0, len(s.Properties))
			for name := range s.Properties {
				names = append(names, name)
			}
			slices.Sort(names)
			closed[s.Location] = names
		}
		for _, k := range subschemas(s) {
			walk(k)
		}
	}
	walk(root)
	return closed
}

func subschemas(s *jsonschema.Schema) []*jsonschema.Schema {
	out := []*jsonschema.Schema{s.Ref, s.RecursiveRef, s.Not, s.If, s.Then, s.Else,
		s.PropertyNames, s.UnevaluatedProperties, s.Contains, s.Items2020, s.UnevaluatedItems, s.ContentSchema}
	if s.DynamicRef != nil {
		out = append(out, s.DynamicRef.Ref)
	}
	out = append(out, s.AllOf...)
	out = append(out, s.AnyOf...)
	out = append(out, s.OneOf...)
	out = append(out, s.PrefixItems...)
	for _, k := range s.Properties {
		out = append(out, k)
	}
	for _, k := range s.PatternProperties {
		out = append(out, k)
	}
	for _, k := range s.DependentSchemas {
		out = append(out, k)
	}
	for _, d := range s.Dependencies {
		if k, ok := d.(*jsonschema.Schema); ok {
			out = append(out, k)
		}
	}
	for _, x := range []any{s.AdditionalProperties, s.Items, s.AdditionalItems} {
		switch x := x.(type) {
		case *jsonschema.Schema:
			out = append(out, x)
		case []*jsonschema.Schema:
			out = append(out, x...)
		}
	}
	return out
}
