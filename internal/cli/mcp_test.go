package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"testing"

	"github.com/lathe-tools/lathe/tool"
)

// TestElicitOnTerminal answers an elicitation field by field, as a person
// at the terminal would.
func TestElicitOnTerminal(t *testing.T) {
	q := &tool.ElicitRequest{Message: "Tell me about you", Schema: json.RawMessage(`{
		"type": "object",
		"properties": {
			"name": {"type": "string", "title": "Name"},
			"age": {"type": "integer"},
			"agree": {"type": "boolean"},
			"color": {"type": "string", "default": "blue"},
			"extra": {"type": "string"}
		},
		"required": ["name"]
	}`)}
	answers := func(lines ...string) func(string) (string, error) {
		return func(string) (string, error) {
			if len(lines) == 0 {
				return "", errors.New("EOF")
			}
			l := lines[0]
			lines = lines[1:]
			return l, nil
		}
	}
	var out bytes.Buffer
	// Required fields first, then by name: name, age, agree, color, extra.
	// A bad number is asked again; an empty answer takes the default or
	// leaves the field out.
	r, err := elicitOnTerminal(&out, answers("yes", "", "Ada", "x", "42", "y", "", ""), q)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"age": int64(42), "agree": true, "color": "blue", "name": "Ada"}
	if r.Action != tool.ElicitAccept || !reflect.DeepEqual(r.Content, want) {
		t.Errorf("got %s %#v", r.Action, r.Content)
	}
	if r, _ := elicitOnTerminal(&out, answers("no"), q); r.Action != tool.ElicitDecline {
		t.Errorf("no: %s", r.Action)
	}
	if r, _ := elicitOnTerminal(&out, answers("yes"), q); r.Action != tool.ElicitCancel {
		t.Errorf("end of input: %s", r.Action)
	}
}
