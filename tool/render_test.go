package tool_test

import (
	"reflect"
	"testing"

	"github.com/lathe-tools/lathe/tool"
)

func TestResultFor(t *testing.T) {
	type point struct{ X, Y int }
	cases := []struct {
		in         any
		text       string
		structured string
	}{
		{"plain", "plain", ""},
		{point{1, 2}, `{"X":1,"Y":2}`, `{"X":1,"Y":2}`},
		{&point{3, 4}, `{"X":3,"Y":4}`, `{"X":3,"Y":4}`},
		{[]int{1, 2}, `[1,2]`, ""}, // structured content is an object, by MCP's rule
		{7, "7", ""},
		{tool.TextResult("as is"), "as is", ""},
		{(*tool.Result)(nil), "", ""},
	}
	for _, c := range cases {
		r, err := tool.ResultFor(c.in)
		if err != nil {
			t.Fatalf("%#v: %v", c.in, err)
		}
		if r.Text() != c.text || string(r.Structured) != c.structured {
			t.Errorf("%#v: text %q structured %q, want %q and %q", c.in, r.Text(), r.Structured, c.text, c.structured)
		}
	}
	if _, err := tool.ResultFor(make(chan int)); err == nil {
		t.Error("a channel rendered without error")
	}
}

func TestStructuredType(t *testing.T) {
	type s struct{ A int }
	for typ, want := range map[reflect.Type]bool{
		reflect.TypeFor[s]():            true,
		reflect.TypeFor[*s]():           true,
		reflect.TypeFor[string]():       false,
		reflect.TypeFor[[]s]():          false,
		reflect.TypeFor[tool.Result]():  false,
		reflect.TypeFor[*tool.Result](): false,
	} {
		if got := tool.StructuredType(typ); got != want {
			t.Errorf("%v: %v, want %v", typ, got, want)
		}
	}
}
