package schema

import (
	"encoding/json"
	"reflect"
	"testing"
)

const defaultsSchema = `{
	"type": "object",
	"properties": {
		"limit":  {"type": "integer", "default": 100},
		"mode":   {"type": "string", "default": "text"},
		"tags":   {"type": "array", "default": ["a"]},
		"opts":   {
			"type": "object",
			"default": {},
			"properties": {
				"depth":  {"type": "integer", "default": 2},
				"follow": {"type": "boolean", "default": false}
			}
		},
		"filters": {
			"type": "array",
			"items": {"type": "object", "properties": {"op": {"default": "eq"}, "v": {}}}
		},
		"named": {"$ref": "#/$defs/named"},
		"plain": {"type": "string"}
	},
	"$defs": {"named": {"type": "object", "properties": {"n": {"default": 1}}}}
}`

func TestApplyDefaults(t *testing.T) {
	s := MustCompile(json.RawMessage(defaultsSchema))
	all := `{"limit":100,"mode":"text","tags":["a"],"opts":{"depth":2,"follow":false}}`
	tests := []struct {
		name string
		in   string
		want string // "" means unchanged
	}{
		{"empty", `{}`, all},
		{"nested default filled inside an inserted default", ``, all},
		{"present kept", `{"limit":5,"mode":"bin","tags":[],"opts":{"depth":0,"follow":true}}`, ""},
		{"null is present", `{"limit":null,"mode":null,"tags":null,"opts":null}`, ""},
		{"nested object", `{"limit":1,"mode":"m","tags":[],"opts":{"follow":true}}`, `{"limit":1,"mode":"m","tags":[],"opts":{"depth":2,"follow":true}}`},
		{"array items", `{"limit":1,"mode":"m","tags":[],"opts":{"depth":1,"follow":true},"filters":[{"v":1},{"op":"ne","v":2}]}`,
			`{"limit":1,"mode":"m","tags":[],"opts":{"depth":1,"follow":true},"filters":[{"op":"eq","v":1},{"op":"ne","v":2}]}`},
		{"through $ref", `{"limit":1,"mode":"m","tags":[],"opts":{"depth":1,"follow":true},"named":{}}`,
			`{"limit":1,"mode":"m","tags":[],"opts":{"depth":1,"follow":true},"named":{"n":1}}`},
		{"not an object", `[1]`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, changed := s.ApplyDefaults(mustDecode(t, tt.in))
			want := tt.want
			if want == "" {
				want = tt.in
			}
			if changed != (tt.want != "") {
				t.Errorf("changed = %v, want %v", changed, tt.want != "")
			}
			if !reflect.DeepEqual(got, mustDecode(t, want)) {
				b, _ := json.Marshal(got)
				t.Errorf("got %s, want %s", b, want)
			}
		})
	}
}

func TestApplyDefaultsDoesNotShareDefaults(t *testing.T) {
	s := MustCompile(json.RawMessage(defaultsSchema))
	first, _ := s.ApplyDefaults(mustDecode(t, `{}`))
	m := first.(map[string]any)
	m["tags"] = append(m["tags"].([]any), "mutated")
	m["tags"].([]any)[0] = "changed"
	m["opts"].(map[string]any)["depth"] = json.Number("99")

	second, _ := s.ApplyDefaults(mustDecode(t, `{}`))
	want := mustDecode(t, `{"limit":100,"mode":"text","tags":["a"],"opts":{"depth":2,"follow":false}}`)
	if !reflect.DeepEqual(second, want) {
		b, _ := json.Marshal(second)
		t.Errorf("second call got %s: the first call's changes reached the schema", b)
	}
}

func TestApplyDefaultsNoDefaultsIsCheap(t *testing.T) {
	s := MustCompile(json.RawMessage(fileSchema))
	v := mustDecode(t, `{"path":"a","count":1,"opts":{"depth":1}}`)
	if s.root.fill {
		t.Fatal("schema without defaults marked as having some")
	}
	if n := testing.AllocsPerRun(100, func() { s.ApplyDefaults(v) }); n != 0 {
		t.Errorf("%v allocations", n)
	}
}
