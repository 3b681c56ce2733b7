package provider_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/lathe-tools/lathe/provider"
	"github.com/lathe-tools/lathe/tool"
)

func def(name, schema string) tool.Definition {
	return tool.Definition{Name: name, Description: "A tool.", InputSchema: json.RawMessage(schema)}
}

func convert(t *testing.T, f provider.Format, defs ...tool.Definition) (*provider.Toolset, string) {
	t.Helper()
	ts, err := provider.Convert(f, defs, nil)
	if err != nil {
		t.Fatal(err)
	}
	out, err := json.Marshal(ts)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range violations(f, out) {
		t.Errorf("format %s: %s\n%s", f, v, out)
	}
	return ts, string(out)
}

// TestCheckerCatchesBrokenRules feeds the checker definitions that break
// one documented rule each: a checker that passes everything would let
// every other test of this package pass for nothing.
func TestCheckerCatchesBrokenRules(t *testing.T) {
	cases := []struct {
		f    provider.Format
		in   string
		want string
	}{
		{provider.OpenAI, `[{"type":"function","function":{"name":"a","strict":true,"parameters":{"type":"object","properties":{"x":{"type":"string"}},"required":[],"additionalProperties":false}}}]`, "not required"},
		{provider.OpenAI, `[{"type":"function","function":{"name":"a","strict":true,"parameters":{"type":"object","properties":{},"required":[]}}}]`, "additionalProperties is not false"},
		{provider.OpenAI, `[{"type":"function","function":{"name":"a","strict":true,"parameters":{"type":"object","properties":{"x":{"type":"string","minLength":1}},"required":["x"],"additionalProperties":false}}}]`, "minLength"},
		{provider.OpenAI, `[{"type":"function","function":{"name":"a","strict":true,"parameters":{"type":"object","properties":{"x":{"type":"string","format":"uri"}},"required":["x"],"additionalProperties":false}}}]`, "format uri"},
		{provider.OpenAI, `[{"type":"function","function":{"name":"a","strict":true,"parameters":{"type":"object","properties":{"x":{"default":1}},"required":["x"],"additionalProperties":false}}}]`, "no type"},
		{provider.OpenAI, `[{"type":"function","function":{"name":"a.b","strict":false,"parameters":{"type":"object"}}}]`, "name breaks"},
		{provider.OpenAIResponses, `[{"type":"function","name":"a","strict":true,"parameters":{"anyOf":[{"type":"object"}]}}]`, "root is an anyOf"},
		{provider.Anthropic, `[{"name":"a","strict":true,"input_schema":{"type":"object","properties":{"n":{"type":"integer","minimum":1}},"additionalProperties":false}}]`, "minimum"},
		{provider.Anthropic, `[{"name":"a","strict":true,"input_schema":{"type":"object","properties":{"l":{"type":"array","minItems":2}},"additionalProperties":false}}]`, "minItems"},
		{provider.Anthropic, `[{"name":"a","strict":true,"input_schema":{"type":"object","properties":{"s":{"type":"string","pattern":"(\\w)\\1"}},"additionalProperties":false}}]`, "backreference"},
		{provider.Anthropic, `[{"name":"a","strict":true,"input_schema":{"type":"object","properties":{}}}]`, "additionalProperties"},
		{provider.Gemini, `[{"functionDeclarations":[{"name":"a","parameters":{"type":"object"}}]}]`, "not an OBJECT"},
		{provider.Gemini, `[{"functionDeclarations":[{"name":"a","parameters":{"type":"OBJECT","additionalProperties":false}}]}]`, "additionalProperties"},
		{provider.Gemini, `[{"functionDeclarations":[{"name":"a","parameters":{"type":"OBJECT","properties":{"n":{"type":"INTEGER","enum":[1,2]}}}}]}]`, "enum"},
		{provider.Gemini, `[{"functionDeclarations":[{"name":"a","parameters":{"type":"OBJECT","properties":{"file-path":{"type":"STRING"}}}}]}]`, "parameter name"},
		{provider.Gemini, `[{"functionDeclarations":[{"name":"1a"}]}]`, "name breaks"},
		{provider.Gemini, `[{"functionDeclarations":[{"name":"a","parameters":{"type":"OBJECT","properties":{"s":{"type":["STRING","NULL"]}}}}]}]`, "type"},
		{provider.MCP, `[{"name":"a b","inputSchema":{"type":"object"}}]`, "name breaks"},
	}
	for _, c := range cases {
		v := violations(c.f, []byte(c.in))
		if !strings.Contains(strings.Join(v, "\n"), c.want) {
			t.Errorf("%s %s: violations %q, want one about %q", c.f, c.in, v, c.want)
		}
	}
}

