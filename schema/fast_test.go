package schema

import (
	"encoding/json"
	"testing"
)

// The quick checker must agree with the validator wherever it gives an
// answer, and give one for the common cases.
func TestCheckAgreesWithValidator(t *testing.T) {
	tests := []struct {
		schema string
		args   []string
	}{
		{fileSchema, []string{
			`{"path":"a","count":3,"mode":"text","tags":["x"],"opts":{"depth":1,"a/b~c":true},"ranges":[{"from":1,"to":4}],"id":7}`,
			`{"path":"a","count":1}`, `{"path":"a","count":10}`, `{"path":"a","count":0}`, `{"path":"a","count":11}`,
			`{"path":"a","count":1.0}`, `{"path":"a","count":1e0}`, `{"path":"a","count":2.5}`,
			`{"path":"","count":1}`, `{"path":"a"}`, `{"path":"a","count":1,"x":1}`,
			`{"path":"a","count":1,"ranges":[{"from":1,"to":3}]}`, `{"path":"a","count":1,"id":"x"}`, `{"path":"a","count":1,"id":1.5}`,
		}},
		{`{"properties":{"n":{"type":"number","exclusiveMinimum":0,"exclusiveMaximum":1}}}`, []string{
			`{"n":0}`, `{"n":1}`, `{"n":0.5}`, `{"n":1e-400}`, `{"n":-0}`, `{"n":0.99999999999999999999}`,
		}},
		{`{"properties":{"n":{"type":"integer","maximum":9007199254740992}}}`, []string{
			`{"n":9007199254740992}`, `{"n":9007199254740993}`, `{"n":9007199254740991}`,
		}},
		{`{"properties":{"n":{"multipleOf":3},"m":{"multipleOf":0.5}}}`, []string{
			`{"n":9}`, `{"n":10}`, `{"n":9.0}`, `{"m":1.5}`, `{"m":1.25}`,
		}},
		{`{"properties":{"e":{"enum":[1,"a",null,[1,{"b":true}]]},"c":{"const":{"x":[1.0]}}}}`, []string{
			`{"e":1}`, `{"e":1.0}`, `{"e":2}`, `{"e":"a"}`, `{"e":null}`, `{"e":[1,{"b":true}]}`, `{"e":[1,{"b":false}]}`,
			`{"c":{"x":[1]}}`, `{"c":{"x":[2]}}`, `{"c":{"x":[1],"y":1}}`,
		}},
		{`{"oneOf":[{"required":["a"]},{"required":["b"]}],"not":{"required":["c"]},"if":{"required":["d"]},"then":{"required":["e"]},"else":{"required":["f"]}}`, []string{
			`{"a":1,"f":1}`, `{"a":1,"b":1,"f":1}`, `{"f":1}`, `{"a":1,"c":1,"f":1}`, `{"a":1,"d":1,"e":1}`, `{"a":1,"d":1}`,
		}},
		{`{"patternProperties":{"^x":{"type":"integer"}},"additionalProperties":false,"propertyNames":{"maxLength":3},"dependentRequired":{"xa":["xb"]},"minProperties":1,"maxProperties":3}`, []string{
			`{"x1":1}`, `{"x1":"s"}`, `{"y":1}`, `{"xlong":1}`, `{"xa":1}`, `{"xa":1,"xb":2}`, `{}`, `{"x1":1,"x2":2,"x3":3,"x4":4}`,
		}},
		{`{"properties":{"t":{"type":"array","prefixItems":[{"type":"string"}],"items":false,"minItems":1},"u":{"type":"array","uniqueItems":true},"s":{"type":"string","pattern":"^[a-z]+$","minLength":2,"maxLength":3}}}`, []string{
			`{"t":["a"]}`, `{"t":["a",1]}`, `{"t":[]}`, `{"t":[1]}`, `{"u":[1,2]}`, `{"u":[1,1]}`, `{"s":"ab"}`, `{"s":"A"}`, `{"s":"héé"}`, `{"s":"abcd"}`,
		}},
		{`{"$schema":"http://json-schema.org/draft-07/schema#","properties":{"d":{"type":"string","format":"date"},"i":{"items":[{"type":"integer"}],"additionalItems":false}}}`, []string{
			`{"d":"2024-01-31"}`, `{"d":"yesterday"}`, `{"i":[1]}`, `{"i":[1,2]}`,
		}},
	}
	answered := 0
	for _, tt := range tests {
		s := MustCompile(json.RawMessage(tt.schema))
		if s.check == nil {
			t.Fatalf("no checker for %s", tt.schema)
		}
		for _, in := range tt.args {
			v := mustDecode(t, in)
			got := s.check.eval(v)
			want := s.compiled.Validate(v) == nil
			if got != unsure {
				answered++
				if (got == valid) != want {
					t.Errorf("schema %s\nargs %s: checker says %v, validator says valid=%v", tt.schema, in, got, want)
				}
			}
		}
	}
	if answered == 0 {
		t.Error("the checker never answered")
	}
}

