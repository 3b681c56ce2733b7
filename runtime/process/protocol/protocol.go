// Package protocol holds the wire types of lathe's process protocol, version 1:
// the [Request] a tool reads from standard input and the [Answer] (or, for the
// schema action, the [SchemaAnswer]) it writes to standard output. The
// project's docs/protocol.md is the specification; this package is its Go
// form, shared by the process runtime and the SDK for tool authors.
//
// The package imports only the standard library and package tool, so that a
// tool binary built with the SDK stays small.
package protocol

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/lathe-tools/lathe/tool"
)

// Version is the protocol version this package speaks. It is sent in every
// request as "protocol".
const Version = 1

// Action says what a request asks of a tool.
type Action string

const (
	// ActionRun runs the tool with the request's arguments.
	ActionRun Action = "run"
	// ActionSchema asks for the definitions of the tools the binary holds.
	ActionSchema Action = "schema"
	// ActionFormatArguments asks for a short human-readable rendering of
	// the arguments, for a prompt or a log, without running the tool.
	ActionFormatArguments Action = "format_arguments"
)

// Request is the one JSON object a tool reads from standard input.
type Request struct {
	Protocol int    `json:"protocol"`
	Action   Action `json:"action"`
	// Tool is the name of the tool to run, as the binary knows it; empty for
	// the schema action.
	Tool string `json:"tool,omitempty"`
	// Arguments is a JSON object, already validated against the tool's schema.
	Arguments json.RawMessage `json:"arguments,omitempty"`
	// Answers holds answers to questions an earlier run asked, by question id.
	Answers map[string]any `json:"answers,omitempty"`
	Context Context        `json:"context"`
}

// Context is what a tool knows of the call beyond its arguments.
type Context struct {
	// Root is the workspace root, also the process's working directory.
	Root string `json:"root"`
	// CallID identifies the call to its caller; it may be empty.
	CallID string `json:"call_id,omitempty"`
	// Options are the tool's options from the configuration.
	Options map[string]any `json:"options,omitempty"`
	// Host is the version of the host API (the project's docs/host.md)
	// the tool may use over its standard input and output, or 0 when it
	// has none: a VFS tool gets it, a plain process tool does not.
	Host int `json:"host,omitempty"`
}

// Answer types, the values of [Answer].Type.
const (
	TypeSuccess    = "success"
	TypeError      = "error"
	TypeNeedsInput = "needs_input"
)

// Answer is the one JSON object a tool writes to standard output for the run
// and format_arguments actions.
type Answer struct {
	// Type is success, error or needs_input.
	Type string `json:"type"`
	// Content (success) is a string or an array of content blocks, as in MCP.
	Content json.RawMessage `json:"content,omitempty"`
	// Structured (success) is an optional JSON object.
	Structured json.RawMessage `json:"structured,omitempty"`
	// Message, Trace and Transient describe an error: what went wrong, its
	// causes from outermost to innermost, and whether trying again may work.
	Message   string   `json:"message,omitempty"`
	Trace     []string `json:"trace,omitempty"`
	Transient bool     `json:"transient,omitempty"`
	// Question (needs_input) is what the tool needs to know to go on.
	Question *Question `json:"question,omitempty"`
}

// Question is a question in a needs_input answer.
type Question struct {
	ID         string     `json:"id"`
	Text       string     `json:"text"`
	AnswerType AnswerType `json:"answer_type"`
	Default    any        `json:"default,omitempty"`
}

// AnswerType is the kind of answer a question wants. In JSON it is "boolean",
// "text", or {"select": ["option", …]}. The capitalised forms that JP's tools
// write ("Boolean", "Text", {"Select": {"options": […]}}) are read too.
type AnswerType struct {
	Kind    tool.QuestionKind
	Options []string
}

// MarshalJSON writes the lower-case form.
func (a AnswerType) MarshalJSON() ([]byte, error) {
	switch a.Kind {
	case tool.QuestionSelect:
		opts := a.Options
		if opts == nil {
			opts = []string{}
		}
		return json.Marshal(map[string][]string{"select": opts})
	case "":
		return []byte(`"text"`), nil
	}
	return json.Marshal(string(a.Kind))
}