// TestOptionalBecomesNullable: in OpenAI's strict mode every property is
// required, so an optional one becomes nullable; the null a model sends
// for it is dropped again when its call is resolved, at any depth, while a
// null the tool's own schema allows is kept.
func TestOptionalBecomesNullable(t *testing.T) {
	schema := `{"type":"object","properties":{
		"path":{"type":"string"},
		"limit":{"type":"integer","minimum":1},
		"note":{"type":["string","null"]},
		"opts":{"type":"object","properties":{"deep":{"type":"boolean"},"mode":{"enum":["a","b"]}},"required":["mode"]},
		"items":{"type":"array","items":{"type":"object","properties":{"k":{"type":"string"},"v":{"type":"string"}},"required":["k"]}}
	},"required":["path","note"]}`
	for _, f := range []provider.Format{provider.OpenAI, provider.OpenAIResponses} {
		ts, out := convert(t, f, def("t", schema))
		if !strings.Contains(out, `"strict":true`) || len(ts.Warnings) > 0 {
			t.Fatalf("%s: not strict: %v\n%s", f, ts.Warnings, out)
		}
		if !strings.Contains(out, `"limit":{"minimum":1,"type":["integer","null"]}`) {
			t.Errorf("%s: limit not made nullable:\n%s", f, out)
		}
		calls := []*tool.Call{{Name: "t", Arguments: json.RawMessage(
			`{"path":"a","limit":null,"note":null,"opts":{"deep":null,"mode":"a"},"items":[{"k":"x","v":null},{"k":"y","v":"z"}]}`)}}
		ts.Resolve(calls)
		want := `{"items":[{"k":"x"},{"k":"y","v":"z"}],"note":null,"opts":{"mode":"a"},"path":"a"}`
		if string(calls[0].Arguments) != want {
			t.Errorf("%s: resolved to %s, want %s", f, calls[0].Arguments, want)
		}
	}
	// Anthropic's strict mode takes optional properties as they are: the
	// model leaves them out, and nothing is dropped.
	ts, out := convert(t, provider.Anthropic, def("t", schema))
	if !strings.Contains(out, `"strict":true`) || !strings.Contains(out, `"required":["note","path"]`) {
		t.Errorf("anthropic: %s", out)
	}
	calls := []*tool.Call{{Name: "t", Arguments: json.RawMessage(`{"path":"a","limit":null}`)}}
	ts.Resolve(calls)
	if string(calls[0].Arguments) != `{"path":"a","limit":null}` {
		t.Errorf("anthropic: arguments changed: %s", calls[0].Arguments)
	}
}

