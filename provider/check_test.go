package provider_test

// The checker of this file holds each provider's documented rules for tool
// definitions, written from the documentation (docs/providers.md cites it)
// and apart from the converter: it shares no table or function with it, so
// that a rule the converter forgets is a rule this file catches.

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/lathe-tools/lathe/provider"
)

var (
	openAIName    = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)
	anthropicName = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)
	// Gemini: a letter or an underscore first, then letters, digits,
	// underscores, dots and dashes, 64 at most (Vertex AI's rule, the
	// narrower of Google's two APIs).
	geminiName  = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_.-]{0,63}$`)
	geminiParam = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]{0,63}$`)
	mcpName     = regexp.MustCompile(`^[a-zA-Z0-9_.-]{1,128}$`)
)

// violations checks the tools of one format, as Convert printed them, and
// returns every broken rule with the tool and the JSON pointer.
func violations(f provider.Format, toolsJSON []byte) []string {
	var tools []map[string]any
	dec := json.NewDecoder(strings.NewReader(string(toolsJSON)))
	dec.UseNumber()
	if err := dec.Decode(&tools); err != nil {
		return []string{"not a JSON array of tools: " + err.Error()}
	}
	var v []string
	add := func(tool, ptr, msg string) { v = append(v, fmt.Sprintf("%s %s: %s", tool, ptr, msg)) }
	switch f {
	case provider.OpenAI, provider.OpenAIResponses:
		for _, t := range tools {
			fn := t
			if f == provider.OpenAI {
				fn, _ = t["function"].(map[string]any)
			}
			name, _ := fn["name"].(string)
			if t["type"] != "function" {
				add(name, "", "type is not \"function\"")
			}
			if !openAIName.MatchString(name) {
				add(name, "", "name breaks ^[a-zA-Z0-9_-]{1,64}$")
			}
			params, _ := fn["parameters"].(map[string]any)
			if params == nil || params["type"] != "object" {
				add(name, "/parameters", "not an object schema")
			}
			if fn["strict"] == true {
				s := &openAIStrict{add: func(p, m string) { add(name, "/parameters"+p, m) }}
				if params["anyOf"] != nil {
					add(name, "/parameters", "the root is an anyOf")
				}
				s.check(params, "", 1)
			}
		}
	case provider.Anthropic:
		for _, t := range tools {
			name, _ := t["name"].(string)
			if !anthropicName.MatchString(name) {
				add(name, "", "name breaks ^[a-zA-Z0-9_-]{1,64}$")
			}
			in, _ := t["input_schema"].(map[string]any)
			if in == nil || in["type"] != "object" {
				add(name, "/input_schema", "not an object schema")
			}
			if t["strict"] == true {
				anthropicStrict(in, "", func(p, m string) { add(name, "/input_schema"+p, m) })
			}
		}
	case provider.Gemini:
		if len(tools) > 1 {
			v = append(v, "more than one Tool object")
		}
		for _, t := range tools {
			decls, ok := t["functionDeclarations"].([]any)
			if !ok || len(t) != 1 {
				v = append(v, "a Tool that is not {functionDeclarations}")
			}
			for _, d := range decls {
				dm, _ := d.(map[string]any)
				name, _ := dm["name"].(string)
				if !geminiName.MatchString(name) {
					add(name, "", "name breaks Gemini's rule")
				}
				p, ok := dm["parameters"]
				if !ok {
					continue
				}
				pm, _ := p.(map[string]any)
				if pm["type"] != "OBJECT" {
					add(name, "/parameters", "not an OBJECT")
				}
				props, _ := pm["properties"].(map[string]any)
				for k := range props {
					if !geminiParam.MatchString(k) {
						add(name, "/parameters/properties/"+k, "parameter name breaks Gemini's rule")
					}
				}
				geminiSchema(pm, "", func(p, m string) { add(name, "/parameters"+p, m) })
			}
		}
	case provider.MCP:
		for _, t := range tools {
			name, _ := t["name"].(string)
			if !mcpName.MatchString(name) {
				add(name, "", "name breaks MCP's rule")
			}
			in, _ := t["inputSchema"].(map[string]any)
			if in == nil || in["type"] != "object" {
				add(name, "/inputSchema", "not an object schema")
			}
		}
	}
	return v
}

