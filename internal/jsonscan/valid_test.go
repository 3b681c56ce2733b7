package jsonscan

import (
	"encoding/json"
	"strings"
	"testing"
)

// validCases are texts json.Valid takes and refuses: every kind of value,
// escapes, numbers, white space, and what is almost JSON.
var validCases = []string{
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":{"a":[1,{"b":"}"}]}}}`,
	`{}`, `[]`, `{ }`, `[ ]`, ` {"a" : [ 1 , 2.5e-3 , -0 , true , false , null , "s" ] } `, `"s"`, `0`, `-1.5E+10`,
	`"\"\\\/\b\f\n\r\t\u00e9\uD800"`, "\"\xff\xfe\"", "\"\x7f\"", `"\u00G0"`, `"\x"`, `"\u12"`, "\"\x1f\"", "\"a\tb\"",
	`01`, `1.`, `.5`, `+1`, `-`, `1e`, `1e+`, `1true`, `[1true]`, `[1,]`, `[,1]`, `{"a":1,}`, `{"a"}`, `{"a":}`,
	`{1:2}`, `{"a":1 "b":2}`, `[1 2]`, `tru`, `truex`, `nul`, `nulll`, `falsey`, `[}`, `{]`, `"abc`, ``, ` `,
	`1 2`, "\t\n\r 7 \r\n\t", "\v7", `[[[]]]`, `[[[]]`, `{"a":{"b":{"c":[]}}}`, `{"a":{"b":{"c":[]}}`, "\u00a07",
}

func TestValid(t *testing.T) {
	for _, c := range validCases {
		if got, want := Valid([]byte(c)), json.Valid([]byte(c)); got != want {
			t.Errorf("Valid(%q) = %v, json.Valid: %v", c, got, want)
		}
	}
	// encoding/json's bound on nesting, at and past it.
	for _, depth := range []int{maxDepth - 1, maxDepth, maxDepth + 1} {
		for _, c := range []string{
			strings.Repeat("[", depth) + strings.Repeat("]", depth),
			strings.Repeat(`{"a":`, depth-1) + "[]" + strings.Repeat("}", depth-1),
		} {
			if got, want := Valid([]byte(c)), json.Valid([]byte(c)); got != want {
				t.Errorf("Valid of %d levels (%.10s…) = %v, json.Valid: %v", depth, c, got, want)
			}
		}
	}
}

// FuzzValid holds Valid to json.Valid on any bytes.
func FuzzValid(f *testing.F) {
	for _, c := range validCases {
		f.Add([]byte(c))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if got, want := Valid(b), json.Valid(b); got != want {
			t.Fatalf("Valid(%q) = %v, json.Valid: %v", b, got, want)
		}
	})
}

func BenchmarkValid(b *testing.B) {
	msg := []byte(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"message":"hello"}}}`)
	b.Run("jsonscan", func(b *testing.B) {
		for b.Loop() {
			Valid(msg)
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		for b.Loop() {
			json.Valid(msg)
		}
	})
}
