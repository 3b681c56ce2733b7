package provider

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/lathe-tools/lathe/tool"
)

// Warning says that a tool's definition lost something in a format: for a
// format with a strict mode, that its schema could not be made strict and
// goes out as it is, without the strict guarantee; for Gemini, what its
// schema subset cannot say.
type Warning struct {
	Tool   string
	Reason string
}

func (w Warning) String() string { return "tool " + w.Tool + ": " + w.Reason }

// Toolset is a set of definitions converted for one format. It keeps what
// the conversion did to each tool, so that the calls a model makes with it
// map back to lathe's calls ([Toolset.Resolve]) and their outcomes map to
// the format's result messages ([Toolset.Results]).
type Toolset struct {
	format Format
	tools  []any
	// Warnings lists, tool by tool, what the conversion could not keep.
	Warnings []Warning
	byWire   map[string]*entry
	byName   map[string]*entry
}

// entry is what a Toolset knows of one tool.
type entry struct {
	name, wire string
	nulls      *nullTree
	renames    map[string]string // Gemini parameter name → the schema's
}

// Options change what [Convert] makes.
type Options struct {
	// NoStrict sends every schema as it is, without strict mode.
	NoStrict bool
}

// The shapes of a tool definition in each format; the field order is the
// order of the documentation's examples.
type (
	openAIFunction struct {
		Name        string `json:"name"`
		Description string `json:"description,omitempty"`
		Parameters  any    `json:"parameters"`
		Strict      bool   `json:"strict"`
	}
	openAIChatTool struct {
		Type     string         `json:"type"`
		Function openAIFunction `json:"function"`
	}
	openAIResponsesTool struct {
		Type string `json:"type"`
		openAIFunction
	}
	anthropicTool struct {
		Name        string `json:"name"`
		Description string `json:"description,omitempty"`
		InputSchema any    `json:"input_schema"`
		Strict      bool   `json:"strict,omitempty"`
	}
	geminiDeclaration struct {
		Name        string `json:"name"`
		Description string `json:"description,omitempty"`
		Parameters  any    `json:"parameters,omitempty"`
	}
	geminiTool struct {
		FunctionDeclarations []geminiDeclaration `json:"functionDeclarations"`
	}
	mcpTool struct {
		Name         string           `json:"name"`
		Title        string           `json:"title,omitempty"`
		Description  string           `json:"description,omitempty"`
		InputSchema  json.RawMessage  `json:"inputSchema"`
		OutputSchema json.RawMessage  `json:"outputSchema,omitempty"`
		Annotations  tool.Annotations `json:"annotations,omitzero"`
	}
)

