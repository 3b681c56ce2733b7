package schema

import (
	"bytes"
	"encoding/json"
	"regexp"
	"strconv"
	"strings"
)

// Compiling a schema with the JSON Schema library costs about 100–150 µs,
// most of it spent once per schema whatever its size (a compiler of its
// own, the check against the metaschema); a server listing ten thousand
// tools would spend seconds on schemas most of which no call ever uses.
// Prepare therefore decides at registration only whether the schema is
// valid, and leaves the compilation to the schema's first use. It decides
// with a quick check of its own that knows the keywords tool schemas use:
// when the check is sure the schema compiles, compilation waits; otherwise
// (a keyword it does not know the rules of, a reference it does not follow,
// or a schema it finds invalid) Prepare compiles at once, so that an invalid
// schema is refused at registration with the compiler's own message. Like
// the quick checker of arguments (fast.go), the check may be unsure but must
// never accept what the compiler refuses; a differential test over every
// keyword it knows and a fuzz test hold it to that.

// Prepare checks raw as [Compile] does, refusing what Compile refuses with
// the same error, and returns its Schema, which may compile itself at its
// first use rather than now: once, however many calls use it at the same
// time. Empty raw gives a schema that accepts any object.
//
// A schema Prepare accepts compiles; should its compilation fail all the
// same, every use reports it: [Schema.Ready] and [Schema.Validate] return
// the error, and Coerce and ApplyDefaults change nothing.
func Prepare(raw json.RawMessage) (*Schema, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		raw = objectSchema
	}
	if s := remembered(raw); s != nil {
		return s, nil
	}
	s, err := prepare(raw)
	if err != nil {
		return nil, err
	}
	remember(raw, s)
	return s, nil
}

// prepare is [Prepare] without the memo.
func prepare(raw json.RawMessage) (*Schema, error) {
	if err := checkNesting(raw); err != nil {
		return nil, err
	}
	if doc, err := Decode(raw); err == nil && surelyCompiles(doc) {
		var compact bytes.Buffer
		if json.Compact(&compact, raw) == nil {
			return &Schema{raw: compact.Bytes()}, nil
		}
	}
	return compile(raw)
}

// Ready compiles the schema if it has not been compiled yet, and returns
// why that failed, or nil. A schema from [Compile] is always ready.
func (s *Schema) Ready() error { return s.load() }

// load compiles a prepared schema, once.
func (s *Schema) load() error {
	s.once.Do(func() {
		c, err := compile(s.raw)
		if err != nil {
			s.err = err
			return
		}
		s.compiled, s.root, s.check, s.closed = c.compiled, c.root, c.check, c.closed
	})
	return s.err
}

// surelyCompiles reports whether doc, a decoded schema, is one the
// compiler accepts: a draft 2020-12 or draft-07 object schema built of the
// keywords listed in schemaCheck.keyword, each with a value the
// metaschema allows, whose references are JSON pointers to schemas inside
// it. False means only that Compile has to decide.
func surelyCompiles(doc any) bool {
	root, ok := doc.(map[string]any)
	if !ok || checkObjectType(root["type"]) != nil {
		return false
	}
	if d, ok := root["$schema"]; ok {
		switch d {
		case "https://json-schema.org/draft/2020-12/schema", "https://json-schema.org/draft/2020-12/schema#",
			"http://json-schema.org/draft-07/schema", "http://json-schema.org/draft-07/schema#":
		default:
			return false
		}
	}
	c := schemaCheck{root: root}
	if !c.schema(root, true) {
		return false
	}
	// A default that is a non-empty object or array is filled in with the
	// defaults inside it, which Compile bounds (checkDefaults) on the
	// compiled schema; and behind a reference even an empty one may fill
	// itself in without end. Compile decides those.
	if c.bigDefault || (c.emptyDefault && len(c.refs) > 0) {
		return false
	}
	for _, ref := range c.refs {
		if !c.resolves(ref) {
			return false
		}
	}
	return true
}

// schemaCheck walks a schema for surelyCompiles.
type schemaCheck struct {
	root map[string]any
	// refs holds the value of every $ref, resolved after the walk.
	refs []string
	// bigDefault: some default is a non-empty object or array;
	// emptyDefault: some default is an empty one.
	bigDefault, emptyDefault bool
}

// simpleTypes are the names "type" may hold.
var simpleTypes = map[string]bool{"array": true, "boolean": true, "integer": true, "null": true,
	"number": true, "object": true, "string": true}

