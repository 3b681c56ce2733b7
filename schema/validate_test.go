package schema

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"
)

func mustDecode(t testing.TB, s string) any {
	t.Helper()
	v, err := Decode(json.RawMessage(s))
	if err != nil {
		t.Fatalf("Decode(%s): %v", s, err)
	}
	return v
}

const fileSchema = `{
	"type": "object",
	"required": ["path", "count"],
	"additionalProperties": false,
	"properties": {
		"path":  {"type": "string", "minLength": 1},
		"count": {"type": "integer", "minimum": 1, "maximum": 10},
		"mode":  {"enum": ["text", "binary"]},
		"tags":  {"type": "array", "items": {"type": "string"}, "maxItems": 2},
		"opts":  {
			"type": "object",
			"required": ["depth"],
			"properties": {
				"depth": {"type": "integer", "exclusiveMinimum": 0},
				"a/b~c": {"type": "boolean"}
			}
		},
		"ranges": {
			"type": "array",
			"items": {
				"type": "object",
				"required": ["from"],
				"properties": {"from": {"type": "integer"}, "to": {"$ref": "#/$defs/line"}}
			}
		},
		"id": {"anyOf": [{"type": "string"}, {"type": "integer"}]}
	},
	"$defs": {"line": {"type": "integer", "multipleOf": 2}}
}`

func TestValidate(t *testing.T) {
	s := MustCompile(json.RawMessage(fileSchema))
	tests := []struct {
		name string
		in   string
		want []Violation
	}{
		{"valid", `{"path":"a","count":3,"mode":"text","tags":["x"],"opts":{"depth":1,"a/b~c":true},"ranges":[{"from":1,"to":4}],"id":7}`, nil},
		{"empty means root required", ``, []Violation{
			{"", `missing required property "count"`},
			{"", `missing required property "path"`},
		}},
		{"several at once", `{"path":"","count":0,"mode":"rot13"}`, []Violation{
			{"/count", "must be >= 1 but found 0"},
			{"/mode", `must be one of "text", "binary" but found "rot13"`},
			{"/path", "must be at least 1 character long but has 0"},
		}},
		{"type and maximum", `{"path":7,"count":11}`, []Violation{
			{"/count", "must be <= 10 but found 11"},
			{"/path", "must be string but found number"},
		}},
		{"integer wanted", `{"path":"a","count":2.5}`, []Violation{
			{"/count", "must be integer but found number"},
		}},
		{"nested object", `{"path":"a","count":1,"opts":{"depth":0,"a/b~c":"yes"}}`, []Violation{
			{"/opts/a~1b~0c", "must be boolean but found string"},
			{"/opts/depth", "must be > 0 but found 0"},
		}},
		{"nested required names the property", `{"path":"a","count":1,"opts":{}}`, []Violation{
			{"/opts", `missing required property "depth"`},
		}},
		{"array indexes", `{"path":"a","count":1,"tags":["x",2,true]}`, []Violation{
			{"/tags", "must have at most 2 items but has 3"},
			{"/tags/1", "must be string but found number"},
			{"/tags/2", "must be string but found boolean"},
		}},
		{"array of objects and ref", `{"path":"a","count":1,"ranges":[{"from":1,"to":3},{"to":"x"}]}`, []Violation{
			{"/ranges/0/to", "must be a multiple of 2 but found 3"},
			{"/ranges/1", `missing required property "from"`},
			{"/ranges/1/to", "must be integer but found string"},
		}},
		{"unknown properties", `{"path":"a","count":1,"cnt":1,"x/y":2}`, []Violation{
			{"/cnt", `unknown property "cnt"; allowed: count, id, mode, opts, path, ranges, tags`},
			{"/x~1y", `unknown property "x/y"; allowed: count, id, mode, opts, path, ranges, tags`},
		}},
		{"anyOf types merged", `{"path":"a","count":1,"id":true}`, []Violation{
			{"/id", "must be string or integer but found boolean"},
		}},
		{"not an object", `[1]`, []Violation{
			{"", "must be object but found array"},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := s.Validate(mustDecode(t, tt.in))
			if tt.want == nil {
				if err != nil {
					t.Fatalf("Validate: %v, want nil", err)
				}
				return
			}
			var ve *ValidationError
			if !errors.As(err, &ve) {
				t.Fatalf("Validate: %v (%T), want *ValidationError", err, err)
			}
			if !reflect.DeepEqual(ve.Violations, tt.want) {
				t.Errorf("violations\n got: %q\nwant: %q", ve.Violations, tt.want)
			}
		})
	}
}

func TestViolationOrder(t *testing.T) {
	s := MustCompile(json.RawMessage(`{"properties":{"a":{"type":"array","items":{"type":"integer"}}}}`))
	var ve *ValidationError
	if !errors.As(s.Validate(mustDecode(t, `{"a":[0,1,"2",3,4,5,6,7,8,9,"10"]}`)), &ve) {
		t.Fatal("want a *ValidationError")
	}
	var got []string
	for _, v := range ve.Violations {
		got = append(got, v.Pointer)
	}
	if want := []string{"/a/2", "/a/10"}; !reflect.DeepEqual(got, want) {
		t.Errorf("pointers %q, want %q (numeric order)", got, want)
	}
}

func TestValidationErrorString(t *testing.T) {
	tests := []struct {
		vs   []Violation
		want string
	}{
		{[]Violation{{"/count", "must be >= 1 but found 0"}}, "1 problem: /count: must be >= 1 but found 0"},
		{[]Violation{{"", `missing required property "path"`}, {"/count", "must be >= 1 but found 0"}},
			`2 problems: (root): missing required property "path"; /count: must be >= 1 but found 0`},
	}
	for _, tt := range tests {
		got := (&ValidationError{Violations: tt.vs}).Error()
		if got != tt.want {
			t.Errorf("Error() = %q, want %q", got, tt.want)
		}
		if strings.Contains(got, "\n") {
			t.Errorf("Error() spans lines: %q", got)
		}
	}
}

