package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/lathe-tools/lathe/runtime/builtin"
	"github.com/lathe-tools/lathe/tool"
)

type describeIn struct {
	Names []string `json:"names" jsonschema:"description=Names of the tools to describe,minItems=1"`
}

func (s *set) describeTool() (tool.Tool, error) {
	return builtin.Func(tool.Definition{
		Name:    DescribeTools,
		Summary: "Show the full description and schemas of named tools.",
		Description: `Show everything known about the named tools: the full description, the JSON Schema of the arguments, the schema of the structured output if the tool has one, and the annotations that say whether it changes anything.

The tool list gives only a one-line summary of each tool; call this before using a tool whose arguments or behaviour the summary leaves unclear. Names that are not registered tools are listed as unknown.`,
		Annotations: readOnly("Describe tools"),
		Resources:   []tool.ResourceArg{{Arg: "names", Kind: "tool"}},
	}, s.describe)
}

func (s *set) describe(ctx context.Context, in describeIn) (string, error) {
	var b strings.Builder
	var unknown []string
	seen := map[string]bool{}
	for _, name := range in.Names {
		if seen[name] {
			continue
		}
		seen[name] = true
		def, ok := s.opts.Describe(name)
		if !ok {
			unknown = append(unknown, name)
			continue
		}
		if b.Len() > 0 {
			b.WriteString("\n")
		}
		writeDefinition(&b, &def)
		if s.opts.Declaration != nil {
			if d := s.opts.Declaration(def); d != "" {
				fmt.Fprintf(&b, "typescript (run_code: tools.%s):\n%s", def.Name, d)
			}
		}
	}
	if len(unknown) > 0 {
		if b.Len() > 0 {
			b.WriteString("\n")
		}
		fmt.Fprintf(&b, "unknown tools: %s\n", strings.Join(unknown, ", "))
	}
	return b.String(), nil
}

// writeDefinition renders def as a model reads it best: prose first, then
// the schemas as indented JSON.
func writeDefinition(b *strings.Builder, def *tool.Definition) {
	fmt.Fprintf(b, "# %s\n", def.Name)
	if def.Summary != "" {
		fmt.Fprintf(b, "%s\n", def.Summary)
	}
	if def.Description != "" && def.Description != def.Summary {
		fmt.Fprintf(b, "\n%s\n", strings.TrimRight(def.Description, "\n"))
	}
	b.WriteString("\n")
	if def.Source != "" {
		fmt.Fprintf(b, "source: %s\n", def.Source)
	}
	if a := annotationText(def.Annotations); a != "" {
		fmt.Fprintf(b, "annotations: %s\n", a)
	}
	fmt.Fprintf(b, "input schema:\n%s\n", indentJSON(def.InputSchema, `{"type":"object"}`))
	if len(def.OutputSchema) > 0 {
		fmt.Fprintf(b, "output schema:\n%s\n", indentJSON(def.OutputSchema, ""))
	}
}

// annotationText says in words what the hints say, with MCP's cautious
// defaults for hints left unsaid.
func annotationText(a tool.Annotations) string {
	var parts []string
	if a.Title != "" {
		parts = append(parts, fmt.Sprintf("title %q", a.Title))
	}
	if a.ReadOnlyHint {
		parts = append(parts, "read-only")
	} else {
		if a.DestructiveHint == nil || *a.DestructiveHint {
			parts = append(parts, "may overwrite or delete")
		} else {
			parts = append(parts, "only adds")
		}
		if a.IdempotentHint {
			parts = append(parts, "idempotent")
		} else {
			parts = append(parts, "not idempotent")
		}
	}
	if a.OpenWorldHint == nil || *a.OpenWorldHint {
		parts = append(parts, "reaches outside (open world)")
	} else {
		parts = append(parts, "closed world")
	}
	return strings.Join(parts, "; ")
}

func indentJSON(raw json.RawMessage, empty string) string {
	if len(raw) == 0 {
		raw = json.RawMessage(empty)
	}
	var b bytes.Buffer
	if err := json.Indent(&b, raw, "", "  "); err != nil {
		return string(raw)
	}
	return b.String()
}
