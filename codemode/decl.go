package codemode

import (
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/lathe-tools/lathe/tool"
)

// maxDepth bounds how deep a schema is rendered; deeper parts are unknown.
// A schema is the tool's own word, and may be as deep (or as recursive,
// through $ref) as it likes.
const maxDepth = 6

// Declaration returns the TypeScript declaration of one tool as a method of
// the tools object of a run_code script, with its summary and its
// arguments' descriptions as comments:
//
//	/** Read a file. */
//	read_file(args: {
//	  /** The path, relative to the workspace. */
//	  path: string;
//	  offset?: number;
//	}): Promise<string>;
//
// A tool with an output schema resolves to that type, any other to its
// text.
func Declaration(def tool.Definition) string {
	var b strings.Builder
	if s := oneLine(def.Summary); s != "" {
		fmt.Fprintf(&b, "/** %s */\n", commentSafe(s))
	}
	fmt.Fprintf(&b, "%s(args: %s): Promise<%s>;\n", member(def.Name), typeOf(schemaOf(def.InputSchema, `{"type":"object"}`), 0, true),
		resultType(def))
	return b.String()
}

// Declarations returns the full declaration of the tools object for the
// tools defs, as describe_tools shows it for the ones asked about.
func Declarations(defs []tool.Definition) string {
	var b strings.Builder
	b.WriteString("declare const tools: {\n")
	for _, d := range sorted(defs) {
		if d.Name == Name {
			continue
		}
		for _, line := range strings.SplitAfter(strings.TrimRight(Declaration(d), "\n"), "\n") {
			b.WriteString("  " + line)
		}
		b.WriteString("\n")
	}
	b.WriteString("};\n")
	return b.String()
}

// Listing returns the short form, one line per tool (its name and
// summary), in at most limit bytes: the tools that do not fit are counted
// at the end, so that the description of run_code stays small however
// many tools the engine holds.
func Listing(defs []tool.Definition, limit int) string {
	var b strings.Builder
	defs = sorted(defs)
	left := 0
	for _, d := range defs {
		if d.Name == Name {
			continue
		}
		line := "- " + d.Name
		if s := oneLine(d.Summary); s != "" {
			line += ": " + s
		}
		line += "\n"
		if left > 0 || b.Len()+len(line) > limit {
			left++
			continue
		}
		b.WriteString(line)
	}
	if left > 0 {
		fmt.Fprintf(&b, "… and %d more tools (the tool list names them).\n", left)
	}
	if b.Len() == 0 {
		// Never empty: [Watch] finds the list in the description by its
		// text, and an empty one would match anywhere.
		b.WriteString("(none yet)\n")
	}
	return b.String()
}

func sorted(defs []tool.Definition) []tool.Definition {
	out := append([]tool.Definition(nil), defs...)
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func resultType(def tool.Definition) string {
	if len(def.OutputSchema) > 0 {
		return typeOf(schemaOf(def.OutputSchema, "{}"), 0, false)
	}
	return "string"
}

func schemaOf(raw json.RawMessage, empty string) map[string]any {
	if len(raw) == 0 {
		raw = json.RawMessage(empty)
	}
	var m map[string]any
	if json.Unmarshal(raw, &m) != nil {
		return nil
	}
	return m
}

var identifier = regexp.MustCompile(`^[A-Za-z_$][A-Za-z0-9_$]*$`)

// member is a property name as TypeScript writes it: bare when it is an
// identifier, quoted otherwise.
func member(name string) string {
	if identifier.MatchString(name) {
		return name
	}
	return strconv.Quote(name)
}

func oneLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	const max = 160
	if len(s) > max {
		s = s[:max] + "…"
	}
	return s
}

// commentSafe keeps a description from closing the comment it is in: the
// text is the tool's, and must not become declarations of its own.
func commentSafe(s string) string { return strings.ReplaceAll(s, "*/", "* /") }

// typeOf renders a JSON Schema as a TypeScript type. Only what a model
// needs is kept: types, enums and constants, properties (required or
// not), items, unions; a schema it cannot read is unknown.
func typeOf(s map[string]any, depth int, comments bool) string {
	if s == nil || depth > maxDepth {
		return "unknown"
	}
	if c, ok := s["const"]; ok {
		return literal(c)
	}
	if e, ok := s["enum"].([]any); ok && len(e) > 0 {
		parts := make([]string, 0, len(e))
		for _, v := range e {
			parts = append(parts, literal(v))
		}
		return strings.Join(parts, " | ")
	}
	for _, k := range []string{"anyOf", "oneOf"} {
		if alts, ok := s[k].([]any); ok && len(alts) > 0 {
			parts := make([]string, 0, len(alts))
			for _, a := range alts {
				m, _ := a.(map[string]any)
				parts = append(parts, typeOf(m, depth+1, comments))
			}
			return "(" + strings.Join(parts, " | ") + ")"
		}
	}
	switch t := s["type"].(type) {
	case string:
		return typeNamed(t, s, depth, comments)
	case []any:
		parts := make([]string, 0, len(t))
		for _, x := range t {
			if n, ok := x.(string); ok {
				parts = append(parts, typeNamed(n, s, depth, comments))
			}
		}
		if len(parts) > 0 {
			return strings.Join(parts, " | ")
		}
	}
	if _, ok := s["properties"]; ok {
		return typeNamed("object", s, depth, comments)
	}
	return "unknown"
}

func typeNamed(t string, s map[string]any, depth int, comments bool) string {
	switch t {
	case "string":
		return "string"
	case "number", "integer":
		return "number"
	case "boolean":
		return "boolean"
	case "null":
		return "null"
	case "array":
		items, _ := s["items"].(map[string]any)
		it := typeOf(items, depth+1, comments)
		if strings.ContainsAny(it, " |") {
			it = "(" + it + ")"
		}
		return it + "[]"
	case "object":
		return objectType(s, depth, comments)
	}
	return "unknown"
}

func objectType(s map[string]any, depth int, comments bool) string {
	props, _ := s["properties"].(map[string]any)
	if len(props) == 0 {
		return "Record<string, unknown>"
	}
	required := map[string]bool{}
	if r, ok := s["required"].([]any); ok {
		for _, x := range r {
			if n, ok := x.(string); ok {
				required[n] = true
			}
		}
	}
	names := make([]string, 0, len(props))
	for n := range props {
		names = append(names, n)
	}
	sort.Strings(names)
	indent := strings.Repeat("  ", depth+1)
	var b strings.Builder
	b.WriteString("{\n")
	for _, n := range names {
		p, _ := props[n].(map[string]any)
		if comments {
			if d, ok := p["description"].(string); ok && oneLine(d) != "" {
				fmt.Fprintf(&b, "%s/** %s */\n", indent, commentSafe(oneLine(d)))
			}
		}
		opt := "?"
		if required[n] {
			opt = ""
		}
		fmt.Fprintf(&b, "%s%s%s: %s;\n", indent, member(n), opt, typeOf(p, depth+1, comments))
	}
	b.WriteString(strings.Repeat("  ", depth) + "}")
	return b.String()
}

func literal(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return "unknown"
	}
	return string(b)
}
