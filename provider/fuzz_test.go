package provider_test

import (
	"encoding/json"
	"testing"

	"github.com/lathe-tools/lathe/provider"
	"github.com/lathe-tools/lathe/tool"
)

// FuzzConvert feeds random schemas and arguments: Convert never panics and
// never hangs, what it makes keeps the provider's rules, and resolving a
// call leaves its arguments one JSON value.
func FuzzConvert(f *testing.F) {
	for _, s := range []string{
		`{"type":"object","properties":{"a":{"type":"string"},"b":{"type":["integer","null"]}},"required":["a"]}`,
		`{"type":"object","properties":{"x":{"$ref":"#/$defs/n"}},"$defs":{"n":{"type":"object","properties":{"k":{"$ref":"#/$defs/n"}}}}}`,
		`{"anyOf":[{"type":"object"},{"type":"string"}]}`,
		`{"type":"object","properties":{"m":{"type":"object","additionalProperties":{"type":"number"}}}}`,
		`{"type":"object","allOf":[{"properties":{"a":{"const":1}}},{"properties":{"b":{"enum":[null,"x",2.5]}}}]}`,
		`true`, `{}`, `[]`,
	} {
		f.Add([]byte(s), []byte(`{"a":null,"b":null,"x":{"k":null}}`))
	}
	f.Fuzz(func(t *testing.T, schema, args []byte) {
		if !json.Valid(schema) {
			return
		}
		for _, format := range provider.Formats() {
			ts, err := provider.Convert(format, []tool.Definition{{Name: "t", InputSchema: schema}}, nil)
			if err != nil {
				continue
			}
			out, err := json.Marshal(ts)
			if err != nil {
				t.Fatalf("%s: %v", format, err)
			}
			for _, v := range violations(format, out) {
				t.Errorf("%s: %s\n%s\n%s", format, v, schema, out)
			}
			calls := []*tool.Call{{Name: ts.WireName("t"), Arguments: args}}
			ts.Resolve(calls)
			if json.Valid(args) && !json.Valid(calls[0].Arguments) {
				t.Errorf("%s: arguments %s became %s", format, args, calls[0].Arguments)
			}
		}
	})
}

// FuzzParseCalls feeds random model output: ParseCalls never panics, and
// every call it returns has a name some provider allows and arguments that
// are present.
func FuzzParseCalls(f *testing.F) {
	for _, s := range []string{
		`{"choices":[{"message":{"tool_calls":[{"id":"c","type":"function","function":{"name":"a","arguments":"{}"}}]}}]}`,
		`{"candidates":[{"content":{"parts":[{"text":"x"},{"functionCall":{"name":"a","args":{}}}]}}]}`,
		`{"type":"message","content":[{"type":"tool_use","id":"t","name":"a","input":{}}]}`,
		`{"object":"response","output":[{"type":"function_call","call_id":"c","name":"a","arguments":""}]}`,
		`[{"name":"a"}]`, `{"content":"text"}`, `{"role":"assistant"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		calls, _, err := provider.ParseCalls(data)
		if err != nil {
			return
		}
		for _, c := range calls {
			if c.Name == "" || len(c.Arguments) == 0 {
				t.Errorf("call %+v", c)
			}
			for _, r := range c.Name {
				if r < 0x21 || r > 0x7e {
					t.Errorf("name %q", c.Name)
				}
			}
		}
	})
}
