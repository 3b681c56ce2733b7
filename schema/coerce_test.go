package schema

import (
	"encoding/json"
	"reflect"
	"testing"
)

const coerceSchema = `{
	"type": "object",
	"properties": {
		"obj":    {"type": "object", "properties": {"n": {"type": "integer"}, "s": {"type": "string"}}},
		"arr":    {"type": "array", "items": {"type": "number"}},
		"num":    {"type": "number"},
		"int":    {"type": "integer"},
		"flag":   {"type": "boolean"},
		"nil":    {"type": "null"},
		"text":   {"type": "string"},
		"either": {"type": ["string", "integer"]},
		"maybe":  {"anyOf": [{"type": "integer"}, {"type": "null"}]},
		"choice": {"enum": [1, 2, 3]},
		"ref":    {"$ref": "#/$defs/point"},
		"opt":    {"anyOf": [{"type": "object", "properties": {"k": {"type": "boolean"}}}, {"type": "null"}]},
		"list":   {"type": "array", "items": {"type": "object", "properties": {"id": {"type": "integer"}}}},
		"tuple":  {"type": "array", "prefixItems": [{"type": "integer"}, {"type": "string"}], "items": {"type": "boolean"}},
		"dict":   {"type": "object", "additionalProperties": {"type": "integer"}},
		"open":   {},
		"names":  {"type": "array", "items": {"type": "string"}, "minItems": 1},
		"any":    {"type": "array"},
		"named":  {"anyOf": [{"type": "array", "items": {"type": "string"}}, {"type": "null"}]}
	},
	"$defs": {"point": {"type": "object", "properties": {"x": {"type": "number"}}}}
}`

func TestCoerce(t *testing.T) {
	s := MustCompile(json.RawMessage(coerceSchema))
	tests := []struct {
		name string
		in   string
		want string // "" means unchanged
	}{
		{"object in string", `{"obj":"{\"n\":1}"}`, `{"obj":{"n":1}}`},
		{"object in string, nested too", `{"obj":"{\"n\":\"2\",\"s\":\"3\"}"}`, `{"obj":{"n":2,"s":"3"}}`},
		{"array in string", `{"arr":"[1, 2.5]"}`, `{"arr":[1,2.5]}`},
		{"array items", `{"arr":[1,"2.5","-3e2"]}`, `{"arr":[1,2.5,-3e2]}`},
		{"number", `{"num":"2.5"}`, `{"num":2.5}`},
		{"integer", `{"int":"3"}`, `{"int":3}`},
		{"integer written as 3.0", `{"int":"3.0"}`, `{"int":3.0}`},
		{"integer with spaces", `{"int":" 3 "}`, `{"int":3}`},
		{"boolean", `{"flag":"true"}`, `{"flag":true}`},
		{"false", `{"flag":"false"}`, `{"flag":false}`},
		{"null", `{"nil":"null"}`, `{"nil":null}`},
		{"anyOf integer or null", `{"maybe":"7"}`, `{"maybe":7}`},
		{"anyOf null", `{"maybe":"null"}`, `{"maybe":null}`},
		{"enum of numbers", `{"choice":"2"}`, `{"choice":2}`},
		{"through $ref", `{"ref":{"x":"1.5"}}`, `{"ref":{"x":1.5}}`},
		{"single object alternative", `{"opt":{"k":"true"}}`, `{"opt":{"k":true}}`},
		{"single object alternative in string", `{"opt":"{\"k\":\"false\"}"}`, `{"opt":{"k":false}}`},
		{"array of objects", `{"list":[{"id":"1"},{"id":2},{"id":"3"}]}`, `{"list":[{"id":1},{"id":2},{"id":3}]}`},
		{"prefix items", `{"tuple":["1","2","true","false"]}`, `{"tuple":[1,"2",true,false]}`},
		{"additionalProperties", `{"dict":{"a":"1","b":2}}`, `{"dict":{"a":1,"b":2}}`},
		{"several", `{"int":"1","flag":"true","text":"true"}`, `{"int":1,"flag":true,"text":"true"}`},
		{"one string where a list of strings", `{"names":"read_file"}`, `{"names":["read_file"]}`},
		{"one string where a list of anything", `{"any":"x"}`, `{"any":["x"]}`},
		{"one string where a list of strings or null", `{"named":"a*"}`, `{"named":["a*"]}`},
		{"one number where a list of numbers", `{"arr":"2.5"}`, `{"arr":[2.5]}`},
		{"one object where a list of objects", `{"list":"{\"id\":\"4\"}"}`, `{"list":[{"id":4}]}`},
		{"a list of strings in a string", `{"names":"[\"a\",\"b\"]"}`, `{"names":["a","b"]}`},

		{"string allowed", `{"text":"42"}`, ""},
		{"string among types", `{"either":"42"}`, ""},
		{"not JSON", `{"int":"three"}`, ""},
		{"looks like a number but is not", `{"int":"3x"}`, ""},
		{"malformed object", `{"obj":"{\"n\":}"}`, ""},
		{"fraction where integer", `{"int":"2.5"}`, ""},
		{"object where number", `{"num":"{}"}`, ""},
		{"number where boolean", `{"flag":"1"}`, ""},
		{"quoted string", `{"int":"\"3\""}`, ""},
		{"null where integer", `{"int":"null"}`, ""},
		{"unconstrained", `{"open":"1"}`, ""},
		{"unknown property", `{"other":"1"}`, ""},
		{"already typed", `{"int":1,"obj":{"n":2},"arr":[3]}`, ""},
		{"empty string", `{"int":""}`, ""},
		{"top level not an object", `"1"`, ""},
		{"broken list is not one item", `{"names":"[\"a\","}`, ""},
		{"text where a list of numbers", `{"arr":"many"}`, ""},
		{"text where a tuple starts with an integer", `{"tuple":"x"}`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := mustDecode(t, tt.in)
			got, changed := s.Coerce(v)
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
			if again, changed := s.Coerce(got); changed || !reflect.DeepEqual(again, got) {
				t.Errorf("second Coerce changed the value")
			}
		})
	}
}

