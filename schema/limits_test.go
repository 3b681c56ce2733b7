package schema

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// TestCompileRefusesEndlessDefaults holds Compile to refusing every schema
// whose defaults would fill themselves in without end. Before the check, the
// first of these crashed the whole process with a stack overflow on the first
// call that left "a" out.
func TestCompileRefusesEndlessDefaults(t *testing.T) {
	for _, tc := range []struct{ name, schema, at string }{
		{"self through $ref", `{"properties":{"a":{"$ref":"#","default":{}}}}`, "#/properties/a"},
		{"self inside an array default", `{"properties":{"a":{"type":"array","default":[{}],"items":{"$ref":"#"}}}}`, "#/properties/a"},
		{"two definitions in a ring", `{"$ref":"#/$defs/x","$defs":{
			"x":{"type":"object","properties":{"y":{"$ref":"#/$defs/y","default":{}}}},
			"y":{"type":"object","properties":{"x":{"$ref":"#/$defs/x","default":{"z":1}}}}}}`, "#/$defs/"},
		{"through additionalProperties", `{"properties":{"m":{"additionalProperties":{"$ref":"#/properties/m"},"properties":{"x":{"$ref":"#/properties/m","default":{"k":{}}}}}}}`, "#/properties/m/properties/x"},
		{"ring through a default that names a sibling", `{"properties":{"a":{"$ref":"#","default":{"b":{}}},"b":{"$ref":"#"}}}`, "#/properties/a"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Compile(json.RawMessage(tc.schema))
			if err == nil {
				t.Fatalf("Compile accepted a schema whose defaults never end: %s", tc.schema)
			}
			if !strings.Contains(err.Error(), "never ends") || !strings.Contains(err.Error(), tc.at) {
				t.Fatalf("error %q should say the default never ends and name %s", err, tc.at)
			}
		})
	}
}

// TestRecursiveSchemaWithFiniteDefaults checks that the refusal is exact:
// recursive schemas whose defaults end are still accepted and filled in.
func TestRecursiveSchemaWithFiniteDefaults(t *testing.T) {
	for _, tc := range []struct{ schema, in, want string }{
		// The default of "n" adds a scalar; recursion happens only as deep
		// as the arguments go.
		{`{"properties":{"a":{"$ref":"#"},"n":{"default":1}}}`, `{"a":{"a":{}}}`, `{"a":{"a":{"n":1},"n":1},"n":1}`},
		// The default holds "a" itself, so filling it in does not recurse.
		{`{"properties":{"a":{"$ref":"#","default":{"a":null}}}}`, `{}`, `{"a":{"a":null}}`},
		// A chain that ends: x fills y, y fills z, z is a scalar.
		{`{"properties":{"x":{"default":{},"properties":{"y":{"default":{},"properties":{"z":{"default":0}}}}}}}`, `{}`, `{"x":{"y":{"z":0}}}`},
	} {
		s, err := Compile(json.RawMessage(tc.schema))
		if err != nil {
			t.Fatalf("Compile(%s): %v", tc.schema, err)
		}
		v, err := Decode(json.RawMessage(tc.in))
		if err != nil {
			t.Fatal(err)
		}
		got, _ := s.ApplyDefaults(v)
		b, _ := json.Marshal(got)
		if string(b) != tc.want {
			t.Errorf("ApplyDefaults(%s) under %s = %s, want %s", tc.in, tc.schema, b, tc.want)
		}
	}
}

// TestCompileRefusesExplodingDefaults: defaults that end but double at each
// of twenty levels would make every call build a million values.
func TestCompileRefusesExplodingDefaults(t *testing.T) {
	var defs []string
	for i := range 20 {
		next := fmt.Sprintf(`{"$ref":"#/$defs/d%d","default":{}}`, i+1)
		defs = append(defs, fmt.Sprintf(`"d%d":{"type":"object","properties":{"x":%s,"y":%s}}`, i, next, next))
	}
	defs = append(defs, `"d20":{"type":"object"}`)
	raw := `{"$ref":"#/$defs/d0","$defs":{` + strings.Join(defs, ",") + `}}`
	_, err := Compile(json.RawMessage(raw))
	if err == nil || !strings.Contains(err.Error(), "more than 4096 values") {
		t.Fatalf("Compile should refuse defaults that grow to 2^20 values, got %v", err)
	}
}

