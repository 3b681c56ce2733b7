package mcp

import (
	"encoding/json"
	"testing"
)

// TestUntypeTitledItems: only the type of a titled multiple choice's items
// goes; every other schema is left as the server sent it.
func TestUntypeTitledItems(t *testing.T) {
	for _, c := range []struct {
		name, in, want string // want "" means left alone
	}{
		{"titled multiple choice with a type", `{"type":"object","properties":{"m":{"type":"array","items":{"type":"string","anyOf":[{"const":"a","title":"A"},{"const":"b","title":"B"}]}}}}`,
			`{"properties":{"m":{"items":{"anyOf":[{"const":"a","title":"A"},{"const":"b","title":"B"}]},"type":"array"}},"type":"object"}`},
		{"titled multiple choice as MCP gives it", `{"type":"object","properties":{"m":{"type":"array","items":{"anyOf":[{"const":"a","title":"A"}]}}}}`, ""},
		{"untitled multiple choice", `{"type":"object","properties":{"m":{"type":"array","items":{"type":"string","enum":["a","b"]}}}}`, ""},
		{"anyOf that is not of consts", `{"type":"object","properties":{"m":{"type":"array","items":{"type":"string","anyOf":[{"minLength":2}]}}}}`, ""},
		{"a const that is not a string", `{"type":"object","properties":{"m":{"type":"array","items":{"type":"string","anyOf":[{"const":1,"title":"One"}]}}}}`, ""},
		{"titled single choice", `{"type":"object","properties":{"s":{"type":"string","oneOf":[{"const":"a","title":"A"}]}}}`, ""},
		{"not an object", `[1,2]`, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, changed := untypeTitledItems(json.RawMessage(c.in))
			switch {
			case c.want == "" && changed:
				t.Errorf("changed to %s, want it left alone", got)
			case c.want != "" && !changed:
				t.Errorf("left alone, want %s", c.want)
			case c.want != "" && string(got) != c.want:
				t.Errorf("got %s, want %s", got, c.want)
			}
		})
	}
}