// UnmarshalJSON reads both the lower-case and JP's capitalised forms.
func (a *AnswerType) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		switch strings.ToLower(s) {
		case "boolean", "bool":
			*a = AnswerType{Kind: tool.QuestionBoolean}
		case "text", "string":
			*a = AnswerType{Kind: tool.QuestionText}
		default:
			return fmt.Errorf("unknown answer_type %q: want \"boolean\", \"text\" or {\"select\": [...]}", s)
		}
		return nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil || len(m) != 1 {
		return errors.New(`answer_type must be "boolean", "text" or {"select": [...]}`)
	}
	for k, v := range m {
		if strings.ToLower(k) != "select" {
			return fmt.Errorf("unknown answer_type %q: want \"boolean\", \"text\" or {\"select\": [...]}", k)
		}
		var opts []string
		if err := json.Unmarshal(v, &opts); err != nil {
			// JP's form: {"Select": {"options": [...]}}.
			var jp struct {
				Options []string `json:"options"`
			}
			if err := json.Unmarshal(v, &jp); err != nil {
				return errors.New(`answer_type select wants a list of strings: {"select": ["a", "b"]}`)
			}
			opts = jp.Options
		}
		*a = AnswerType{Kind: tool.QuestionSelect, Options: opts}
	}
	return nil
}

// SchemaAnswer is what a tool writes for the schema action.
type SchemaAnswer struct {
	Tools []ToolSchema `json:"tools"`
}

// ToolSchema describes one tool of a binary.
type ToolSchema struct {
	Name        string `json:"name"`
	Summary     string `json:"summary,omitempty"`
	Description string `json:"description,omitempty"`
	// Parameters is the JSON Schema of the arguments, an object schema.
	Parameters json.RawMessage `json:"parameters,omitempty"`
	// OutputSchema, optional, describes the structured part of a result.
	OutputSchema json.RawMessage  `json:"output_schema,omitempty"`
	Annotations  tool.Annotations `json:"annotations,omitzero"`
	// Permissions, optional, is what a confined tool (runtime "vfs" or
	// "wasm") says it needs of lathe's host API. It is shown to the person
	// (lathe describe) beside what the configuration grants, and never
	// grants anything by itself.
	Permissions *Permissions `json:"permissions,omitempty"`
}

// Permissions is what a tool declares it needs of lathe's host API, in the
// syntax of the configuration's keys of the same names (docs/host.md).
type Permissions struct {
	Read  []string `json:"read,omitempty"`
	Write []string `json:"write,omitempty"`
	Net   []string `json:"net,omitempty"`
	Env   []string `json:"env,omitempty"`
	Run   []string `json:"run,omitempty"`
}

// NewRequest encodes a request. Arguments that are empty become {}.
func NewRequest(r *Request) ([]byte, error) {
	if r.Protocol == 0 {
		r.Protocol = Version
	}
	if len(bytes.TrimSpace(r.Arguments)) == 0 {
		r.Arguments = json.RawMessage(`{}`)
	}
	return json.Marshal(r)
}

// ParseAnswer reads a tool's standard output as an answer. It returns ok =
// false when out is not a protocol answer at all (plain text, or JSON that is
// not an object with a known "type"), so that the caller can take it as plain
// output; it returns an error when out is an answer but a malformed one.
//
// The type is matched without regard to case, so JP's tools, which write the
// same object, are read as they are.
func ParseAnswer(out []byte) (a *Answer, ok bool, err error) {
	out = bytes.TrimSpace(out)
	if len(out) == 0 || out[0] != '{' {
		return nil, false, nil
	}
	var probe struct {
		Type json.RawMessage `json:"type"`
	}
	if json.Unmarshal(out, &probe) != nil {
		return nil, false, nil
	}
	var typ string
	if json.Unmarshal(probe.Type, &typ) != nil {
		return nil, false, nil
	}
	switch t := strings.ToLower(typ); t {
	case TypeSuccess, TypeError, TypeNeedsInput, "needsinput":
		if t == "needsinput" {
			t = TypeNeedsInput
		}
		typ = t
	default:
		return nil, false, nil
	}
	a = &Answer{}
	if err := json.Unmarshal(out, a); err != nil {
		return nil, true, fmt.Errorf("a %s answer that does not decode: %w", typ, err)
	}
	a.Type = typ
	return a, true, nil
}