// Kinds of keyword values, by what the metaschema asks of them.
const (
	kSchema      = iota + 1 // a schema
	kSchemaMap              // an object whose values are schemas
	kSchemaArray            // a non-empty array of schemas
	kString
	kBool
	kNumber
	kPositive // a number greater than 0
	kCount    // a non-negative integer
	kArray    // an array of anything
	kAny
	kStrings    // an array of distinct strings
	kStringsMap // an object whose values are arrays of distinct strings
	kType
	kPattern
	kPatternMap   // patternProperties: regular expressions to schemas
	kDependencies // schemas or arrays of distinct strings
	kDefault
	kRef
	kEnum // a non-empty array of distinct values, as draft-07 asks
)

// keyword maps every keyword the check knows to what its value must be. A
// name not here that starts with "$" is a keyword of the core the check
// does not follow ($id, $anchor, $dynamicRef, …), so Compile decides; any
// other name is not a keyword and the compiler ignores it.
var keyword = map[string]int{
	"$schema": kString, "$ref": kRef, "$comment": kString,
	"$defs": kSchemaMap, "definitions": kSchemaMap,
	"properties": kSchemaMap, "dependentSchemas": kSchemaMap, "patternProperties": kPatternMap,
	"allOf": kSchemaArray, "anyOf": kSchemaArray, "oneOf": kSchemaArray, "prefixItems": kSchemaArray,
	"items": kSchema, "additionalItems": kSchema, "contains": kSchema, "additionalProperties": kSchema,
	"propertyNames": kSchema, "not": kSchema, "if": kSchema, "then": kSchema, "else": kSchema,
	"unevaluatedItems": kSchema, "unevaluatedProperties": kSchema, "contentSchema": kSchema,
	"dependencies": kDependencies, "dependentRequired": kStringsMap, "required": kStrings,
	"type": kType, "enum": kEnum, "const": kAny, "default": kDefault, "examples": kArray,
	"multipleOf": kPositive, "maximum": kNumber, "minimum": kNumber, "exclusiveMaximum": kNumber,
	"exclusiveMinimum": kNumber, "maxLength": kCount, "minLength": kCount, "maxItems": kCount,
	"minItems": kCount, "maxContains": kCount, "minContains": kCount, "maxProperties": kCount,
	"minProperties": kCount, "pattern": kPattern, "uniqueItems": kBool, "deprecated": kBool,
	"readOnly": kBool, "writeOnly": kBool, "title": kString, "description": kString,
	"format": kString, "contentEncoding": kString, "contentMediaType": kString,
}

// schema checks v at a place that holds a schema.
func (c *schemaCheck) schema(v any, root bool) bool {
	switch x := v.(type) {
	case bool:
		return true
	case map[string]any:
		for k, val := range x {
			kind, ok := keyword[k]
			if !ok {
				if strings.HasPrefix(k, "$") {
					return false
				}
				continue
			}
			if k == "$schema" && !root {
				return false
			}
			if !c.value(kind, val) {
				return false
			}
		}
		return true
	}
	return false
}

// value checks the value of a keyword of the given kind.
func (c *schemaCheck) value(kind int, v any) bool {
	switch kind {
	case kSchema:
		return c.schema(v, false)
	case kSchemaMap, kPatternMap:
		m, ok := v.(map[string]any)
		if !ok {
			return false
		}
		for k, s := range m {
			if kind == kPatternMap && !regexCompiles(k) {
				return false
			}
			if !c.schema(s, false) {
				return false
			}
		}
		return true
	case kSchemaArray:
		a, ok := v.([]any)
		if !ok || len(a) == 0 {
			return false
		}
		for _, s := range a {
			if !c.schema(s, false) {
				return false
			}
		}
		return true
	case kString:
		_, ok := v.(string)
		return ok
	case kBool:
		_, ok := v.(bool)
		return ok
	case kNumber:
		return plainNumber(v)
	case kPositive:
		n, ok := v.(json.Number)
		if !ok || !plainNumber(v) {
			return false
		}
		f, err := strconv.ParseFloat(string(n), 64)
		return err == nil && f > 0
	case kCount:
		n, ok := v.(json.Number)
		if !ok || len(n) == 0 || len(n) > 9 {
			return false
		}
		for _, r := range n {
			if r < '0' || r > '9' {
				return false
			}
		}
		return true
	case kArray:
		_, ok := v.([]any)
		return ok
	case kAny:
		return true
	case kEnum:
		return distinctValues(v)
	case kStrings:
		return distinctStrings(v)
	case kStringsMap:
		m, ok := v.(map[string]any)
		if !ok {
			return false
		}
		for _, a := range m {
			if !distinctStrings(a) {
				return false
			}
		}
		return true
	case kType:
		switch t := v.(type) {
		case string:
			return simpleTypes[t]
		case []any:
			if len(t) == 0 || !distinctStrings(t) {
				return false
			}
			for _, e := range t {
				if !simpleTypes[e.(string)] {
					return false
				}
			}
			return true
		}
		return false
	case kPattern:
		p, ok := v.(string)
		return ok && regexCompiles(p)
	case kDependencies:
		m, ok := v.(map[string]any)
		if !ok {
			return false
		}
		for _, d := range m {
			if _, isArray := d.([]any); isArray {
				if !distinctStrings(d) {
					return false
				}
			} else if !c.schema(d, false) {
				return false
			}
		}
		return true
	case kDefault:
		switch d := v.(type) {
		case map[string]any:
			c.bigDefault = c.bigDefault || len(d) > 0
			c.emptyDefault = c.emptyDefault || len(d) == 0
		case []any:
			c.bigDefault = c.bigDefault || len(d) > 0
			c.emptyDefault = c.emptyDefault || len(d) == 0
		}
		return true
	case kRef:
		r, ok := v.(string)
		if !ok {
			return false
		}
		c.refs = append(c.refs, r)
		return true
	}
	return false
}