// TestFallbackWarns: schemas that strict mode cannot express go out as they
// are, not strict, with a warning naming the tool and the reason.
func TestFallbackWarns(t *testing.T) {
	cases := []struct{ name, schema, reason string }{
		{"env", `{"type":"object","properties":{"env":{"type":"object","additionalProperties":{"type":"string"}}}}`, "additionalProperties (a map of values) at /properties/env"},
		{"anything", `{"type":"object","properties":{"value":{}}}`, "a value of any type at /properties/value"},
		{"tree", `{"type":"object","properties":{"node":{"$ref":"#/$defs/node"}},"$defs":{"node":{"type":"object","properties":{"children":{"type":"array","items":{"$ref":"#/$defs/node"}}}}}}`, "a recursive $ref"},
		{"open", `{"type":"object","properties":{"meta":{"type":"object"}}}`, "an object whose properties are not described at /properties/meta"},
		{"root_union", `{"anyOf":[{"type":"object","properties":{"a":{"type":"string"}}},{"type":"object","properties":{"b":{"type":"string"}}}]}`, "the arguments are not an object"},
	}
	for _, c := range cases {
		for _, f := range []provider.Format{provider.OpenAI, provider.OpenAIResponses, provider.Anthropic} {
			ts, out := convert(t, f, def(c.name, c.schema))
			if strings.Contains(out, `"strict":true`) {
				t.Errorf("%s %s: strict:\n%s", f, c.name, out)
			}
			if len(ts.Warnings) != 1 || ts.Warnings[0].Tool != c.name || !strings.Contains(ts.Warnings[0].Reason, c.reason) {
				t.Errorf("%s %s: warnings %v, want one naming the tool and %q", f, c.name, ts.Warnings, c.reason)
			}
		}
	}
}

// TestConstraintsMoveToDescriptions: a constraint a provider refuses goes
// into the description, in words the model reads, and leaves the schema.
func TestConstraintsMoveToDescriptions(t *testing.T) {
	schema := `{"type":"object","properties":{
		"n":{"type":"integer","minimum":1,"maximum":9,"description":"How many."},
		"s":{"type":"string","minLength":2,"format":"uri","pattern":"^(?=a)"},
		"l":{"type":"array","items":{"type":"string"},"minItems":2,"uniqueItems":true},
		"d":{"type":"string","default":"x"}
	},"required":["n","s","l","d"]}`
	_, out := convert(t, provider.Anthropic, def("t", schema))
	for _, want := range []string{`"description":"How many. (maximum: 9; minimum: 1)"`, `minLength: 2`, `pattern: \"^(?=a)\"`,
		`"format":"uri"`, `minItems: 2; uniqueItems: true`, `"default":"x"`, `"strict":true`} {
		if !strings.Contains(out, want) {
			t.Errorf("anthropic: no %s in\n%s", want, out)
		}
	}
	_, out = convert(t, provider.OpenAI, def("t", schema))
	for _, want := range []string{`"maximum":9`, `"minimum":1`, `format: \"uri\"`, `minLength: 2`, `uniqueItems: true`, `default: \"x\"`, `"strict":true`} {
		if !strings.Contains(out, want) {
			t.Errorf("openai: no %s in\n%s", want, out)
		}
	}
	_, out = convert(t, provider.Gemini, def("t", schema))
	for _, want := range []string{`"minimum":1`, `"minLength":2`, `format: \"uri\"`, `"minItems":2`, `uniqueItems: true`} {
		if !strings.Contains(out, want) {
			t.Errorf("gemini: no %s in\n%s", want, out)
		}
	}
}

// TestUnionsAndRefs: oneOf becomes anyOf, allOf is merged, local $refs are
// inlined, and a type list becomes a union; every format gets what it
// takes.
func TestUnionsAndRefs(t *testing.T) {
	schema := `{"type":"object","$defs":{"pos":{"type":"integer","minimum":0}},
		"allOf":[{"properties":{"a":{"$ref":"#/$defs/pos"}},"required":["a"]},{"properties":{"b":{"type":"string"}}}],
		"properties":{"v":{"oneOf":[{"type":"string"},{"type":"number"}]},"w":{"type":["string","integer"]},"c":{"const":"only"}},
		"required":["v","w","c"]}`
	for _, f := range []provider.Format{provider.OpenAI, provider.Anthropic, provider.Gemini} {
		ts, out := convert(t, f, def("t", schema))
		if f != provider.Gemini && !strings.Contains(out, `"strict":true`) {
			t.Errorf("%s: not strict: %v\n%s", f, ts.Warnings, out)
		}
		for _, want := range []string{`"anyOf"`, `"a":{`, `"b":{`} {
			if !strings.Contains(out, want) {
				t.Errorf("%s: no %s in\n%s", f, want, out)
			}
		}
		if strings.Contains(out, "$ref") || strings.Contains(out, "oneOf") || strings.Contains(out, "allOf") {
			t.Errorf("%s: a $ref, oneOf or allOf is left:\n%s", f, out)
		}
	}
}

