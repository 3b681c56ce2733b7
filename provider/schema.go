package provider

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
)

// maxNodes bounds the schema nodes one conversion visits: inlining $refs
// that each point twice to the next would otherwise grow a small schema
// exponentially.
const maxNodes = 10000

// OpenAI's documented limits on a strict schema.
const (
	openAIMaxDepth = 10
	openAIMaxProps = 5000
	openAIMaxEnums = 1000
)

// Formats each provider constrains a string to; a schema's other formats
// go into its description.
var (
	openAIFormats    = []string{"date-time", "time", "date", "duration", "email", "hostname", "ipv4", "ipv6", "uuid"}
	anthropicFormats = []string{"date-time", "time", "date", "duration", "email", "hostname", "uri", "ipv4", "ipv6", "uuid"}
	geminiFormats    = map[string][]string{"string": {"enum", "date-time"}, "number": {"float", "double"}, "integer": {"int32", "int64"}}
)

// Keywords that carry no constraint: they are dropped, not described.
var metaKeywords = []string{"$schema", "$id", "$anchor", "$dynamicAnchor", "$comment", "$defs", "definitions",
	"title", "readOnly", "writeOnly", "deprecated", "contentEncoding", "contentMediaType", "contentSchema"}

// nullTree records, for the arguments of one tool, the optional properties
// that strict mode made required and nullable: a model that leaves one out
// sends null, and [Toolset.Resolve] drops that null so that the tool sees
// the property absent, as its own schema has it.
type nullTree struct {
	strip map[string]bool
	props map[string]*nullTree
	items *nullTree
}

func (n *nullTree) empty() bool {
	return n == nil || (len(n.strip) == 0 && len(n.props) == 0 && n.items == nil)
}

// converter rewrites one tool's input schema for one format.
type converter struct {
	f     Format
	root  any
	fails []string // why the schema cannot be strict
	lossy []string // what Gemini's subset cannot say
	refs  []string // the $refs being inlined, to find recursion
	props int
	enums int
	nodes int
	// renames maps Gemini's names of top-level parameters that Gemini would
	// refuse back to the schema's own.
	renames map[string]string
}

// fail records that the schema cannot be strict, or, for Gemini, what is
// lost of it.
func (c *converter) fail(ptr, why string) {
	if ptr == "" {
		ptr = "/"
	}
	msg := why + " at " + ptr
	if c.f == Gemini {
		if !slices.Contains(c.lossy, msg) {
			c.lossy = append(c.lossy, msg)
		}
		return
	}
	if !slices.Contains(c.fails, msg) {
		c.fails = append(c.fails, msg)
	}
}

// convertSchema rewrites a tool's input schema for format f. It returns
// the schema, the nulls to drop from calls, and, for a schema that cannot
// be made strict, the reasons.
func convertSchema(f Format, raw json.RawMessage) (out map[string]any, tree *nullTree, c *converter, err error) {
	var root any = map[string]any{"type": "object", "properties": map[string]any{}}
	if len(raw) > 0 {
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.UseNumber()
		if err := dec.Decode(&root); err != nil {
			return nil, nil, nil, fmt.Errorf("input schema: %w", err)
		}
	}
	c = &converter{f: f, root: root}
	tree = &nullTree{}
	m, ok := root.(map[string]any)
	if !ok {
		return nil, nil, nil, errors.New("the input schema is not a JSON object")
	}
	if _, has := m["type"]; !has && m["properties"] == nil && m["anyOf"] == nil && m["oneOf"] == nil && m["allOf"] == nil && m["$ref"] == nil {
		// A tool that declares no arguments: MCP servers send
		// {"type":"object"} or nothing for these.
		m = clone(m)
		m["type"] = "object"
	}
	if t, _ := m["type"].(string); t == "object" && m["properties"] == nil && m["additionalProperties"] == nil && m["patternProperties"] == nil {
		m = clone(m)
		m["properties"] = map[string]any{}
	}
	out = c.node(m, "", 0, tree, true)
	if t, _ := out["type"].(string); t != c.typeName("object") {
		c.fail("", "the arguments are not an object")
	}
	return out, tree, c, nil
}

