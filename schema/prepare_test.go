package schema

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
)

// TestPrepareDefers holds Prepare to its point: a typical tool schema is
// checked, not compiled, and compiled at its first use.
func TestPrepareDefers(t *testing.T) {
	raw := json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer","minimum":1,"default":3},` +
		`"s":{"type":"string","pattern":"^a"}},"required":["s"],"$comment":"TestPrepareDefers"}`)
	before := compiles.Load()
	s, err := Prepare(raw)
	if err != nil {
		t.Fatal(err)
	}
	if n := compiles.Load() - before; n != 0 {
		t.Fatalf("Prepare compiled %d times, want 0", n)
	}
	v, _ := s.ApplyDefaults(map[string]any{"s": "b"})
	err = s.Validate(v)
	if err == nil || !strings.Contains(err.Error(), `/s: must match the pattern "^a"`) {
		t.Fatalf("Validate = %v, want the pattern violation at /s", err)
	}
	if got := v.(map[string]any)["n"]; got != json.Number("3") {
		t.Fatalf("default not filled in at first use: n = %v", got)
	}
	if n := compiles.Load() - before; n != 1 {
		t.Fatalf("first use compiled %d times, want 1", n)
	}
	if string(s.Raw()) != string(raw) {
		t.Fatalf("Raw = %s", s.Raw())
	}
}

// TestPrepareCompilesOnce calls a prepared schema's first use from many
// goroutines at once: it is compiled exactly once, and every caller sees the
// compiled schema.
func TestPrepareCompilesOnce(t *testing.T) {
	raw := json.RawMessage(`{"type":"object","properties":{"k":{"type":"integer"}},"$comment":"TestPrepareCompilesOnce"}`)
	before := compiles.Load()
	s, err := Prepare(raw)
	if err != nil {
		t.Fatal(err)
	}
	const callers = 32
	var wg sync.WaitGroup
	start := make(chan struct{})
	errs := make(chan error, callers)
	for i := range callers {
		wg.Go(func() {
			<-start
			// Each of the three ways in is some caller's first use.
			var v any = map[string]any{"k": "12"}
			switch i % 3 {
			case 0:
				v, _ = s.Coerce(v)
			case 1:
				v, _ = s.ApplyDefaults(v)
				v, _ = s.Coerce(v)
			case 2:
				v = map[string]any{"k": json.Number("12")}
			}
			errs <- s.Validate(v)
		})
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Errorf("a first use got %v", err)
		}
	}
	if n := compiles.Load() - before; n != 1 {
		t.Fatalf("%d concurrent first uses compiled %d times, want 1", callers, n)
	}
}

// TestPrepareRefuses checks that what Compile refuses, Prepare refuses at
// once, with Compile's message naming the place.
func TestPrepareRefuses(t *testing.T) {
	for _, c := range []struct{ name, schema, want string }{
		{"wrong type keyword", `{"type":"object","properties":{"a":{"type":"strng"}}}`, "/properties/a/type"},
		{"type not a name", `{"properties":{"a":{"type":5}}}`, "/properties/a/type"},
		{"bad regex", `{"properties":{"a":{"type":"string","pattern":"(["}}}`, "/properties/a/pattern"},
		{"bad pattern property", `{"properties":{"a":{"patternProperties":{"^x":{},"(":{}}}}}`,
			`/properties/a/patternProperties/(: must be a valid regex but found "("`},
		{"ref to nowhere", `{"properties":{"a":{"$ref":"#/$defs/missing"}}}`, `/properties/a/$ref: reference "#/$defs/missing" points to nothing`},
		{"ref outside", `{"properties":{"a":{"$ref":"other.json"}}}`, `/properties/a/$ref: reference "other.json" is outside the schema`},
		{"not an object", `[1,2]`, "must be a JSON object"},
		{"not an object schema", `{"type":"string"}`, "top-level type must be"},
		{"negative count", `{"properties":{"a":{"maxLength":-1}}}`, "/properties/a/maxLength"},
		{"required not strings", `{"required":[1]}`, "/required/0"},
		{"default without end", `{"properties":{"a":{"$ref":"#","default":{}}}}`, "never ends"},
		{"not JSON", `{"type":`, "schema: "},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, perr := Prepare(json.RawMessage(c.schema))
			_, cerr := compile(json.RawMessage(c.schema))
			if perr == nil || cerr == nil {
				t.Fatalf("Prepare: %v; Compile: %v; want both to refuse", perr, cerr)
			}
			if perr.Error() != cerr.Error() || !strings.Contains(perr.Error(), c.want) {
				t.Fatalf("Prepare: %v\nCompile: %v\nwant both the same, naming %q", perr, cerr, c.want)
			}
		})
	}
}