// TestCompileRefusesDeepSchemas: a schema nested a hundred thousand levels
// deep is refused at once with an error that says so, whatever shape the
// nesting takes, and nesting inside strings does not count.
func TestCompileRefusesDeepSchemas(t *testing.T) {
	const deep = 100_000
	shapes := map[string]string{
		"arrays only": `{"properties":{"a":{"enum":[` + strings.Repeat("[", 200) + strings.Repeat("]", 200) + `]}}}`,
		"properties":  `{"type":"object","properties":{"a":` + strings.Repeat(`{"properties":{"a":`, deep) + `{}` + strings.Repeat(`}}`, deep) + `}}`,
		"default":     `{"properties":{"a":{"default":` + strings.Repeat(`{"a":`, deep) + `1` + strings.Repeat(`}`, deep) + `}}}`,
		"allOf":       strings.Repeat(`{"allOf":[`, deep) + `{}` + strings.Repeat(`]}`, deep),
	}
	for name, raw := range shapes {
		_, err := Compile(json.RawMessage(raw))
		if err == nil || !strings.Contains(err.Error(), "nested deeper than 128 levels") && !strings.Contains(err.Error(), "more than 4096 objects") {
			t.Errorf("%s: Compile of a %d-deep schema: got %v, want the depth error", name, deep, err)
		}
	}

	// At the limit exactly, a schema compiles and works.
	levels := (MaxDepth - 2) / 2
	raw := `{"properties":{"a":` + strings.Repeat(`{"properties":{"a":`, levels-1) + `{"type":"integer"}` + strings.Repeat(`}}`, levels-1) + `}}`
	s, err := Compile(json.RawMessage(raw))
	if err != nil {
		t.Fatalf("a schema %d levels deep should compile: %v", MaxDepth-1, err)
	}
	bad := strings.Repeat(`{"a":`, levels) + `"x"` + strings.Repeat(`}`, levels)
	v, err := Decode(json.RawMessage(bad))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Validate(v); err == nil || !strings.Contains(err.Error(), strings.Repeat("/a", levels)) {
		t.Fatalf("Validate should point at the deepest value, got %v", err)
	}

	// Brackets inside strings are text, not nesting.
	text := `{"description":"` + strings.Repeat("[{", deep) + `","properties":{"s":{"pattern":"\\[\"{"}}}`
	if _, err := Compile(json.RawMessage(text)); err != nil {
		t.Fatalf("brackets in strings should not count as nesting: %v", err)
	}
}

// TestCompileLongRefChain: references chained a hundred thousand times are
// not nesting, but the validator's compiler takes time that grows with the
// square of their number; Compile refuses them at once. A chain as long as
// the limits allow compiles and every step of a call ends.
func TestCompileLongRefChain(t *testing.T) {
	chain := func(n int) json.RawMessage {
		var b strings.Builder
		b.WriteString(`{"$ref":"#/$defs/d0","$defs":{`)
		for i := range n {
			fmt.Fprintf(&b, `"d%d":{"type":"object","properties":{"k":{"$ref":"#/$defs/d%d"},"n":{"type":"integer","default":%d}}},`, i, i+1, i)
		}
		fmt.Fprintf(&b, `"d%d":{"type":"object"}}}`, n)
		return json.RawMessage(b.String())
	}
	if _, err := Compile(chain(100_000)); err == nil || !strings.Contains(err.Error(), "more than 4096 objects") {
		t.Fatalf("Compile of a 100,000-long reference chain: got %v, want the size error", err)
	}
	s, err := Compile(chain(MaxObjects/4 - 1))
	if err != nil {
		t.Fatalf("a chain within the limits should compile: %v", err)
	}
	v, _ := Decode(json.RawMessage(`{"k":{"k":{"n":"1"}}}`))
	v, _ = s.Coerce(v)
	v, _ = s.ApplyDefaults(v)
	if err := s.Validate(v); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	b, _ := json.Marshal(v)
	if want := `{"k":{"k":{"n":1},"n":1},"n":0}`; string(b) != want {
		t.Fatalf("got %s, want %s", b, want)
	}
}

// allDefaults lists the defaults of n and of the nodes below it, each once.
func (n *node) allDefaults() []*propDefault {
	var out []*propDefault
	seen := map[*node]bool{}
	var walk func(*node)
	walk = func(n *node) {
		if n == nil || seen[n] {
			return
		}
		seen[n] = true
		for i := range n.defaults {
			out = append(out, &n.defaults[i])
		}
		n.children(walk)
	}
	walk(n)
	return out
}
