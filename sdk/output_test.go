package sdk_test

import (
	"context"
	"encoding/json"
	"math/rand"
	"reflect"
	"strings"
	"testing"
	"testing/quick"

	"github.com/lathe-tools/lathe/schema"
	"github.com/lathe-tools/lathe/schema/infer"
	"github.com/lathe-tools/lathe/sdk"
	"github.com/lathe-tools/lathe/tool"
)

type leaf struct {
	Tags  []string          `json:"tags"`
	Count *int              `json:"count"`
	Attrs map[string]string `json:"attrs"`
}

type Embedded struct {
	Notes []string `json:"notes"`
}

type report struct {
	Embedded
	Name     string             `json:"name"`
	Lines    []int              `json:"lines"`
	Bytes    []byte             `json:"bytes"`
	Scores   map[string]float64 `json:"scores"`
	Leaf     *leaf              `json:"leaf"`
	Leaves   []leaf             `json:"leaves"`
	ByName   map[string]leaf    `json:"by_name"`
	Nested   [][]string         `json:"nested"`
	Grid     [2][]int           `json:"grid"`
	Optional []string           `json:"optional,omitempty"`
	Zeroable map[string]int     `json:"zeroable,omitzero"`
	PtrList  []*leaf            `json:"ptr_list"`
}

// TestOutputFitsItsOwnSchema is a property test: whatever value of these
// types a tool returns, the zero value and random ones with nil slices,
// maps and pointers at any depth, the structured output the SDK sends must
// validate against the output schema the SDK infers from the same type. A
// nil slice once went out as null where the schema requires an array.
func TestOutputFitsItsOwnSchema(t *testing.T) {
	check(t, reflect.TypeFor[report]())
	check(t, reflect.TypeFor[leaf]())
	check(t, reflect.TypeFor[pointOut]())
}

func check(t *testing.T, typ reflect.Type) {
	t.Helper()
	raw, err := infer.ForType(typ)
	if err != nil {
		t.Fatal(err)
	}
	s, err := schema.Compile(raw)
	if err != nil {
		t.Fatalf("%s: %v", typ, err)
	}
	rnd := rand.New(rand.NewSource(1))
	values := []reflect.Value{reflect.New(typ).Elem()}
	for range 200 {
		v, ok := quick.Value(typ, rnd)
		if !ok {
			t.Fatalf("cannot generate a %s", typ)
		}
		nilSome(v, rnd)
		values = append(values, v)
	}
	for _, v := range values {
		before, _ := json.Marshal(v.Interface())
		r, err := tool.ResultFor(v.Interface())
		if err != nil {
			t.Fatal(err)
		}
		after, _ := json.Marshal(v.Interface())
		if string(before) != string(after) {
			t.Fatalf("rendering changed the tool's own value: %s became %s", before, after)
		}
		d, err := schema.Decode(r.Structured)
		if err != nil {
			t.Fatalf("%s: %v", r.Structured, err)
		}
		if err := s.Validate(d); err != nil {
			t.Fatalf("the output %s breaks the schema %s inferred from %s: %v", r.Structured, raw, typ, err)
		}
	}
}

// nilSome sets about a third of the slices, maps and pointers in v to nil.
func nilSome(v reflect.Value, rnd *rand.Rand) {
	switch v.Kind() {
	case reflect.Pointer:
		if !v.IsNil() {
			nilSome(v.Elem(), rnd)
		}
	case reflect.Slice, reflect.Array:
		for i := range v.Len() {
			nilSome(v.Index(i), rnd)
		}
	case reflect.Map:
		for it := v.MapRange(); it.Next(); {
			e := reflect.New(it.Value().Type()).Elem()
			e.Set(it.Value())
			nilSome(e, rnd)
			v.SetMapIndex(it.Key(), e)
		}
	case reflect.Struct:
		for i := range v.NumField() {
			f := v.Field(i)
			if !f.CanSet() {
				continue
			}
			switch f.Kind() {
			case reflect.Slice, reflect.Map, reflect.Pointer:
				if rnd.Intn(3) == 0 {
					f.SetZero()
					continue
				}
			}
			nilSome(f, rnd)
		}
	}
}

// TestNilSliceThroughTheSDK: a tool that leaves a slice nil answers with an
// empty array over the protocol, not null.
func TestNilSliceThroughTheSDK(t *testing.T) {
	list := sdk.Func(sdk.Definition{Name: "list"}, func(context.Context, struct{}) (report, error) {
		return report{Name: "none"}, nil
	})
	m := handle(t, `{"protocol":1,"action":"run","tool":"list","arguments":{}}`, list)
	st, _ := m["structured"].(map[string]any)
	if lines, ok := st["lines"].([]any); !ok || len(lines) != 0 {
		t.Fatalf("lines = %#v, want []", st["lines"])
	}
	if _, ok := st["optional"]; ok {
		t.Fatalf("an omitempty field was sent: %v", st)
	}
}

// TestWholeNumberArgumentsThroughTheSDK: JSON Schema counts 2.0 as an
// integer, so lathe passes it; the SDK decodes it into an int field.
func TestWholeNumberArgumentsThroughTheSDK(t *testing.T) {
	m := handle(t, `{"protocol":1,"action":"run","tool":"sum","arguments":{"x":2.0,"y":3e0}}`, sumTool)
	if m["type"] != "success" || m["content"] != `{"sum":5}` {
		t.Fatalf("answer = %v", m)
	}
	m = handle(t, `{"protocol":1,"action":"run","tool":"sum","arguments":{"x":2.5}}`, sumTool)
	if m["type"] != "error" || !strings.Contains(m["message"].(string), "/x: number 2.5 does not fit the Go type int") {
		t.Fatalf("answer = %v", m)
	}
}