// Outcome turns an answer into the outcome of a call.
func (a *Answer) Outcome() (*tool.Outcome, error) {
	switch a.Type {
	case TypeSuccess:
		r := &tool.Result{}
		c, err := decodeContent(a.Content)
		if err != nil {
			return nil, err
		}
		r.Content = c
		if s := bytes.TrimSpace(a.Structured); len(s) > 0 && !bytes.Equal(s, []byte("null")) {
			if s[0] != '{' {
				return nil, errors.New("structured must be a JSON object")
			}
			r.Structured = s
		}
		return &tool.Outcome{Result: r}, nil
	case TypeError:
		msg := a.Message
		if msg == "" {
			msg = "the tool failed without saying why"
		}
		var b strings.Builder
		b.WriteString(msg)
		for _, t := range a.Trace {
			b.WriteString("\n  caused by: ")
			b.WriteString(t)
		}
		if a.Transient {
			b.WriteString("\n(transient: the same call may succeed if tried again)")
		}
		return &tool.Outcome{Result: &tool.Result{
			Content: []tool.Content{{Type: tool.ContentText, Text: b.String()}},
			IsError: true, ErrorKind: tool.KindToolError,
		}}, nil
	case TypeNeedsInput:
		q := a.Question
		if q == nil || q.ID == "" {
			return nil, errors.New("a needs_input answer must carry a question with an id")
		}
		kind := q.AnswerType.Kind
		if kind == "" {
			kind = tool.QuestionText
		}
		return &tool.Outcome{Question: &tool.Question{
			ID: q.ID, Text: q.Text, Kind: kind, Options: q.AnswerType.Options, Default: q.Default,
		}}, nil
	}
	return nil, fmt.Errorf("unknown answer type %q", a.Type)
}

// decodeContent reads content given as a string or as an array of blocks.
func decodeContent(raw json.RawMessage) ([]tool.Content, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return nil, nil
	}
	switch raw[0] {
	case '"':
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, fmt.Errorf("content: %w", err)
		}
		return []tool.Content{{Type: tool.ContentText, Text: s}}, nil
	case '[':
		var blocks []tool.Content
		if err := json.Unmarshal(raw, &blocks); err != nil {
			return nil, fmt.Errorf("content blocks: %w", err)
		}
		for i, c := range blocks {
			switch c.Type {
			case tool.ContentText, tool.ContentImage, tool.ContentAudio, tool.ContentResourceLink, tool.ContentResource:
			case "":
				return nil, fmt.Errorf("content block %d has no type", i)
			default:
				return nil, fmt.Errorf("content block %d has unknown type %q", i, c.Type)
			}
		}
		return blocks, nil
	}
	return nil, errors.New("content must be a string or an array of content blocks")
}

// ParseSchema reads a tool's standard output as the answer to the schema
// action.
func ParseSchema(out []byte) (*SchemaAnswer, error) {
	out = bytes.TrimSpace(out)
	if len(out) == 0 {
		return nil, errors.New("it wrote nothing to standard output")
	}
	if out[0] != '{' {
		return nil, fmt.Errorf("it wrote %s, not a JSON object", excerpt(out))
	}
	var s struct {
		Tools *[]ToolSchema `json:"tools"`
	}
	if err := json.Unmarshal(out, &s); err != nil {
		return nil, fmt.Errorf("its answer does not decode: %w", err)
	}
	if s.Tools == nil {
		return nil, fmt.Errorf(`its answer %s has no "tools" list`, excerpt(out))
	}
	return &SchemaAnswer{Tools: *s.Tools}, nil
}

// excerpt quotes the start of b for a message.
func excerpt(b []byte) string {
	const limit = 60
	if len(b) <= limit {
		return fmt.Sprintf("%q", b)
	}
	cut := limit
	for cut > 0 && !utf8.RuneStart(b[cut]) {
		cut--
	}
	return fmt.Sprintf("%q…", b[:cut])
}

// Success returns the answer for a result: its content as blocks (or as a
// plain string when it is one text block), and its structured part.
func Success(r *tool.Result) *Answer {
	a := &Answer{Type: TypeSuccess, Structured: r.Structured}
	if len(r.Content) == 1 && r.Content[0].Type == tool.ContentText {
		a.Content, _ = json.Marshal(r.Content[0].Text)
	} else if len(r.Content) > 0 {
		a.Content, _ = json.Marshal(r.Content)
	}
	return a
}

// Failure returns an error answer.
func Failure(message string, trace []string, transient bool) *Answer {
	return &Answer{Type: TypeError, Message: message, Trace: trace, Transient: transient}
}

// NeedsInput returns the answer that asks q.
func NeedsInput(q tool.Question) *Answer {
	return &Answer{Type: TypeNeedsInput, Question: &Question{
		ID: q.ID, Text: q.Text, AnswerType: AnswerType{Kind: q.Kind, Options: q.Options}, Default: q.Default,
	}}
}
