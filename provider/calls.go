package provider

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/lathe-tools/lathe/tool"
)

// wireCall is one tool call in any of the shapes models write:
//
//	lathe      {"id", "name", "arguments": {…}, "answers"}
//	OpenAI     {"id", "type": "function", "function": {"name", "arguments": "…"}}   (chat completions)
//	           {"type": "function_call", "call_id", "name", "arguments": "…"}     (responses)
//	Anthropic  {"type": "tool_use", "id", "name", "input": {…}}
//	Gemini     {"functionCall": {"id", "name", "args": {…}}}
type wireCall struct {
	Type      string          `json:"type"`
	ID        string          `json:"id"`
	CallID    string          `json:"call_id"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
	Input     json.RawMessage `json:"input"`
	Function  *struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	} `json:"function"`
	FunctionCall *struct {
		ID   string          `json:"id"`
		Name string          `json:"name"`
		Args json.RawMessage `json:"args"`
	} `json:"functionCall"`
	Answers map[string]any `json:"answers"`
}

// geminiPartKeys are the keys of a Gemini part that is not a call.
var geminiPartKeys = []string{"text", "thought", "thoughtSignature", "inlineData", "fileData", "executableCode", "codeExecutionResult", "functionResponse"}

// ParseCalls reads the tool calls out of what a model wrote, and says in
// which format it found them. It takes a provider's whole response (an
// OpenAI chat completion or response object, an Anthropic message, a
// Gemini GenerateContent response), one assistant message or content
// object, or a JSON array of calls in any of the shapes; blocks that are
// not calls of client tools (text, reasoning, a provider's own server
// tools) are skipped. A response with several choices or candidates is an
// error: they are alternatives, and one must be chosen. The names are the
// model's: [Toolset.Resolve] maps them back to lathe's.
func ParseCalls(data []byte) ([]*tool.Call, Format, error) {
	list, format, err := callList(data)
	if err != nil {
		return nil, "", err
	}
	var calls []*tool.Call
	for i, raw := range list {
		if isText(raw) {
			continue
		}
		var w wireCall
		if err := json.Unmarshal(raw, &w); err != nil {
			return nil, "", fmt.Errorf("element %d: %w", i+1, err)
		}
		var f Format
		c := &tool.Call{ID: w.ID, Name: w.Name, Arguments: w.Arguments, Answers: w.Answers}
		switch {
		case w.FunctionCall != nil:
			f = Gemini
			c.ID, c.Name, c.Arguments = w.FunctionCall.ID, w.FunctionCall.Name, w.FunctionCall.Args
		case w.Type == "function_call":
			f = OpenAIResponses
			// What a response's function_call_output refers to.
			c.ID = w.CallID
		case w.Type == "tool_use":
			f = Anthropic
			c.Arguments = w.Input
		case w.Type == "function" || (w.Type == "" && w.Function != nil):
			f = OpenAI
			if w.Function != nil {
				c.Name, c.Arguments = w.Function.Name, w.Function.Arguments
			}
		case w.Type == "":
			f = Lathe
		default:
			continue // text, thinking, reasoning, a server tool's call …
		}
		if format == "" || format == Lathe {
			format = f
		}
		if c.Name == "" {
			return nil, "", fmt.Errorf("element %d: no tool name", i+1)
		}
		// A name is printed and logged: one with a newline or an escape
		// sequence could pass for other output. No provider allows one.
		if !anyWireName(c.Name) {
			return nil, "", fmt.Errorf("element %d: invalid tool name %q: no provider gives a tool such a name", i+1, c.Name)
		}
		args, err := unwrapArguments(c.Arguments)
		if err != nil {
			return nil, "", fmt.Errorf("element %d (%s): %w", i+1, c.Name, err)
		}
		c.Arguments = args
		calls = append(calls, c)
	}
	// An empty list is a batch with nothing to do, as a model's message
	// with no tool calls is: it is an empty list, not a failure.
	if calls == nil {
		calls = []*tool.Call{}
	}
	if format == "" {
		format = Lathe
	}
	return calls, format, nil
}

// anyWireName reports whether some provider takes name as a tool name.
func anyWireName(name string) bool {
	if len(name) > 128 {
		return false
	}
	for i := 0; i < len(name); i++ {
		if !nameByte(MCP, name[i], false) {
			return false
		}
	}
	return true
}

// isText reports whether raw is a Gemini part that is not a call.
func isText(raw json.RawMessage) bool {
	var obj map[string]json.RawMessage
	if json.Unmarshal(raw, &obj) != nil || obj == nil {
		return false
	}
	if _, ok := obj["functionCall"]; ok {
		return false
	}
	if _, ok := obj["name"]; ok {
		return false
	}
	if _, ok := obj["type"]; ok {
		return false
	}
	for _, k := range geminiPartKeys {
		if _, ok := obj[k]; ok {
			return true
		}
	}
	return false
}

// callList finds the list of blocks that may be calls in data, and the
// format its container says.
func callList(data []byte) ([]json.RawMessage, Format, error) {
	var list []json.RawMessage
	if err := json.Unmarshal(data, &list); err == nil {
		return list, "", nil
	} else if !bytes.HasPrefix(bytes.TrimSpace(data), []byte("{")) {
		return nil, "", fmt.Errorf("want a JSON array of tool calls, or a model's response or message: %w", err)
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(data, &obj); err != nil {
		return nil, "", fmt.Errorf("want a JSON array of tool calls, or a model's response or message: %w", err)
	}
	// A whole response holds the message under its one choice or
	// candidate.
	for _, key := range []string{"choices", "candidates"} {
		v, ok := obj[key]
		if !ok {
			continue
		}
		var alts []map[string]json.RawMessage
		if err := json.Unmarshal(v, &alts); err != nil {
			return nil, "", fmt.Errorf("%q: %w", key, err)
		}
		if len(alts) != 1 {
			return nil, "", fmt.Errorf("the response holds %d %s; lathe runs the calls of exactly one", len(alts), key)
		}
		inner, ok := alts[0]["message"] // OpenAI
		if key == "candidates" {
			inner, ok = alts[0]["content"] // Gemini
		}
		if !ok {
			return []json.RawMessage{}, formatOf(key), nil // no message: nothing to run
		}
		if err := json.Unmarshal(inner, &obj); err != nil {
			return nil, "", fmt.Errorf("%q: %w", key, err)
		}
	}
	for _, key := range []string{"calls", "tool_calls", "content", "output", "parts"} {
		v, ok := obj[key]
		if !ok {
			continue
		}
		if key == "content" && bytes.HasPrefix(bytes.TrimSpace(v), []byte("{")) {
			// A Gemini candidate's content object.
			var inner map[string]json.RawMessage
			if err := json.Unmarshal(v, &inner); err == nil && inner["parts"] != nil {
				v, key = inner["parts"], "parts"
			}
		}
		if string(bytes.TrimSpace(v)) == "null" {
			return []json.RawMessage{}, formatOf(key), nil
		}
		if key == "content" && bytes.HasPrefix(bytes.TrimSpace(v), []byte(`"`)) {
			return []json.RawMessage{}, formatOf(key), nil // a message of text only
		}
		if err := json.Unmarshal(v, &list); err != nil {
			return nil, "", fmt.Errorf("%q: want a JSON array of tool calls: %w", key, err)
		}
		return list, formatOf(key), nil
	}
	if _, ok := obj["role"]; ok {
		return []json.RawMessage{}, "", nil // a message without calls
	}
	return nil, "", errors.New(`want a JSON array of tool calls, or an object holding one under "calls", "tool_calls", "content", "output" or "parts", or a whole response`)
}