func TestCoerceTopLevelString(t *testing.T) {
	// Some models send the whole argument object as a JSON string.
	s := MustCompile(json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer"}}}`))
	got, changed := s.Coerce(mustDecode(t, `"{\"n\":\"1\"}"`))
	if !changed || !reflect.DeepEqual(got, mustDecode(t, `{"n":1}`)) {
		t.Errorf("got %v, %v", got, changed)
	}
}

func TestCoerceRecursiveSchema(t *testing.T) {
	s := MustCompile(json.RawMessage(`{
		"$ref": "#/$defs/tree",
		"$defs": {"tree": {"type": "object", "properties": {
			"v": {"type": "integer"},
			"kids": {"type": "array", "items": {"$ref": "#/$defs/tree"}}
		}}}
	}`))
	got, changed := s.Coerce(mustDecode(t, `{"v":"1","kids":[{"v":"2","kids":"[{\"v\":\"3\"}]"}]}`))
	want := mustDecode(t, `{"v":1,"kids":[{"v":2,"kids":[{"v":3}]}]}`)
	if !changed || !reflect.DeepEqual(got, want) {
		b, _ := json.Marshal(got)
		t.Errorf("got %s", b)
	}
}

func TestCoerceIgnoresAmbiguousPlaces(t *testing.T) {
	tests := []struct{ name, schema, in string }{
		// Two alternatives take objects; which one applies is unknown.
		{"two object alternatives", `{"properties":{"a":{"anyOf":[
			{"type":"object","properties":{"n":{"type":"integer"}}},
			{"type":"object","properties":{"n":{"type":"string"}}}]}}}`, `{"a":{"n":"1"}}`},
		// The pattern decides for some names; additionalProperties is not trusted.
		{"patternProperties", `{"patternProperties":{"^x":{"type":"string"}},"additionalProperties":{"type":"integer"}}`, `{"x1":"5"}`},
		// Before 2019-09, keywords beside $ref are ignored; here "type" must not count.
		{"draft 7 ref siblings", `{"$schema":"http://json-schema.org/draft-07/schema#","properties":{"a":{"$ref":"#/definitions/s","type":"integer"}},"definitions":{"s":{"type":["string","integer"]}}}`, `{"a":"5"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := MustCompile(json.RawMessage(tt.schema))
			if _, changed := s.Coerce(mustDecode(t, tt.in)); changed {
				t.Error("Coerce changed a value in an ambiguous place")
			}
		})
	}
}

func TestCoerceNoopDoesNotAllocate(t *testing.T) {
	s := MustCompile(json.RawMessage(coerceSchema))
	v := mustDecode(t, `{"obj":{"n":1,"s":"x"},"arr":[1,2],"num":1,"int":2,"flag":true,"text":"t","list":[{"id":1}],"dict":{"a":1}}`)
	if n := testing.AllocsPerRun(100, func() { s.Coerce(v) }); n != 0 {
		t.Errorf("Coerce with nothing to do: %v allocations", n)
	}
}
