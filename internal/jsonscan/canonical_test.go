package jsonscan

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

// checkMarshaled holds Marshaled to encoding/json: for text it accepts it
// must return what Unmarshal into an any and Marshal give, and the keys
// and strings it reports must be at least those Unmarshal decodes (it also
// reports those of members a later equal key hides). It returns
// Marshaled's answer, or "" for text it refuses.
func checkMarshaled(t *testing.T, s string) string {
	t.Helper()
	var keys, strs []string
	out, ok := Marshaled(s,
		func(k string) bool { keys = append(keys, k); return true },
		func(v string) bool { strs = append(strs, v); return true })
	if !ok {
		return ""
	}
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("Marshaled(%q) accepted, but Unmarshal: %v", s, err)
	}
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("Marshaled(%q) accepted, but Marshal: %v", s, err)
	}
	if string(b) != out {
		t.Fatalf("Marshaled(%q) = %q, the round trip gives %q", s, out, b)
	}
	var wantKeys, wantStrs []string
	var walk func(any)
	walk = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			for k, e := range x {
				wantKeys = append(wantKeys, k)
				walk(e)
			}
		case []any:
			for _, e := range x {
				walk(e)
			}
		case string:
			wantStrs = append(wantStrs, x)
		}
	}
	walk(v)
	if !covers(keys, wantKeys) || !covers(strs, wantStrs) {
		t.Fatalf("Marshaled(%q) reported keys %q and strings %q, Unmarshal decodes %q and %q", s, keys, strs, wantKeys, wantStrs)
	}
	return out
}

// covers reports whether every element of want is in got, as often.
func covers(got, want []string) bool {
	n := make(map[string]int)
	for _, g := range got {
		n[g]++
	}
	for _, w := range want {
		if n[w]--; n[w] < 0 {
			return false
		}
	}
	return true
}