// plainNumber reports whether v is a number written without an exponent and
// short enough that reading it exactly costs nothing worth counting.
func plainNumber(v any) bool {
	n, ok := v.(json.Number)
	return ok && len(n) <= 32 && !strings.ContainsAny(string(n), "eE")
}

// distinctStrings reports whether v is an array of distinct strings.
func distinctStrings(v any) bool {
	a, ok := v.([]any)
	if !ok {
		return false
	}
	if len(a) > 16 {
		seen := make(map[string]bool, len(a))
		for _, e := range a {
			s, ok := e.(string)
			if !ok || seen[s] {
				return false
			}
			seen[s] = true
		}
		return true
	}
	for i, e := range a {
		s, ok := e.(string)
		if !ok {
			return false
		}
		for _, f := range a[:i] {
			if f == s {
				return false
			}
		}
	}
	return true
}

// enumPairs bounds the pairs of an enum's values distinctValues compares;
// beyond it, an enum that is not all strings is left to Compile.
const enumPairs = 64 * 63 / 2

// distinctValues reports whether v is a non-empty array of values that are
// surely distinct.
func distinctValues(v any) bool {
	a, ok := v.([]any)
	if !ok || len(a) == 0 {
		return false
	}
	if distinctStrings(a) {
		return true
	}
	if len(a)*(len(a)-1)/2 > enumPairs {
		return false
	}
	for i := range a {
		for j := range i {
			if equal(a[i], a[j]) != invalid {
				return false
			}
		}
	}
	return true
}

// regexCompiles reports whether the library's regular expression engine
// (Go's) accepts p.
func regexCompiles(p string) bool {
	_, err := regexp.Compile(p)
	return err == nil
}

// resolves reports whether ref is "#" or "#" and a JSON pointer that leads,
// through the keywords that hold schemas, to a schema of the document. A
// reference of any other form (an anchor, another document, an escape the
// check does not read) is left to Compile.
func (c *schemaCheck) resolves(ref string) bool {
	if ref == "#" {
		return true
	}
	if !strings.HasPrefix(ref, "#/") || strings.ContainsAny(ref, "%~") {
		return false
	}
	var at any = c.root
	tokens := strings.Split(ref[2:], "/")
	for i := 0; i < len(tokens); i++ {
		obj, ok := at.(map[string]any)
		if !ok {
			return false
		}
		kind, ok := keyword[tokens[i]]
		if !ok {
			return false
		}
		v := obj[tokens[i]]
		switch kind {
		case kSchema:
			at = v
		case kSchemaMap, kPatternMap:
			m, ok := v.(map[string]any)
			if !ok || i+1 == len(tokens) {
				return false
			}
			i++
			if at, ok = m[tokens[i]]; !ok {
				return false
			}
		case kSchemaArray:
			a, ok := v.([]any)
			if !ok || i+1 == len(tokens) {
				return false
			}
			i++
			k, err := strconv.Atoi(tokens[i])
			if err != nil || k < 0 || k >= len(a) || tokens[i] != strconv.Itoa(k) {
				return false
			}
			at = a[k]
		default:
			return false
		}
	}
	switch at.(type) {
	case bool, map[string]any:
		return true
	}
	return false
}
