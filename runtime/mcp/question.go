package mcp

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/lathe-tools/lathe/tool"
)

// An upstream server's elicitation that no hook can answer during the call
// (the caller offers no Elicit hook, and the pool has none) becomes the
// call's [tool.Question], as a process tool's question does: the call ends
// with it, and the caller calls again with the answer in [tool.Call].Answers.
// The upstream tool then runs again from the start, and its elicitation is
// answered from those answers. Each property of the elicitation's schema is
// one question, keyed by the property's name, asked in the schema's order
// until every one is answered.

// acceptAnswer is the ID of the question asked for an elicitation whose
// schema has no properties: whether to go on at all.
const acceptAnswer = "accept"

// elicitProp is one property of an elicitation's requested schema: a flat
// object of primitive properties, as MCP allows.
type elicitProp struct {
	name string
	Type string `json:"type"`
	// Title and Description label the property for a person.
	Title       string `json:"title"`
	Description string `json:"description"`
	Enum        []any  `json:"enum"`
	// OneOf holds the choices of a titled enumeration: {"const": …, "title": …}.
	OneOf []struct {
		Const any `json:"const"`
	} `json:"oneOf"`
	Default any `json:"default"`
}

// elicitProps reads the properties of an elicitation's schema, in the
// order the server wrote them.
func elicitProps(schema json.RawMessage) ([]elicitProp, error) {
	if len(bytes.TrimSpace(schema)) == 0 {
		return nil, nil
	}
	var s struct {
		Properties json.RawMessage `json:"properties"`
	}
	if err := json.Unmarshal(schema, &s); err != nil {
		return nil, fmt.Errorf("requested schema: %v", err)
	}
	if len(s.Properties) == 0 || string(s.Properties) == "null" {
		return nil, nil
	}
	d := json.NewDecoder(bytes.NewReader(s.Properties))
	if t, err := d.Token(); err != nil || t != json.Delim('{') {
		return nil, errors.New("requested schema: properties is not an object")
	}
	var props []elicitProp
	for d.More() {
		t, err := d.Token()
		if err != nil {
			return nil, fmt.Errorf("requested schema: %v", err)
		}
		p := elicitProp{name: t.(string)}
		if err := d.Decode(&p); err != nil {
			return nil, fmt.Errorf("requested schema: property %q: %v", p.name, err)
		}
		props = append(props, p)
	}
	return props, nil
}

// elicitFromAnswers answers an elicitation from a call's answers: the
// result to send the server when the answers cover every property, else
// the question to ask next.
func elicitFromAnswers(r *tool.ElicitRequest, answers map[string]any) (*tool.ElicitResult, *tool.Question, error) {
	if r.Mode == "url" {
		return nil, nil, errors.New("the server asks the person to open a URL, which a question cannot carry")
	}
	props, err := elicitProps(r.Schema)
	if err != nil {
		return nil, nil, err
	}
	if len(props) == 0 {
		a, ok := answers[acceptAnswer]
		if !ok {
			return nil, &tool.Question{ID: acceptAnswer, Text: r.Message, Kind: tool.QuestionBoolean}, nil
		}
		if yes, err := boolAnswer(a); err != nil {
			return nil, nil, fmt.Errorf("answer %q: %v", acceptAnswer, err)
		} else if !yes {
			return &tool.ElicitResult{Action: tool.ElicitDecline}, nil, nil
		}
		return &tool.ElicitResult{Action: tool.ElicitAccept, Content: map[string]any{}}, nil, nil
	}
	// Every property must be one a question can ask, before the first is
	// asked: a person should not answer three questions to learn that the
	// fourth cannot be asked.
	questions := make([]*tool.Question, len(props))
	for i, p := range props {
		if questions[i], err = p.question(r.Message, len(props)); err != nil {
			return nil, nil, err
		}
	}
	content := map[string]any{}
	for i, p := range props {
		a, ok := answers[p.name]
		if !ok {
			return nil, questions[i], nil
		}
		v, err := p.value(a)
		if err != nil {
			return nil, nil, fmt.Errorf("answer %q: %v", p.name, err)
		}
		content[p.name] = v
	}
	return &tool.ElicitResult{Action: tool.ElicitAccept, Content: content}, nil, nil
}

// question asks for p; message is the elicitation's, which one property
// needs no label after.
func (p *elicitProp) question(message string, of int) (*tool.Question, error) {
	q := &tool.Question{ID: p.name, Text: message, Default: p.Default}
	if of > 1 {
		label := p.Title
		if label == "" {
			label = p.Description
		}
		if label == "" {
			label = p.name
		}
		q.Text = message + "\n" + label
	}
	choices := p.Enum
	for _, o := range p.OneOf {
		choices = append(choices, o.Const)
	}
	switch {
	case p.Type == "boolean":
		q.Kind = tool.QuestionBoolean
	case len(choices) > 0:
		q.Kind = tool.QuestionSelect
		for _, c := range choices {
			s, ok := c.(string)
			if !ok {
				return nil, fmt.Errorf("property %q: a choice %v is not a string", p.name, c)
			}
			q.Options = append(q.Options, s)
		}
	case p.Type == "string" || p.Type == "number" || p.Type == "integer":
		q.Kind = tool.QuestionText
	default:
		return nil, fmt.Errorf("property %q of type %q cannot be asked as a question", p.name, p.Type)
	}
	return q, nil
}

// value is an answer as the property's type wants it: a person's answer
// to a text question is a string, which a number property takes as a
// number.
func (p *elicitProp) value(a any) (any, error) {
	switch p.Type {
	case "boolean":
		return boolAnswer(a)
	case "number", "integer":
		if s, ok := a.(string); ok {
			n := json.Number(s)
			if _, err := n.Float64(); err != nil {
				return nil, fmt.Errorf("%q is not a number", s)
			}
			if p.Type == "integer" {
				if _, err := n.Int64(); err != nil {
					return nil, fmt.Errorf("%q is not an integer", s)
				}
			}
			return n, nil
		}
	}
	return a, nil
}

func boolAnswer(a any) (bool, error) {
	switch v := a.(type) {
	case bool:
		return v, nil
	case string:
		if b, err := strconv.ParseBool(v); err == nil {
			return b, nil
		}
	}
	return false, fmt.Errorf("%v is not yes or no", a)
}