// openAIStrict checks a schema against OpenAI's rules for strict mode.
type openAIStrict struct {
	add          func(ptr, msg string)
	props, enums int
}

var openAIKeywords = []string{"type", "description", "properties", "required", "additionalProperties", "items",
	"enum", "const", "anyOf", "$ref", "$defs", "pattern", "format", "minimum", "maximum", "exclusiveMinimum",
	"exclusiveMaximum", "multipleOf", "minItems", "maxItems"}

func (s *openAIStrict) check(n any, ptr string, depth int) {
	m, ok := n.(map[string]any)
	if !ok {
		s.add(ptr, "a schema that is not an object")
		return
	}
	for k := range m {
		if !slices.Contains(openAIKeywords, k) {
			s.add(ptr, "keyword "+k+" is not supported")
		}
	}
	if m["type"] == nil && m["anyOf"] == nil && m["enum"] == nil && m["const"] == nil && m["$ref"] == nil {
		s.add(ptr, "no type")
	}
	types := typeList(m["type"])
	for _, t := range types {
		if !slices.Contains([]string{"string", "number", "integer", "boolean", "object", "array", "null"}, t) {
			s.add(ptr, "type "+t)
		}
	}
	if f, ok := m["format"].(string); ok && !slices.Contains([]string{"date-time", "time", "date", "duration", "email", "hostname", "ipv4", "ipv6", "uuid"}, f) {
		s.add(ptr, "format "+f)
	}
	if e, ok := m["enum"].([]any); ok {
		s.enums += len(e)
		if s.enums > 1000 {
			s.add(ptr, "more than 1000 enum values")
		}
	}
	if slices.Contains(types, "object") {
		if depth > 10 {
			s.add(ptr, "more than 10 levels of nesting")
		}
		if m["additionalProperties"] != false {
			s.add(ptr, "additionalProperties is not false")
		}
		props, ok := m["properties"].(map[string]any)
		if !ok {
			s.add(ptr, "an object without properties")
		}
		s.props += len(props)
		if s.props > 5000 {
			s.add(ptr, "more than 5000 properties")
		}
		req := strList(m["required"])
		for k, p := range props {
			if !slices.Contains(req, k) {
				s.add(ptr, "property "+k+" is not required")
			}
			s.check(p, ptr+"/properties/"+k, depth+1)
		}
		for _, r := range req {
			if _, ok := props[r]; !ok {
				s.add(ptr, "required "+r+" is not a property")
			}
		}
	}
	if it, ok := m["items"]; ok {
		s.check(it, ptr+"/items", depth)
	}
	if a, ok := m["anyOf"].([]any); ok {
		for i, b := range a {
			s.check(b, fmt.Sprintf("%s/anyOf/%d", ptr, i), depth)
		}
	}
}

var anthropicKeywords = []string{"type", "description", "properties", "required", "additionalProperties", "items",
	"enum", "const", "anyOf", "allOf", "$ref", "$defs", "definitions", "default", "pattern", "format", "minItems"}