// TestPrepareFailedCompile covers what Prepare's check is there to prevent,
// a prepared schema that does not compile: each use says so.
func TestPrepareFailedCompile(t *testing.T) {
	s := &Schema{raw: json.RawMessage(`{"properties":{"a":{"$ref":"#/nowhere"}}}`)}
	err := s.Ready()
	if err == nil || !strings.Contains(err.Error(), `/properties/a/$ref: reference "#/nowhere" points to nothing`) {
		t.Fatalf("Ready = %v", err)
	}
	if verr := s.Validate(map[string]any{}); verr != err {
		t.Fatalf("Validate = %v, want the compile error", verr)
	}
	v := map[string]any{"a": "1"}
	if _, changed := s.Coerce(v); changed {
		t.Fatal("Coerce changed arguments under a schema that did not compile")
	}
}

// checkValues are values put in every keyword's place by
// TestCheckNeverAcceptsWhatCompileRefuses: right and wrong ones for each
// kind of keyword.
var checkValues = []string{
	`"x"`, `"string"`, `"object"`, `""`, `"(["`, `"^[a-z]+$"`, `"#"`, `"#/properties/a"`, `"#/$defs/d"`,
	`"#/nowhere"`, `"#/properties"`, `"#/allOf/0"`, `"#/allOf/01"`, `"#/items"`, `"#a"`, `"other.json"`,
	`"#/properties/a~1b"`, `"#/properties/%61"`,
	`0`, `1`, `-1`, `1.5`, `1.0`, `1e3`, `10000000000`, `true`, `false`, `null`,
	`[]`, `["a"]`, `["a","a"]`, `[1,1.0]`, `[1,"1",null,{"a":1},{"a":2},[1]]`, `[{"a":1},{"a":1}]`, `["string","integer"]`, `["string","strng"]`, `[1]`, `[{}]`, `[true,{"type":"x"}]`,
	`{}`, `{"type":"x"}`, `{"a":{}}`, `{"a":{"type":1}}`, `{"a":["b"]}`, `{"a":[1]}`, `{"(":{}}`, `{"a":true}`,
	`{"$ref":"#"}`, `{"$ref":"#/nowhere"}`, `{"a":{"$ref":"#/$defs/d"}}`, `{"default":{"x":1}}`,
}

// TestCheckNeverAcceptsWhatCompileRefuses puts each of checkValues in the
// place of each keyword the check knows, and a few it does not, at the top
// of a schema and in a nested one, under each draft the check reads: where
// the check accepts, the compiler must too. It also makes sure the check
// accepts a fair share, so that it cannot pass by refusing everything.
func TestCheckNeverAcceptsWhatCompileRefuses(t *testing.T) {
	names := []string{"$id", "$anchor", "$dynamicRef", "$recursiveRef", "$vocabulary", "$foo", "x-extra"}
	for k := range keyword {
		names = append(names, k)
	}
	drafts := []string{"", `"$schema":"https://json-schema.org/draft/2020-12/schema",`,
		`"$schema":"http://json-schema.org/draft-07/schema#",`}
	accepted, refused := 0, 0
	for _, draft := range drafts {
		for _, k := range names {
			for _, v := range checkValues {
				key, _ := json.Marshal(k)
				for _, raw := range []string{
					fmt.Sprintf(`{%s"properties":{"a":{"type":"string"},"a/b":{}},"allOf":[{}],"$defs":{"d":{}},%s:%s}`, draft, key, v),
					fmt.Sprintf(`{%s"type":"object","properties":{"a":{"type":"array","items":{%s:%s}}},"$defs":{"d":{"type":"integer"}}}`, draft, key, v),
				} {
					doc, err := Decode(json.RawMessage(raw))
					if err != nil {
						t.Fatalf("test schema %s: %v", raw, err)
					}
					if !surelyCompiles(doc) {
						refused++
						continue
					}
					accepted++
					if _, err := compile(json.RawMessage(raw)); err != nil {
						t.Errorf("the check accepts %s, which the compiler refuses: %v", raw, err)
					}
				}
			}
		}
	}
	t.Logf("the check accepted %d schemas and left %d to the compiler", accepted, refused)
	if accepted < 2000 {
		t.Errorf("the check accepted only %d schemas of %d", accepted, accepted+refused)
	}
}