func formatOf(key string) Format {
	switch key {
	case "choices", "tool_calls":
		return OpenAI
	case "output":
		return OpenAIResponses
	case "content":
		return Anthropic
	case "candidates", "parts":
		return Gemini
	}
	return ""
}

// unwrapArguments returns the arguments object of a call. OpenAI sends the
// object as a string of JSON, which is unwrapped here; what it holds, valid
// or not, is the engine's to judge, so that a malformed call fails alone.
func unwrapArguments(raw json.RawMessage) (json.RawMessage, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return json.RawMessage(`{}`), nil
	}
	if raw[0] != '"' {
		return raw, nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, err
	}
	if strings.TrimSpace(s) == "" {
		return json.RawMessage(`{}`), nil
	}
	return json.RawMessage(s), nil
}

// Resolve maps calls a model made with the toolset back to lathe's calls,
// in place: the tool names to lathe's, Gemini's names of parameters to the
// schema's, and the nulls strict mode made the model send for optional
// properties it left out are dropped. A call of a tool the toolset does not
// hold keeps its name, for the engine to answer as unknown.
func (ts *Toolset) Resolve(calls []*tool.Call) {
	for _, c := range calls {
		e, ok := ts.byWire[c.Name]
		if !ok {
			continue
		}
		c.Name = e.name
		if len(e.renames) == 0 && e.nulls.empty() {
			continue
		}
		dec := json.NewDecoder(bytes.NewReader(c.Arguments))
		dec.UseNumber()
		var args map[string]any
		if dec.Decode(&args) != nil || args == nil {
			continue // not an object: the engine says what is wrong
		}
		for wire, name := range e.renames {
			if v, ok := args[wire]; ok {
				delete(args, wire)
				args[name] = v
			}
		}
		dropNulls(args, e.nulls)
		if b, err := json.Marshal(args); err == nil {
			c.Arguments = b
		}
	}
}

// dropNulls drops from v the nulls that t says strict mode put there.
func dropNulls(v any, t *nullTree) {
	if t.empty() {
		return
	}
	switch v := v.(type) {
	case map[string]any:
		for k := range t.strip {
			if val, ok := v[k]; ok && val == nil {
				delete(v, k)
			}
		}
		for k, sub := range t.props {
			if val, ok := v[k]; ok {
				dropNulls(val, sub)
			}
		}
	case []any:
		for _, item := range v {
			dropNulls(item, t.items)
		}
	}
}
