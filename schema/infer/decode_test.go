package infer

import (
	"strings"
	"testing"
)

func TestUnmarshalWholeNumbers(t *testing.T) {
	type nested struct {
		N []int8 `json:"n"`
	}
	type in struct {
		Limit int     `json:"limit"`
		Big   uint64  `json:"big"`
		F     float64 `json:"f"`
		Any   any     `json:"any"`
		Deep  nested  `json:"deep"`
	}
	var got in
	err := Unmarshal([]byte(`{"limit":1.0,"big":1.8446744073709551615e19,"f":2.5,"any":3.0,"deep":{"n":[-0.0,1e2]}}`), &got)
	if err != nil {
		t.Fatal(err)
	}
	if got.Limit != 1 || got.Big != 18446744073709551615 || got.F != 2.5 || got.Deep.N[0] != 0 || got.Deep.N[1] != 100 {
		t.Fatalf("got %+v", got)
	}

	for _, tc := range []struct{ args, want string }{
		{`{"limit":1.5}`, "/limit: number 1.5 does not fit the Go type int"},
		{`{"deep":{"n":[1e3]}}`, "/deep/n: number 1000 does not fit the Go type int8"},
		{`{"big":-1.0}`, "/big: number -1 does not fit the Go type uint64"},
		{`{"limit":1e999}`, "/limit: number 1e999 does not fit the Go type int"},
		{`{"limit":"1"}`, "/limit: a JSON string does not fit the Go type int"},
	} {
		var v in
		err := Unmarshal([]byte(tc.args), &v)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Unmarshal(%s) = %v, want an error containing %q", tc.args, err, tc.want)
		}
	}
}