// typeName is a JSON Schema type as format f writes it.
func (c *converter) typeName(t string) string {
	if c.f == Gemini {
		return strings.ToUpper(t)
	}
	return t
}

// clone returns a shallow copy of m, for a rewrite that must leave the
// schema it reads as it is.
func clone(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// escapePtr escapes a property name for a JSON pointer.
func escapePtr(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

// resolve returns the schema a local $ref points to.
func (c *converter) resolve(ref string) (any, bool) {
	if ref == "#" {
		return c.root, true
	}
	if !strings.HasPrefix(ref, "#/") {
		return nil, false
	}
	var cur any = c.root
	for _, part := range strings.Split(ref[2:], "/") {
		part = strings.ReplaceAll(strings.ReplaceAll(part, "~1", "/"), "~0", "~")
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		if cur, ok = m[part]; !ok {
			return nil, false
		}
	}
	return cur, true
}

// node rewrites one schema. depth counts the objects around it; tree
// collects the nulls to drop beneath it.
func (c *converter) node(s any, ptr string, depth int, tree *nullTree, top bool) map[string]any {
	if c.nodes++; c.nodes > maxNodes {
		if c.nodes == maxNodes+1 {
			c.fail("", fmt.Sprintf("a schema too large once its $refs are inlined (more than %d nodes)", maxNodes))
		}
		return map[string]any{}
	}
	var m map[string]any
	switch s := s.(type) {
	case bool:
		if s {
			c.fail(ptr, "a value of any type")
		} else {
			c.fail(ptr, "a schema that no value matches")
		}
		return map[string]any{}
	case map[string]any:
		m = s
	default:
		c.fail(ptr, "a schema that is not an object")
		return map[string]any{}
	}
	if ref, ok := m["$ref"].(string); ok {
		if slices.Contains(c.refs, ref) {
			c.fail(ptr, "a recursive $ref ("+ref+")")
			return describeOnly(m)
		}
		target, ok := c.resolve(ref)
		tm, isMap := target.(map[string]any)
		if !ok || !isMap {
			c.fail(ptr, "a $ref lathe cannot resolve ("+ref+")")
			return describeOnly(m)
		}
		merged := clone(tm)
		for k, v := range m {
			if k != "$ref" {
				merged[k] = v
			}
		}
		c.refs = append(c.refs, ref)
		out := c.node(merged, ptr, depth, tree, top)
		c.refs = c.refs[:len(c.refs)-1]
		return out
	}
	if all, ok := m["allOf"].([]any); ok {
		return c.node(c.mergeAll(m, all, ptr), ptr, depth, tree, top)
	}
	var notes []string
	desc, _ := m["description"].(string)
	if desc == "" {
		desc, _ = m["title"].(string)
	}

	types, nullable := schemaTypes(m)
	for i := 0; i < len(types); i++ {
		if !slices.Contains([]string{"string", "number", "integer", "boolean", "object", "array"}, types[i]) {
			c.fail(ptr, "an unknown type "+quote(types[i]))
			types = slices.Delete(types, i, i+1)
			i--
		}
	}
	branches, union := m["anyOf"].([]any)
	if one, ok := m["oneOf"].([]any); ok {
		// lathe validates the arguments against the tool's own schema, so
		// a call that matches two branches still fails there: anyOf, which
		// every format takes, says enough to the model.
		branches, union = append(branches, one...), true
	}
	if union && m["properties"] != nil && constraintsOnly(branches) {
		// Branches that only say which of the node's properties are
		// required ("path or url") constrain the node; they do not
		// describe it. They go into the description, for the tool's own
		// schema to enforce.
		notes = append(notes, "one of these holds: "+compact(branches))
		m = clone(m)
		delete(m, "anyOf")
		delete(m, "oneOf")
		union = false
	}
	if union {
		out := map[string]any{}
		var list []any
		for i, b := range branches {
			if bm, ok := b.(map[string]any); ok && len(types) > 0 {
				// The node's own type goes into each branch that has none.
				if _, has := bm["type"]; !has {
					bm = clone(bm)
					bm["type"] = m["type"]
					b = bm
				}
			}
			sub := c.node(b, fmt.Sprintf("%s/anyOf/%d", ptr, i), depth, tree, false)
			if nullOnly(sub) {
				nullable = true
				continue
			}
			list = append(list, sub)
		}
		if len(list) == 1 {
			out = list[0].(map[string]any)
		} else {
			out["anyOf"] = list
			if len(list) == 0 {
				c.fail(ptr, "an empty anyOf")
			}
		}
		if nullable {
			out = c.nullable(out)
		}
		return withDescription(out, desc, notes)
	}
	if len(types) == 0 {
		switch {
		case m["properties"] != nil || m["additionalProperties"] != nil || m["required"] != nil || m["patternProperties"] != nil:
			types = []string{"object"}
		case m["items"] != nil || m["prefixItems"] != nil:
			types = []string{"array"}
		case m["enum"] != nil || m["const"] != nil:
			types = enumTypes(m)
		}
	}
	if len(types) == 0 && nullable {
		return withDescription(map[string]any{"type": c.typeName("null")}, desc, notes)
	}
	if len(types) == 0 {
		c.fail(ptr, "a value of any type")
		return withDescription(map[string]any{}, desc, notes)
	}
	if len(types) > 1 {
		// A node of several types becomes a union of one branch a type,
		// each with the keywords that apply to it.
		var list []any
		for _, t := range types {
			b := clone(m)
			b["type"] = t
			delete(b, "description")
			delete(b, "title")
			if e, ok := m["enum"].([]any); ok {
				b["enum"] = enumOf(e, t)
			}
			list = append(list, c.node(b, ptr, depth, tree, false))
		}
		out := map[string]any{"anyOf": list}
		if nullable {
			out = c.nullable(out)
		}
		return withDescription(out, desc, notes)
	}
	t := types[0]
	out := map[string]any{"type": c.typeName(t)}
	if t == "integer" || t == "number" {
		if f, ok := m["format"].(string); ok && c.f == Gemini && slices.Contains(geminiFormats[t], f) {
			out["format"] = f
		}
	}
	notes = append(notes, c.enum(m, t, out, ptr)...)
	for _, k := range sortedKeys(m) {
		v := m[k]
		switch k {
		case "type", "description", "title", "enum", "const", "nullable", "properties", "required",
			"additionalProperties", "items", "anyOf", "oneOf", "allOf":
			continue
		}
		if slices.Contains(metaKeywords, k) || strings.HasPrefix(k, "x-") {
			continue
		}
		if c.keep(k, v, t) {
			out[k] = v
			continue
		}
		if t == "integer" || t == "number" {
			if k == "format" && out["format"] != nil {
				continue
			}
		}
		if k == "patternProperties" || k == "prefixItems" {
			c.fail(ptr, "keyword "+k)
		}
		notes = append(notes, k+": "+compact(v))
	}
	switch t {
	case "object":
		c.object(m, out, ptr, depth+1, tree, top)
		if props, _ := out["properties"].(map[string]any); c.f == Gemini && !top && len(props) == 0 {
			// Gemini refuses an OBJECT without properties: a value of
			// this kind is left untyped, and described.
			c.fail(ptr, "an object with no described properties")
			delete(out, "type")
			delete(out, "properties")
			delete(out, "required")
			notes = append(notes, "an object")
		}
	case "array":
		items, ok := m["items"]
		if !ok {
			if m["prefixItems"] == nil {
				c.fail(ptr, "an array of items of any type")
			}
		} else {
			sub := &nullTree{}
			out["items"] = c.node(items, ptr+"/items", depth, sub, false)
			if !sub.empty() {
				tree.items = sub
			}
		}
	}
	if nullable {
		out = c.nullable(out)
	}
	return withDescription(out, desc, notes)
}

// object rewrites the properties of an object schema into out.
func (c *converter) object(m, out map[string]any, ptr string, depth int, tree *nullTree, top bool) {
	if c.f.openAI() && depth > openAIMaxDepth {
		c.fail(ptr, fmt.Sprintf("more than %d levels of nested objects", openAIMaxDepth))
	}
	props, _ := m["properties"].(map[string]any)
	if m["properties"] != nil && props == nil {
		c.fail(ptr, "properties that are not an object")
	}
	var required []string
	if r, ok := m["required"].([]any); ok {
		for _, v := range r {
			if s, ok := v.(string); ok {
				required = append(required, s)
				if _, ok := props[s]; !ok && c.f != Gemini {
					c.fail(ptr, "required property "+quote(s)+" not described")
				}
			}
		}
	}
	switch ap := m["additionalProperties"].(type) {
	case nil:
		if props == nil && !top {
			c.fail(ptr, "an object whose properties are not described")
		}
	case bool:
		if ap && c.f.strictable() {
			c.fail(ptr, "additionalProperties (properties it does not name)")
		}
		if ap && c.f == Gemini {
			c.fail(ptr, "additionalProperties (Gemini describes only named properties)")
		}
	default:
		c.fail(ptr, "additionalProperties (a map of values)")
	}
	if m["patternProperties"] != nil {
		c.fail(ptr, "patternProperties")
	}
	c.props += len(props)
	if c.f.openAI() && c.props > openAIMaxProps {
		c.fail(ptr, fmt.Sprintf("more than %d properties in all", openAIMaxProps))
	}
	outProps := map[string]any{}
	var outReq []string
	for _, name := range sortedKeys(props) {
		sub := &nullTree{}
		p := c.node(props[name], ptr+"/properties/"+escapePtr(name), depth, sub, false)
		wire := name
		if c.f == Gemini && top && !gemParam(name) {
			wire = gemParamName(name)
			if c.renames == nil {
				c.renames = map[string]string{}
			}
			c.renames[wire] = name
		}
		req := slices.Contains(required, name)
		if c.f.openAI() {
			if !req {
				// Strict mode wants every property required: an
				// optional one may be null instead, and a null the
				// schema did not allow is dropped from the call.
				if !isNullable(p) {
					if tree.strip == nil {
						tree.strip = map[string]bool{}
					}
					tree.strip[name] = true
				}
				p = c.nullable(p)
			}
			req = true
		}
		if req {
			outReq = append(outReq, wire)
		}
		if !sub.empty() {
			if tree.props == nil {
				tree.props = map[string]*nullTree{}
			}
			tree.props[name] = sub
		}
		outProps[wire] = p
	}
	if props != nil || top || c.f != Gemini {
		out["properties"] = outProps
	}
	if outReq == nil && c.f != Gemini {
		outReq = []string{}
	}
	if outReq != nil {
		out["required"] = outReq
	}
	if c.f.strictable() {
		out["additionalProperties"] = false
	}
}

// mergeAll merges the branches of an allOf into one schema. A branch that
// says something another branch says otherwise cannot be merged: the
// schema is then not strict, and the first branch's word stands.
func (c *converter) mergeAll(m map[string]any, all []any, ptr string) map[string]any {
	merged := clone(m)
	delete(merged, "allOf")
	for i, b := range all {
		bm, ok := b.(map[string]any)
		if ref, isRef := bm["$ref"].(string); ok && isRef {
			if target, found := c.resolve(ref); found {
				bm, ok = target.(map[string]any)
			}
		}
		if !ok {
			c.fail(fmt.Sprintf("%s/allOf/%d", ptr, i), "an allOf branch lathe cannot merge")
			continue
		}
		for k, v := range bm {
			switch cur, has := merged[k]; {
			case !has:
				merged[k] = v
			case k == "properties":
				pm, _ := cur.(map[string]any)
				pm = clone(pm)
				vm, _ := v.(map[string]any)
				for name, s := range vm {
					if _, dup := pm[name]; dup {
						c.fail(ptr, "an allOf that describes property "+quote(name)+" twice")
						continue
					}
					pm[name] = s
				}
				merged[k] = pm
			case k == "required":
				cl, _ := cur.([]any)
				vl, _ := v.([]any)
				merged[k] = append(slices.Clone(cl), vl...)
			case k == "description" || k == "title":
			default:
				if compact(cur) != compact(v) {
					c.fail(ptr, "an allOf whose branches disagree on "+k)
				}
			}
		}
	}
	return merged
}

// enum rewrites the enum or const of a node of type t into out, and
// returns the notes for what the format cannot say.
func (c *converter) enum(m map[string]any, t string, out map[string]any, ptr string) []string {
	var values []any
	if e, ok := m["enum"].([]any); ok {
		values = e
	} else if v, ok := m["const"]; ok {
		values = []any{v}
	} else {
		return nil
	}
	for _, v := range values {
		switch v.(type) {
		case map[string]any, []any:
			c.fail(ptr, "an enum of objects or arrays")
			return []string{"one of: " + compact(values)}
		}
	}
	if c.f == Gemini && t != "string" {
		return []string{"one of: " + compact(values)}
	}
	c.enums += len(values)
	if c.f.openAI() && c.enums > openAIMaxEnums {
		c.fail(ptr, fmt.Sprintf("more than %d enum values in all", openAIMaxEnums))
	}
	if c.f == Gemini {
		strs := make([]any, 0, len(values))
		for _, v := range values {
			if s, ok := v.(string); ok {
				strs = append(strs, s)
			}
		}
		out["enum"] = strs
		out["format"] = "enum"
		return nil
	}
	out["enum"] = values
	return nil
}

// keep reports whether format f keeps keyword k (of value v) on a node of
// type t; a keyword it does not keep goes into the description.
func (c *converter) keep(k string, v any, t string) bool {
	switch c.f {
	case OpenAI, OpenAIResponses:
		switch t {
		case "string":
			return k == "pattern" || (k == "format" && slices.Contains(openAIFormats, str(v)))
		case "number", "integer":
			return k == "minimum" || k == "maximum" || k == "exclusiveMinimum" || k == "exclusiveMaximum" || k == "multipleOf"
		case "array":
			return k == "minItems" || k == "maxItems"
		}
	case Anthropic:
		if k == "default" {
			return true
		}
		switch t {
		case "string":
			return (k == "pattern" && simplePattern(str(v))) || (k == "format" && slices.Contains(anthropicFormats, str(v)))
		case "array":
			if k == "minItems" {
				n, ok := v.(json.Number)
				return ok && (n.String() == "0" || n.String() == "1")
			}
		}
	case Gemini:
		switch t {
		case "string":
			return k == "minLength" || k == "maxLength" || k == "pattern" || (k == "format" && slices.Contains(geminiFormats["string"], str(v)) && str(v) != "enum")
		case "number", "integer":
			return k == "minimum" || k == "maximum"
		case "array":
			return k == "minItems" || k == "maxItems"
		case "object":
			return k == "minProperties" || k == "maxProperties"
		}
	case MCP:
		return true
	}
	return false
}

// simplePattern reports whether a regular expression uses none of what
// Anthropic's strict mode refuses: backreferences, lookaround, word
// boundaries.
func simplePattern(p string) bool {
	for i := 0; i+1 < len(p); i++ {
		if p[i] == '\\' {
			switch n := p[i+1]; {
			case n >= '1' && n <= '9', n == 'b', n == 'B', n == 'k':
				return false
			}
			i++
			continue
		}
		if p[i] == '(' && p[i+1] == '?' && i+2 < len(p) {
			switch p[i+2] {
			case '=', '!', '<':
				return false
			}
		}
	}
	return true
}

// constraintsOnly reports whether every branch of a union is an object
// schema that describes no property and no type of its own.
func constraintsOnly(branches []any) bool {
	for _, b := range branches {
		bm, ok := b.(map[string]any)
		if !ok {
			return false
		}
		for _, k := range []string{"type", "properties", "items", "$ref", "anyOf", "oneOf", "allOf", "enum", "const"} {
			if _, has := bm[k]; has {
				return false
			}
		}
	}
	return len(branches) > 0
}

// nullable returns s made to accept null, as format f says it.
func (c *converter) nullable(s map[string]any) map[string]any {
	if isNullable(s) {
		return s
	}
	switch c.f {
	case Gemini:
		s["nullable"] = true
		return s
	case OpenAI, OpenAIResponses:
		if t, ok := s["type"].(string); ok {
			s["type"] = []any{t, "null"}
			if e, ok := s["enum"].([]any); ok {
				s["enum"] = append(slices.Clone(e), nil)
			}
			return s
		}
		if a, ok := s["anyOf"].([]any); ok {
			s["anyOf"] = append(slices.Clone(a), map[string]any{"type": "null"})
			return s
		}
	}
	// A union with null, its description outside.
	inner := clone(s)
	desc, hasDesc := inner["description"]
	delete(inner, "description")
	out := map[string]any{"anyOf": []any{inner, map[string]any{"type": "null"}}}
	if a, ok := inner["anyOf"].([]any); ok && len(inner) == 1 {
		out["anyOf"] = append(slices.Clone(a), map[string]any{"type": "null"})
	}
	if hasDesc {
		out["description"] = desc
	}
	return out
}

// isNullable reports whether a converted schema accepts null.
func isNullable(s map[string]any) bool {
	if s["nullable"] == true {
		return true
	}
	if l, ok := s["type"].([]any); ok && slices.Contains(l, any("null")) {
		return true
	}
	if s["type"] == "null" {
		return true
	}
	if a, ok := s["anyOf"].([]any); ok {
		for _, b := range a {
			if bm, ok := b.(map[string]any); ok && isNullable(bm) {
				return true
			}
		}
	}
	return false
}

// nullOnly reports whether a converted schema accepts only null.
func nullOnly(s map[string]any) bool {
	t := s["type"]
	return (t == "null" || t == "NULL") && len(s) <= 2
}

// schemaTypes returns the types a schema names, without null, and whether
// it accepts null (a "null" type, or OpenAPI's "nullable").
func schemaTypes(m map[string]any) (types []string, nullable bool) {
	switch t := m["type"].(type) {
	case string:
		types = []string{t}
	case []any:
		for _, v := range t {
			if s, ok := v.(string); ok {
				types = append(types, s)
			}
		}
	}
	if m["nullable"] == true {
		nullable = true
	}
	if i := slices.Index(types, "null"); i >= 0 {
		nullable = true
		types = slices.Delete(types, i, i+1)
	}
	return types, nullable
}

// enumTypes infers the types of a schema from its enum or const.
func enumTypes(m map[string]any) []string {
	values, _ := m["enum"].([]any)
	if v, ok := m["const"]; ok {
		values = []any{v}
	}
	var types []string
	add := func(t string) {
		if !slices.Contains(types, t) {
			types = append(types, t)
		}
	}
	for _, v := range values {
		switch v := v.(type) {
		case string:
			add("string")
		case bool:
			add("boolean")
		case json.Number:
			if strings.ContainsAny(v.String(), ".eE") {
				add("number")
			} else {
				add("integer")
			}
		case nil:
			add("null")
		case map[string]any:
			add("object")
		case []any:
			add("array")
		}
	}
	return types
}

// enumOf returns the values of an enum that are of type t.
func enumOf(values []any, t string) []any {
	var out []any
	for _, v := range values {
		if slices.Contains(enumTypes(map[string]any{"enum": []any{v}}), t) ||
			(t == "number" && slices.Contains(enumTypes(map[string]any{"enum": []any{v}}), "integer")) {
			out = append(out, v)
		}
	}
	return out
}

// withDescription sets a node's description: its own, followed by what the
// format could not say as a keyword.
func withDescription(out map[string]any, desc string, notes []string) map[string]any {
	if len(notes) > 0 {
		n := "(" + strings.Join(notes, "; ") + ")"
		if desc == "" {
			desc = n
		} else {
			desc += " " + n
		}
	}
	if desc != "" {
		out["description"] = desc
	}
	return out
}

// describeOnly is what a schema that cannot be rewritten becomes: its
// description alone.
func describeOnly(m map[string]any) map[string]any {
	out := map[string]any{}
	if d, ok := m["description"].(string); ok {
		out["description"] = d
	}
	return out
}

func compact(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

func str(v any) string {
	s, _ := v.(string)
	return s
}

// quote returns s as a JSON string, for messages that name a property.
func quote(s string) string { return compact(s) }

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