// FuzzPrepare holds the check to never accepting a schema the compiler
// refuses, on fuzzed schemas.
func FuzzPrepare(f *testing.F) {
	for _, s := range []string{
		`{"type":"object","properties":{"q":{"type":"string"},"n":{"type":"integer","minimum":1,"default":10}},"required":["q"]}`,
		`{"$ref":"#/$defs/t","$defs":{"t":{"type":"object","properties":{"k":{"type":"array","items":{"$ref":"#/$defs/t"}}}}}}`,
		`{"properties":{"a":{"anyOf":[{"type":"string","pattern":"^x"},{"type":"null"}]}},"additionalProperties":false}`,
		`{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","properties":{"a":{"type":"array","items":[{}]}},"definitions":{"x":{}}}`,
		`{"patternProperties":{"^a":{"type":"number","multipleOf":0.5}},"dependentRequired":{"a":["b"]},"propertyNames":{"maxLength":3}}`,
		`{"properties":{"e":{"enum":["a",1,null]},"c":{"const":{"x":[1]}},"d":{"default":[]}},"if":{"required":["e"]},"then":{"not":{}}}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		// As in Prepare, which reads empty input as {"type":"object"}.
		if strings.TrimSpace(raw) == "" || checkNesting([]byte(raw)) != nil {
			return
		}
		doc, err := Decode(json.RawMessage(raw))
		if err != nil || !surelyCompiles(doc) {
			return
		}
		if _, err := compile(json.RawMessage(raw)); err != nil {
			t.Fatalf("the check accepts %s, which the compiler refuses: %v", raw, err)
		}
	})
}

// TestPrepareDefersCommonShapes: the schemas MCP servers commonly list, as
// their SDKs write them, are checked without being compiled, so a large
// server's tools register quickly.
func TestPrepareDefersCommonShapes(t *testing.T) {
	for name, raw := range map[string]string{
		"zod, draft-07": `{"type":"object","properties":{"path":{"type":"string","description":"File"},` +
			`"depth":{"type":"number","minimum":0,"default":2},"tags":{"type":"array","items":{"type":"string"}}},` +
			`"required":["path"],"additionalProperties":false,"$schema":"http://json-schema.org/draft-07/schema#"}`,
		"pydantic, $defs and $ref": `{"$defs":{"Mode":{"enum":["a","b"],"title":"Mode","type":"string"}},` +
			`"properties":{"mode":{"$ref":"#/$defs/Mode"},"limit":{"anyOf":[{"type":"integer"},{"type":"null"}],` +
			`"default":null,"title":"Limit"}},"required":["mode"],"title":"runArguments","type":"object"}`,
		"go-sdk": `{"type":"object","required":["name"],"properties":{"name":{"type":"string"},` +
			`"count":{"type":["null","integer"]},"opts":{"type":"object","additionalProperties":{"type":"string"}}},` +
			`"additionalProperties":false}`,
		"patterns and bounds": `{"type":"object","properties":{"id":{"type":"string","pattern":"^[a-z0-9-]{1,40}$",` +
			`"minLength":1,"maxLength":40,"format":"uuid"},"n":{"type":"integer","exclusiveMinimum":0,"multipleOf":2}}}`,
		"no arguments": `{"type":"object","properties":{}}`,
	} {
		doc, err := Decode(json.RawMessage(raw))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !surelyCompiles(doc) {
			t.Errorf("%s: the check is unsure of %s", name, raw)
			continue
		}
		if _, err := compile(json.RawMessage(raw)); err != nil {
			t.Errorf("%s: the check accepts what the compiler refuses: %v", name, err)
		}
	}
}