// canonicalCases are texts with what Marshaled must answer for them.
var canonicalCases = []struct {
	s    string
	want string // "" when refused, "=" when s itself
}{
	{`{"text":"hello"}`, "="},
	{`{"count":3,"path":"src/main.go","text":"hello"}`, "="},
	{`{"a":true,"b":false,"c":null,"d":[],"e":{},"f":[1,"x",{"g":-2}]}`, "="},
	{`"plain"`, "="},
	{`0`, "="},
	{`-0`, "="},
	{`-0.0`, ""},
	{`[]`, "="},
	{`{}`, "="},
	{`123456789012345`, "="},
	{`-123456789012345`, "="},
	{`1.5`, "="},
	{`0.000001`, "="},
	{`1e-7`, "="},
	{`1e+21`, "="},
	{`100000000000000000000`, "="},
	{`9007199254740993`, ""}, // a float64 holds it as ...992
	{`1e2`, ""},
	{`1E+21`, ""},
	{`1e-07`, ""},
	{`1.50`, ""},
	{`01`, ""},
	{`+1`, ""},
	{`.5`, ""},
	{`1.`, ""},
	{`1e400`, ""}, // Unmarshal refuses it
	{`-`, ""},
	{`"line\nbreak \"quoted\" back\\slash tab\t\b\f\r"`, "="},
	{`"\u0000\u001f\u003c\u003e\u0026\u2028\u2029"`, "="},
	{`"\u001F"`, ""},
	{`"\u000a"`, ""},
	{`"\/"`, ""},
	{`"\u0041"`, ""},
	{`"\u00e9"`, ""},
	{`"\ud83d\ude00"`, ""},
	{`"\ufffd"`, ""},
	{`"é 😀 ` + "\ufffd" + `"`, "="},
	{"\"\u2028\"", ""},
	{"\"\u2029\"", ""},
	{`"<b>&amp;</b>"`, ""},
	{"\"\xff\"", ""},
	{"\"\xed\xa0\x80\"", ""}, // a UTF-16 surrogate written in UTF-8
	{"\"\x01\"", ""},
	{"\"\x7f\"", "="},
	{`{"b":1,"a":2}`, `{"a":2,"b":1}`},
	{`{"a":1,"a":2}`, `{"a":2}`},
	{`{"a":1,"ab":2,"b":3}`, "="},
	{`{"\u003c":1,"a":2}`, "="},
	{`{"a":{"b":1,"a":2}}`, `{"a":{"a":2,"b":1}}`},
	{`{"b":1,"c":{"a":2},"d":3}`, "="},
	{` {"a":1}`, `{"a":1}`},
	{`{"a":1} `, `{"a":1}`},
	{`{"a": 1}`, `{"a":1}`},
	{`[1, 2]`, `[1,2]`},
	{"{ \"z\" :\t[ 1 , { \"y\":2, \"x\":3 } ] ,\r\n \"a\" : { } }\n", `{"a":{},"z":[1,{"x":3,"y":2}]}`},
	{`{"c":1,"b":2,"c":3,"a":4,"b":5}`, `{"a":4,"b":5,"c":3}`},
	{`{"b":{"d":1,"c":2},"a":{"f":[{"h":1,"g":2}],"e":3}}`, `{"a":{"e":3,"f":[{"g":2,"h":1}]},"b":{"c":2,"d":1}}`},
	{`{"b":{"y":1,"x":2,"x":3},"a":0}`, `{"a":0,"b":{"x":3,"y":1}}`},
	{`{"a":{"k":1,"k":2},"a":{"j":3}}`, `{"a":{"j":3}}`},
	{`{"text":"he said \"hi\"","a\u003cb":"\n"}`, `{"a\u003cb":"\n","text":"he said \"hi\""}`},
	{`{"é":1,"e":2,"z":3}`, `{"e":2,"z":3,"é":1}`},
	{`[ ]`, `[]`},
	{`{ }`, `{}`},
	{`{"a":1 ,}`, ""},
	{`{"b":1, "a"}`, ""},
	{`{"b":1, "a":2`, ""},
	{`{"a":1}]`, ""},
	{"\v1", ""},
	{`{"a":1}{}`, ""},
	{`{"a":1,}`, ""},
	{`[1,]`, ""},
	{`[1}`, ""},
	{`{"a"}`, ""},
	{`{"a":}`, ""},
	{`{1:2}`, ""},
	{`"unterminated`, ""},
	{`tru`, ""},
	{`nul`, ""},
	{`truex`, ""},
	{``, ""},
	{strings.Repeat("[", 1100) + strings.Repeat("]", 1100), ""},
	{strings.Repeat("[", 999) + strings.Repeat("]", 999), "="},
	{strings.Repeat(`{"b":`, 900) + "1" + strings.Repeat(`,"a":1}`, 900), ""}, // sorting would move too much
	{strings.Repeat(`{"b":`, 3) + "1" + strings.Repeat(`,"a":1}`, 3), `{"a":1,"b":{"a":1,"b":{"a":1,"b":1}}}`},
}

// TestMarshaled checks Marshaled's answer for each case, and the round
// trip's.
func TestMarshaled(t *testing.T) {
	for _, c := range canonicalCases {
		want := c.want
		if want == "=" {
			want = c.s
		}
		if got := checkMarshaled(t, c.s); got != want {
			t.Errorf("Marshaled(%q) = %q, want %q", c.s, got, want)
		}
	}
}

// TestMarshaledStops: Marshaled stops with false at the first key or
// string its callers refuse.
func TestMarshaledStops(t *testing.T) {
	const s = `{"a":"x","b":["y","z"]}`
	var seen []string
	if _, ok := Marshaled(s, func(k string) bool { seen = append(seen, k); return k != "b" }, func(string) bool { return true }); ok {
		t.Errorf("Marshaled(%s) accepted with key b refused", s)
	}
	if !slices.Equal(seen, []string{"a", "b"}) {
		t.Errorf("keys seen %q, want a then b", seen)
	}
	seen = nil
	if _, ok := Marshaled(s, func(string) bool { return true }, func(v string) bool { seen = append(seen, v); return v != "y" }); ok {
		t.Errorf("Marshaled(%s) accepted with string y refused", s)
	}
	if !slices.Equal(seen, []string{"x", "y"}) {
		t.Errorf("strings seen %q, want x then y", seen)
	}
}

func FuzzMarshaled(f *testing.F) {
	for _, c := range canonicalCases {
		f.Add(c.s)
	}
	f.Fuzz(func(t *testing.T, s string) { checkMarshaled(t, s) })
}