// Convert converts definitions to format f. Names that f refuses are
// mapped to names it takes (and back, by the Toolset); two definitions
// whose names map to the same name are an error, as is a schema that is
// not JSON. A schema that cannot be made strict goes out without strict
// mode, with a [Warning] that names the tool and the reason.
func Convert(f Format, defs []tool.Definition, opts *Options) (*Toolset, error) {
	if opts == nil {
		opts = &Options{}
	}
	if f == Lathe {
		return nil, fmt.Errorf("format %q: tools are not converted to lathe's own call shape", f)
	}
	if _, err := ParseFormat(string(f)); err != nil {
		return nil, err
	}
	ts := &Toolset{format: f, byWire: make(map[string]*entry, len(defs)), byName: make(map[string]*entry, len(defs))}
	var gemini []geminiDeclaration
	for i := range defs {
		d := &defs[i]
		e := &entry{name: d.Name, wire: wireName(f, d.Name)}
		if other, dup := ts.byWire[e.wire]; dup {
			return nil, fmt.Errorf("tools %q and %q both go by %q in format %s", other.name, d.Name, e.wire, f)
		}
		if _, dup := ts.byName[d.Name]; dup {
			return nil, fmt.Errorf("tool %q is defined twice", d.Name)
		}
		ts.byWire[e.wire], ts.byName[d.Name] = e, e
		desc := d.Description
		if desc == "" {
			desc = d.Summary
		}
		if f == MCP {
			in, err := plainSchema(d)
			if err != nil {
				return nil, err
			}
			ts.tools = append(ts.tools, mcpTool{Name: e.wire, Title: d.Annotations.Title, Description: desc,
				InputSchema: in, OutputSchema: d.OutputSchema, Annotations: d.Annotations})
			continue
		}
		schema, strict, err := ts.schema(f, d, e, opts)
		if err != nil {
			return nil, err
		}
		switch f {
		case OpenAI:
			ts.tools = append(ts.tools, openAIChatTool{Type: "function",
				Function: openAIFunction{Name: e.wire, Description: desc, Parameters: schema, Strict: strict}})
		case OpenAIResponses:
			ts.tools = append(ts.tools, openAIResponsesTool{Type: "function",
				openAIFunction: openAIFunction{Name: e.wire, Description: desc, Parameters: schema, Strict: strict}})
		case Anthropic:
			ts.tools = append(ts.tools, anthropicTool{Name: e.wire, Description: desc, InputSchema: schema, Strict: strict})
		case Gemini:
			decl := geminiDeclaration{Name: e.wire, Description: desc}
			// A tool without arguments declares no parameters: Gemini
			// refuses an OBJECT whose properties are empty.
			m, _ := schema.(map[string]any)
			if props, _ := m["properties"].(map[string]any); len(props) > 0 {
				decl.Parameters = schema
			}
			gemini = append(gemini, decl)
		}
	}
	if f == Gemini {
		ts.tools = []any{geminiTool{FunctionDeclarations: gemini}}
		if len(gemini) == 0 {
			ts.tools = []any{}
		}
	}
	if ts.tools == nil {
		ts.tools = []any{}
	}
	return ts, nil
}

// schema returns a definition's input schema as format f sends it, and
// whether it is strict.
func (ts *Toolset) schema(f Format, d *tool.Definition, e *entry, opts *Options) (any, bool, error) {
	out, tree, c, err := convertSchema(f, d.InputSchema)
	if err != nil {
		return nil, false, fmt.Errorf("tool %q: %w", d.Name, err)
	}
	if f == Gemini {
		for _, why := range c.lossy {
			ts.Warnings = append(ts.Warnings, Warning{d.Name, "Gemini cannot say " + why})
		}
		e.renames = c.renames
		return out, false, nil
	}
	if len(c.fails) == 0 && !opts.NoStrict {
		e.nulls = tree
		return out, true, nil
	}
	if len(c.fails) > 0 {
		ts.Warnings = append(ts.Warnings, Warning{d.Name, "not strict: " + strings.Join(c.fails, "; ")})
	}
	plain, err := plainSchema(d)
	if err != nil {
		return nil, false, err
	}
	return plain, false, nil
}

// plainSchema returns a definition's input schema as it is, for a format
// or a tool without strict mode: only the root must say that it is an
// object, which every format asks.
func plainSchema(d *tool.Definition) (json.RawMessage, error) {
	if len(d.InputSchema) == 0 {
		return json.RawMessage(`{"type":"object","properties":{}}`), nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(d.InputSchema, &m); err != nil || m == nil {
		return nil, fmt.Errorf("tool %q: the input schema is not a JSON object", d.Name)
	}
	if t, ok := m["type"]; ok && string(t) == `"object"` {
		return d.InputSchema, nil
	}
	m["type"] = json.RawMessage(`"object"`)
	return json.Marshal(m)
}

// Format returns the format of the toolset.
func (ts *Toolset) Format() Format { return ts.format }

// MarshalJSON returns the tools as the format's request carries them under
// "tools" (for MCP: the tools of a tools/list result).
func (ts *Toolset) MarshalJSON() ([]byte, error) { return json.Marshal(ts.tools) }

// WireName returns the name a lathe tool goes by in the toolset's format.
func (ts *Toolset) WireName(name string) string {
	if e, ok := ts.byName[name]; ok {
		return e.wire
	}
	return wireName(ts.format, name)
}

// Name returns the lathe name of a tool the model called by wire, and
// whether the toolset holds it.
func (ts *Toolset) Name(wire string) (string, bool) {
	if e, ok := ts.byWire[wire]; ok {
		return e.name, true
	}
	return wire, false
}
