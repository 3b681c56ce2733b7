package schema

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"
)

// stdDecode is what Decode must agree with: encoding/json with UseNumber.
func stdDecode(data []byte) (any, error) {
	if len(bytes.TrimLeft(data, " \t\r\n")) == 0 {
		return map[string]any{}, nil
	}
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, err
	}
	if _, err := d.Token(); err == nil || !errors.Is(err, io.EOF) {
		return nil, errors.New("trailing data")
	}
	return v, nil
}

func TestDecode(t *testing.T) {
	tests := []struct {
		in   string
		want any
	}{
		{``, map[string]any{}},
		{" \n\t", map[string]any{}},
		{`{}`, map[string]any{}},
		{`{"a":1,"b":[true,false,null],"c":{"d":"e"}}`, map[string]any{
			"a": json.Number("1"), "b": []any{true, false, nil}, "c": map[string]any{"d": "e"}}},
		{`[]`, []any{}},
		{`-0.5e+3`, json.Number("-0.5e+3")},
		{`"a\"b\\c\/d\b\f\n\r\t\u00e9\ud83d\ude00"`, "a\"b\\c/d\b\f\n\r\té😀"},
		{`"lone \ud800 surrogate"`, "lone \ufffd surrogate"},
		{`"\ud800\u0041"`, "\ufffdA"},
		{"\"bad \xff utf8\"", "bad \ufffd utf8"},
		{`{"a":1,"a":2}`, map[string]any{"a": json.Number("2")}},
		{` [ 1 , "x" ] `, []any{json.Number("1"), "x"}},
		{`9223372036854775808`, json.Number("9223372036854775808")},
	}
	for _, tt := range tests {
		got, err := Decode(json.RawMessage(tt.in))
		if err != nil {
			t.Errorf("Decode(%q): %v", tt.in, err)
			continue
		}
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("Decode(%q) = %#v, want %#v", tt.in, got, tt.want)
		}
	}
}

func TestDecodeErrors(t *testing.T) {
	tests := []struct {
		in     string
		offset int
	}{
		{`{`, 1},
		{`{"a":1,}`, 7},
		{`{"a" 1}`, 5},
		{`[1,2`, 4},
		{`[1 2]`, 3},
		{`{"a":tru}`, 8},
		{`01`, 1},
		{`1.`, 2},
		{`-`, 1},
		{`1e`, 2},
		{`"abc`, 4},
		{"\"a\tb\"", 2},
		{`"\x"`, 2},
		{`"\u12"`, 2},
		{`{} {}`, 3},
		{`{"a":1e1001}`, 5},
		{`{"a":` + strings.Repeat("1", 1001) + `}`, 5},
		{strings.Repeat("[", maxDepth+1), maxDepth},
	}
	for _, tt := range tests {
		_, err := Decode(json.RawMessage(tt.in))
		var se *SyntaxError
		if !errors.As(err, &se) {
			t.Errorf("Decode(%.20q): %v, want *SyntaxError", tt.in, err)
			continue
		}
		if se.Offset != tt.offset {
			t.Errorf("Decode(%.20q): offset %d, want %d (%v)", tt.in, se.Offset, tt.offset, err)
		}
		if !strings.Contains(err.Error(), "byte offset") {
			t.Errorf("error %q does not name the offset", err)
		}
	}
}

func TestDecodeAllowsBoundaryNumbers(t *testing.T) {
	for _, in := range []string{`1e1000`, `1E-1000`, `1e+0001000`, strings.Repeat("9", maxNumberLen)} {
		if _, err := Decode(json.RawMessage(in)); err != nil {
			t.Errorf("Decode(%.20s…): %v", in, err)
		}
	}
}

// FuzzDecode checks Decode against encoding/json: the same values for the
// same input, and errors for the same inputs.
func FuzzDecode(f *testing.F) {
	for _, s := range []string{``, `{}`, `{"a":[1,-2.5e3,true,null,"x\u00e9"]}`, `"\ud83d\ude00"`, `"\ud800x"`,
		"\"\xff\"", `[1,]`, `{"a":1 "b":2}`, `01`, `1e400`, ` 1 `, `"\/\b"`, `[[[]]]`, `{"":{}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := Decode(data)
		want, stdErr := stdDecode(data)
		var se *SyntaxError
		if errors.As(err, &se) && (strings.Contains(se.Msg, "exponent") || strings.Contains(se.Msg, "longer than") || strings.Contains(se.Msg, "nesting")) {
			return // limits encoding/json does not have
		}
		if (err == nil) != (stdErr == nil) {
			t.Fatalf("Decode(%q): err %v, encoding/json: %v", data, err, stdErr)
		}
		if err == nil && !reflect.DeepEqual(got, want) {
			t.Fatalf("Decode(%q) = %#v, encoding/json %#v", data, got, want)
		}
	})
}