// TestNamesMapBothWays: names a provider refuses are mapped to names it
// takes, each distinct, and mapped back; names that would collide after
// mapping are an error, never a silent overwrite.
func TestNamesMapBothWays(t *testing.T) {
	defs := []tool.Definition{def("fs.read", `{}`), def("fs_read", `{}`), def("1st", `{}`), def(strings.Repeat("x", 70), `{}`),
		def("héllo", `{}`)}
	for _, f := range []provider.Format{provider.OpenAI, provider.OpenAIResponses, provider.Anthropic, provider.Gemini} {
		ts, _ := convert(t, f, defs...)
		seen := map[string]bool{}
		for _, d := range defs {
			w := ts.WireName(d.Name)
			if seen[w] {
				t.Errorf("%s: two tools go by %q", f, w)
			}
			seen[w] = true
			if back, ok := ts.Name(w); !ok || back != d.Name {
				t.Errorf("%s: %q → %q → %q", f, d.Name, w, back)
			}
			calls := []*tool.Call{{Name: w, Arguments: json.RawMessage(`{}`)}}
			ts.Resolve(calls)
			if calls[0].Name != d.Name {
				t.Errorf("%s: the call of %q resolves to %q", f, w, calls[0].Name)
			}
		}
		if ts.WireName("fs_read") != "fs_read" {
			t.Errorf("%s: a name the provider takes was changed: %q", f, ts.WireName("fs_read"))
		}
	}
	// A name made to look like another's mapped name collides with it.
	ts, _ := convert(t, provider.OpenAI, def("a.b", `{}`))
	taken := ts.WireName("a.b")
	if _, err := provider.Convert(provider.OpenAI, []tool.Definition{def("a.b", `{}`), def(taken, `{}`)}, nil); err == nil ||
		!strings.Contains(err.Error(), "a.b") || !strings.Contains(err.Error(), taken) {
		t.Errorf("colliding names: %v", err)
	}
	if _, err := provider.Convert(provider.Anthropic, []tool.Definition{def("a", `{}`), def("a", `{}`)}, nil); err == nil {
		t.Error("a tool defined twice is not an error")
	}
}

// TestGeminiParameterNames: Gemini takes parameter names of letters,
// digits and underscores only; others are renamed, and renamed back in
// the calls.
func TestGeminiParameterNames(t *testing.T) {
	ts, out := convert(t, provider.Gemini, def("t", `{"type":"object","properties":{"file-path":{"type":"string"},"$x":{"type":"integer"},"ok":{"type":"boolean"}},"required":["file-path"]}`))
	var tools []struct {
		FunctionDeclarations []struct {
			Parameters struct {
				Properties map[string]any `json:"properties"`
				Required   []string       `json:"required"`
			} `json:"parameters"`
		} `json:"functionDeclarations"`
	}
	if err := json.Unmarshal([]byte(out), &tools); err != nil {
		t.Fatal(err)
	}
	p := tools[0].FunctionDeclarations[0].Parameters
	args := map[string]any{}
	for name := range p.Properties {
		args[name] = name
	}
	if len(p.Required) != 1 || p.Properties[p.Required[0]] == nil || p.Properties["ok"] == nil {
		t.Fatalf("properties %v, required %v", p.Properties, p.Required)
	}
	b, _ := json.Marshal(args)
	calls := []*tool.Call{{Name: "t", Arguments: b}}
	ts.Resolve(calls)
	var got map[string]any
	json.Unmarshal(calls[0].Arguments, &got)
	for _, name := range []string{"file-path", "$x", "ok"} {
		if _, ok := got[name]; !ok {
			t.Errorf("%s not renamed back: %s", name, calls[0].Arguments)
		}
	}
}