func TestDuplicateViolationsCollapse(t *testing.T) {
	// Both allOf parts report the same violation at the same place.
	s := MustCompile(json.RawMessage(`{"allOf":[{"required":["a"]},{"required":["a"]}]}`))
	var ve *ValidationError
	if !errors.As(s.Validate(mustDecode(t, `{}`)), &ve) {
		t.Fatal("want a *ValidationError")
	}
	if want := []Violation{{"", `missing required property "a"`}}; !reflect.DeepEqual(ve.Violations, want) {
		t.Errorf("got %q, want %q", ve.Violations, want)
	}
}

func TestValidateLargeIntegerExact(t *testing.T) {
	// 2^63 and one more: a float64 could not tell them apart, json.Number can.
	s := MustCompile(json.RawMessage(`{"properties":{"n":{"type":"integer","maximum":9223372036854775808}}}`))
	if err := s.Validate(mustDecode(t, `{"n":9223372036854775808}`)); err != nil {
		t.Errorf("at the maximum: %v", err)
	}
	if err := s.Validate(mustDecode(t, `{"n":9223372036854775809}`)); err == nil {
		t.Error("one past the maximum validated")
	}
}

func TestCompile(t *testing.T) {
	tests := []struct {
		name    string
		raw     string
		wantErr string // "" means success
	}{
		{"empty", ``, ""},
		{"spaces", "  \n", ""},
		{"object", `{"type":"object"}`, ""},
		{"no type", `{"properties":{"a":{"type":"string"}}}`, ""},
		{"type list with object", `{"type":["object","null"]}`, ""},
		{"draft 7", `{"$schema":"http://json-schema.org/draft-07/schema#","properties":{"a":{"type":"string"}}}`, ""},
		{"malformed", `{"type":`, "byte offset 8"},
		{"not an object", `true`, "must be a JSON object, not a boolean"},
		{"array", `[]`, "must be a JSON object, not an array"},
		{"string top level", `{"type":"string"}`, `top-level type must be "object"`},
		{"array top level", `{"type":["array"]}`, `top-level type must be "object"`},
		{"bad keyword value", `{"properties":{"n":{"type":"integer","minimum":"1"}}}`, "/properties/n/minimum: must be number but found string"},
		{"unknown type", `{"properties":{"n":{"type":"int"}}}`, "/properties/n/type"},
		{"dangling ref", `{"properties":{"n":{"$ref":"#/$defs/missing"}}}`, `reference "#/$defs/missing" points to nothing`},
		{"remote ref", `{"properties":{"n":{"$ref":"https://example.com/s.json"}}}`, `reference "https://example.com/s.json" is outside the schema`},
		{"file ref", `{"properties":{"n":{"$ref":"file:///etc/passwd"}}}`, "is outside the schema"},
		{"bad regex", `{"properties":{"n":{"type":"string","pattern":"("}}}`, "/properties/n/pattern: must be a valid regex"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := Compile(json.RawMessage(tt.raw))
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("Compile: %v", err)
				}
				if !json.Valid(s.Raw()) {
					t.Errorf("Raw() = %s, not JSON", s.Raw())
				}
				return
			}
			if err == nil {
				t.Fatalf("Compile succeeded, want error containing %q", tt.wantErr)
			}
			if !strings.Contains(err.Error(), tt.wantErr) || !strings.HasPrefix(err.Error(), "schema: ") {
				t.Errorf("error %q, want it to contain %q", err, tt.wantErr)
			}
			if strings.Contains(err.Error(), locationBase) {
				t.Errorf("error %q shows the internal location", err)
			}
		})
	}
}

func TestCompileEmptyAcceptsAnyObject(t *testing.T) {
	s := MustCompile(nil)
	if got := string(s.Raw()); got != `{"type":"object"}` {
		t.Errorf("Raw() = %s", got)
	}
	if err := s.Validate(mustDecode(t, `{"anything":[1,"x"]}`)); err != nil {
		t.Errorf("object rejected: %v", err)
	}
	if err := s.Validate(mustDecode(t, `"text"`)); err == nil {
		t.Error("a string validated against the empty schema")
	}
}

func TestRawIsCompact(t *testing.T) {
	s := MustCompile(json.RawMessage("{\n  \"type\": \"object\"\n}"))
	if got := string(s.Raw()); got != `{"type":"object"}` {
		t.Errorf("Raw() = %q", got)
	}
}

func TestCompileSharedAlternativesStayLinear(t *testing.T) {
	// Each level refers twice to the next: 2^40 paths if walked naively.
	var b strings.Builder
	b.WriteString(`{"properties":{"a":{"$ref":"#/$defs/d0"}},"$defs":{`)
	const depth = 40
	for i := range depth {
		fmt.Fprintf(&b, `"d%d":{"anyOf":[{"$ref":"#/$defs/d%d"},{"allOf":[{"$ref":"#/$defs/d%d"}]}]},`, i, i+1, i+1)
	}
	fmt.Fprintf(&b, `"d%d":{"type":"integer"}}}`, depth)
	done := make(chan error, 1)
	go func() {
		s, err := Compile(json.RawMessage(b.String()))
		if err == nil {
			v, _ := Decode(json.RawMessage(`{"a":"5"}`))
			if _, changed := s.Coerce(v); !changed {
				err = errors.New("not coerced through the shared alternatives")
			}
		}
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Compile takes exponential time on shared alternatives")
	}
}