func TestCheckAnswersCommonCases(t *testing.T) {
	s := MustCompile(json.RawMessage(fileSchema))
	for _, in := range []string{
		`{"path":"a","count":1}`, // at the minimum, exactly
		`{"path":"a","count":10,"mode":"binary","tags":["a","b"],"ranges":[{"from":1,"to":2}],"id":"x"}`,
	} {
		if got := s.check.eval(mustDecode(t, in)); got != valid {
			t.Errorf("%s: checker says %v, want valid", in, got)
		}
	}
	v := mustDecode(t, `{"path":"a","count":1,"tags":["x"],"opts":{"depth":1}}`)
	if n := testing.AllocsPerRun(100, func() { _ = s.Validate(v) }); n != 0 {
		t.Errorf("Validate of valid arguments: %v allocations", n)
	}
}

func TestInPlaceCycleDisablesChecker(t *testing.T) {
	s := MustCompile(json.RawMessage(`{"properties":{"a":{"$ref":"#/$defs/loop"}},"$defs":{"loop":{"allOf":[{"$ref":"#/$defs/loop"}]}}}`))
	if s.check != nil {
		t.Fatal("checker built for a schema that applies itself to the same value")
	}
	if err := s.Validate(mustDecode(t, `{"a":1}`)); err == nil {
		t.Error("validated through a reference cycle")
	}
	// Recursion through properties is fine.
	s = MustCompile(json.RawMessage(`{"properties":{"next":{"$ref":"#"}}}`))
	if s.check == nil {
		t.Fatal("no checker for a recursive schema")
	}
	if got := s.check.eval(mustDecode(t, `{"next":{"next":{}}}`)); got != valid {
		t.Errorf("checker says %v", got)
	}
}

// FuzzValidate holds the quick checker to the validator on fuzzed schemas
// and arguments.
func FuzzValidate(f *testing.F) {
	for _, s := range []struct{ schema, args string }{
		{fileSchema, `{"path":"a","count":3,"tags":["x"],"opts":{"depth":1},"ranges":[{"from":1,"to":4}],"id":7}`},
		{`{"properties":{"n":{"type":"integer","minimum":1.5,"exclusiveMaximum":1e3,"multipleOf":2}}}`, `{"n":2}`},
		{`{"properties":{"e":{"enum":[1,"a",null,[1,{"b":true}]]}}}`, `{"e":1.0}`},
		{`{"oneOf":[{"required":["a"]},{"required":["b"]}],"not":{"required":["c"]},"if":{"required":["d"]},"then":{"required":["e"]}}`, `{"a":1,"d":1,"e":1}`},
		{`{"patternProperties":{"^x":{"type":"integer"}},"additionalProperties":false,"propertyNames":{"maxLength":3}}`, `{"x1":1}`},
		{`{"$schema":"http://json-schema.org/draft-07/schema#","properties":{"d":{"format":"date"},"i":{"items":[{"type":"integer"}],"additionalItems":false}}}`, `{"d":"2024-01-31","i":[1]}`},
		{`{"$schema":"http://json-schema.org/draft-04/schema#","properties":{"n":{"maximum":3,"exclusiveMaximum":true}}}`, `{"n":3}`},
		{`{"properties":{"c":{"const":0.1},"a":{"anyOf":[{"type":"string"},{"minimum":5}]}}}`, `{"c":1e-1,"a":5}`},
		{`{"dependentSchemas":{"a":{"required":["b"]}},"dependencies":{"c":["d"]}}`, `{"a":1,"b":2}`},
	} {
		f.Add(s.schema, s.args)
	}
	f.Fuzz(func(t *testing.T, rawSchema, rawArgs string) {
		s, err := Compile(json.RawMessage(rawSchema))
		if err != nil || s.check == nil {
			return
		}
		v, err := Decode(json.RawMessage(rawArgs))
		if err != nil {
			return
		}
		got := s.check.eval(v)
		want := s.compiled.Validate(v) == nil
		if got != unsure && (got == valid) != want {
			t.Fatalf("schema %s\nargs %s: checker says %v, validator says valid=%v", rawSchema, rawArgs, got, want)
		}
	})
}

func (v verdict) String() string {
	return [...]string{unsure: "unsure", valid: "valid", invalid: "invalid"}[v]
}
