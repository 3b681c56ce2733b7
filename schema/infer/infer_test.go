package infer_test

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/lathe-tools/lathe/schema"
	"github.com/lathe-tools/lathe/schema/infer"
)

type readRange struct {
	From int `json:"from" jsonschema:"minimum=1"`
	To   int `json:"to,omitempty"`
}

type readOptions struct {
	Follow bool `json:"follow,omitempty" jsonschema:"default=true"`
}

type readArgs struct {
	Path    string      `json:"path" jsonschema:"description=File to read"`
	Mode    string      `json:"mode,omitempty" jsonschema:"enum=text,enum=binary,default=text"`
	Limit   int         `json:"limit,omitzero" jsonschema:"minimum=1,maximum=1000,default=100"`
	Note    string      `json:"note,omitempty" jsonschema_description:"Free text, commas allowed"`
	Options readOptions `json:"options"`
	Ranges  []readRange `json:"ranges,omitempty"`
	Skipped string      `json:"-"`
	hidden  string
}

func TestFor(t *testing.T) {
	got, err := infer.For[readArgs]()
	if err != nil {
		t.Fatal(err)
	}
	const want = `{` +
		`"properties":{` +
		`"path":{"type":"string","description":"File to read"},` +
		`"mode":{"type":"string","enum":["text","binary"],"default":"text"},` +
		`"limit":{"type":"integer","maximum":1000,"minimum":1,"default":100},` +
		`"note":{"type":"string","description":"Free text, commas allowed"},` +
		`"options":{"properties":{"follow":{"type":"boolean","default":true}},"additionalProperties":false,"type":"object"},` +
		`"ranges":{"items":{"properties":{"from":{"type":"integer","minimum":1},"to":{"type":"integer"}},"additionalProperties":false,"type":"object","required":["from"]},"type":"array"}` +
		`},` +
		`"additionalProperties":false,"type":"object","required":["path","options"]}`
	if string(got) != want {
		t.Errorf("For[readArgs]() =\n%s\nwant\n%s", got, want)
	}
	for _, bad := range []string{"$ref", "$defs", "$schema", "$id", "definitions"} {
		if strings.Contains(string(got), bad) {
			t.Errorf("schema contains %q", bad)
		}
	}
	if _, err := schema.Compile(got); err != nil {
		t.Errorf("inferred schema does not compile: %v", err)
	}
}

func TestForRoundTrip(t *testing.T) {
	// The inferred schema drives the pipeline: defaults fill, coercion
	// applies, and violations point into the struct's JSON form.
	raw, err := infer.For[readArgs]()
	if err != nil {
		t.Fatal(err)
	}
	s := schema.MustCompile(raw)
	v, err := schema.Decode(json.RawMessage(`{"path":"a.txt","options":{},"ranges":"[{\"from\":\"2\"}]"}`))
	if err != nil {
		t.Fatal(err)
	}
	v, _ = s.Coerce(v)
	v, _ = s.ApplyDefaults(v)
	if err := s.Validate(v); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	b, _ := json.Marshal(v)
	var args readArgs
	if err := json.Unmarshal(b, &args); err != nil {
		t.Fatal(err)
	}
	want := readArgs{Path: "a.txt", Mode: "text", Limit: 100, Options: readOptions{Follow: true}, Ranges: []readRange{{From: 2}}}
	if !reflect.DeepEqual(args, want) {
		t.Errorf("got %+v, want %+v", args, want)
	}
}

type treeNode struct {
	Kids []treeNode `json:"kids"`
}

type withNumber struct {
	N json.Number `json:"n"`
}

func TestForType(t *testing.T) {
	tests := []struct {
		name    string
		t       reflect.Type
		want    string
		wantErr string
	}{
		{"string", reflect.TypeFor[string](), `{"type":"string"}`, ""},
		{"slice", reflect.TypeFor[[]int](), `{"items":{"type":"integer"},"type":"array"}`, ""},
		{"pointer to struct", reflect.TypeFor[*readOptions](), `{"properties":{"follow":{"type":"boolean","default":true}},"additionalProperties":false,"type":"object"}`, ""},
		{"map", reflect.TypeFor[map[string]bool](), `{"additionalProperties":{"type":"boolean"},"type":"object"}`, ""},
		{"json.Number", reflect.TypeFor[withNumber](), `{"properties":{"n":{"type":"number"}},"additionalProperties":false,"type":"object","required":["n"]}`, ""},
		{"recursive", reflect.TypeFor[treeNode](), "", "contains itself"},
		{"channel", reflect.TypeFor[chan int](), "", "cannot infer a schema for chan int"},
		{"nil", nil, "", "nil type"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := infer.ForType(tt.t)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want it to contain %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
		})
	}
}