// anthropicStrict checks a schema against Anthropic's rules for strict
// tool use.
func anthropicStrict(n any, ptr string, add func(ptr, msg string)) {
	m, ok := n.(map[string]any)
	if !ok {
		add(ptr, "a schema that is not an object")
		return
	}
	for k := range m {
		if !slices.Contains(anthropicKeywords, k) {
			add(ptr, "keyword "+k+" is not supported")
		}
	}
	if f, ok := m["format"].(string); ok && !slices.Contains([]string{"date-time", "time", "date", "duration", "email", "hostname", "uri", "ipv4", "ipv6", "uuid"}, f) {
		add(ptr, "format "+f)
	}
	if p, ok := m["pattern"].(string); ok && regexp.MustCompile(`\\[1-9bBk]|\(\?[=!<]`).MatchString(p) {
		add(ptr, "pattern with a backreference, lookaround or word boundary")
	}
	if mi, ok := m["minItems"]; ok && fmt.Sprint(mi) != "0" && fmt.Sprint(mi) != "1" {
		add(ptr, "minItems other than 0 or 1")
	}
	if e, ok := m["enum"].([]any); ok {
		for _, x := range e {
			switch x.(type) {
			case map[string]any, []any:
				add(ptr, "an enum value that is not a scalar")
			}
		}
	}
	if slices.Contains(typeList(m["type"]), "object") {
		if m["additionalProperties"] != false {
			add(ptr, "additionalProperties is not false")
		}
		props, _ := m["properties"].(map[string]any)
		for k, p := range props {
			anthropicStrict(p, ptr+"/properties/"+k, add)
		}
		for _, r := range strList(m["required"]) {
			if _, ok := props[r]; !ok {
				add(ptr, "required "+r+" is not a property")
			}
		}
	}
	if it, ok := m["items"]; ok {
		anthropicStrict(it, ptr+"/items", add)
	}
	for _, key := range []string{"anyOf", "allOf"} {
		if a, ok := m[key].([]any); ok {
			for i, b := range a {
				anthropicStrict(b, fmt.Sprintf("%s/%s/%d", ptr, key, i), add)
			}
		}
	}
}

var geminiFields = []string{"type", "format", "title", "description", "nullable", "enum", "maxItems", "minItems",
	"properties", "required", "minProperties", "maxProperties", "minLength", "maxLength", "pattern", "example",
	"anyOf", "propertyOrdering", "default", "items", "minimum", "maximum"}

// geminiSchema checks a schema against the fields of Gemini's Schema
// object.
func geminiSchema(n any, ptr string, add func(ptr, msg string)) {
	m, ok := n.(map[string]any)
	if !ok {
		add(ptr, "a schema that is not an object")
		return
	}
	for k := range m {
		if !slices.Contains(geminiFields, k) {
			add(ptr, "field "+k+" is not in Gemini's Schema")
		}
	}
	t, isStr := m["type"].(string)
	if m["type"] != nil && (!isStr || !slices.Contains([]string{"STRING", "NUMBER", "INTEGER", "BOOLEAN", "ARRAY", "OBJECT", "NULL"}, t)) {
		add(ptr, fmt.Sprintf("type %v", m["type"]))
	}
	if f, ok := m["format"].(string); ok {
		allowed := map[string][]string{"STRING": {"enum", "date-time"}, "NUMBER": {"float", "double"}, "INTEGER": {"int32", "int64"}}[t]
		if !slices.Contains(allowed, f) {
			add(ptr, "format "+f+" for "+t)
		}
	}
	if e, ok := m["enum"].([]any); ok {
		if t != "STRING" {
			add(ptr, "an enum on a "+t)
		}
		for _, x := range e {
			if _, ok := x.(string); !ok {
				add(ptr, "an enum value that is not a string")
			}
		}
	}
	props, _ := m["properties"].(map[string]any)
	if t == "OBJECT" && len(props) == 0 {
		// Not in the reference, but what the API answers: "properties:
		// should be non-empty for OBJECT type".
		add(ptr, "an OBJECT without properties")
	}
	if props != nil && t != "OBJECT" {
		add(ptr, "properties on a "+t)
	}
	for k, p := range props {
		geminiSchema(p, ptr+"/properties/"+k, add)
	}
	for _, r := range strList(m["required"]) {
		if _, ok := props[r]; !ok {
			add(ptr, "required "+r+" is not a property")
		}
	}
	if it, ok := m["items"]; ok {
		geminiSchema(it, ptr+"/items", add)
	}
	if a, ok := m["anyOf"].([]any); ok {
		for i, b := range a {
			geminiSchema(b, fmt.Sprintf("%s/anyOf/%d", ptr, i), add)
		}
	}
}

func typeList(t any) []string {
	switch t := t.(type) {
	case string:
		return []string{t}
	case []any:
		return strList(t)
	}
	return nil
}

func strList(v any) []string {
	l, _ := v.([]any)
	var out []string
	for _, x := range l {
		if s, ok := x.(string); ok {
			out = append(out, s)
		}
	}
	return out
}