// TestHostileSchemas: schemas no tool should have still convert, to
// something each provider takes, or fail with an error naming the tool.
func TestHostileSchemas(t *testing.T) {
	for _, s := range []string{`true`, `false`, `[]`, `"x"`, `{"$ref":"#/nope"}`, `{"$ref":"https://example.invalid/s.json"}`,
		`{"type":"object","properties":{"a":{"$ref":"#"}}}`, `{"type":"object","properties":{"a":{"enum":[{"x":1}]}}}`,
		`{"type":"object","properties":"x","required":"y"}`, `{"type":"object","properties":{"a":{"type":"array"}}}`,
		`{"type":"object","properties":{"a":{"allOf":[{"type":"string"},{"type":"integer"}]}}}`,
		`{"type":"object","properties":{"a":{"anyOf":[]}}}`, `{"type":"object","properties":{"a":{"type":"null"}}}`} {
		for _, f := range provider.Formats() {
			ts, err := provider.Convert(f, []tool.Definition{def("h", s)}, nil)
			if err != nil {
				if !strings.Contains(err.Error(), `"h"`) {
					t.Errorf("%s %s: the error does not name the tool: %v", f, s, err)
				}
				continue
			}
			out, _ := json.Marshal(ts)
			for _, v := range violations(f, out) {
				t.Errorf("%s %s: %s\n%s", f, s, v, out)
			}
		}
	}
	if _, err := provider.Convert(provider.OpenAI, []tool.Definition{def("h", `{"type":`)}, nil); err == nil || !strings.Contains(err.Error(), `"h"`) {
		t.Errorf("a schema that is not JSON: %v", err)
	}
}

// TestRefBomb: a hostile upstream server's schema whose $refs double at
// each level would inline to 2^40 nodes. The conversion stops at a bound
// and says so, instead of eating the machine.
func TestRefBomb(t *testing.T) {
	var defs []string
	for i := 0; i < 40; i++ {
		defs = append(defs, fmt.Sprintf(`"d%d":{"type":"object","properties":{"a":{"$ref":"#/$defs/d%d"},"b":{"$ref":"#/$defs/d%d"}}}`, i, i+1, i+1))
	}
	defs = append(defs, `"d40":{"type":"string"}`)
	schema := `{"type":"object","properties":{"x":{"$ref":"#/$defs/d0"}},"$defs":{` + strings.Join(defs, ",") + `}}`
	for _, f := range provider.Formats() {
		done := make(chan struct{})
		var ts *provider.Toolset
		var err error
		go func() {
			defer close(done)
			ts, err = provider.Convert(f, []tool.Definition{def("bomb", schema)}, nil)
		}()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			t.Fatalf("%s: converting a $ref bomb did not end", f)
		}
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if f == provider.MCP {
			continue
		}
		if len(ts.Warnings) != 1 || !strings.Contains(ts.Warnings[0].Reason, "too large") {
			t.Errorf("%s: warnings %v, want one saying the schema is too large", f, ts.Warnings)
		}
		out, _ := json.Marshal(ts)
		if len(out) > 1<<20 {
			t.Errorf("%s: %d bytes of tools", f, len(out))
		}
	}
}

// TestRequiredOneOf: a union whose branches only say which properties are
// required ("a path or a URL") stays a constraint of the object, in its
// description, so that the tool is still strict and its properties are
// still described.
func TestRequiredOneOf(t *testing.T) {
	schema := `{"type":"object","properties":{"path":{"type":"string"},"url":{"type":"string"}},
		"oneOf":[{"required":["path"]},{"required":["url"]}]}`
	for _, f := range []provider.Format{provider.OpenAI, provider.Anthropic, provider.Gemini} {
		ts, out := convert(t, f, def("fetch", schema))
		if len(ts.Warnings) > 0 {
			t.Errorf("%s: %v", f, ts.Warnings)
		}
		if !strings.Contains(out, `one of these holds: [{\"required\":[\"path\"]},{\"required\":[\"url\"]}]`) ||
			!strings.Contains(out, `"url":{`) {
			t.Errorf("%s: %s", f, out)
		}
	}
}
