package jsonscan

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

// checkCanonical holds Canonical to encoding/json: text it accepts must come
// back unchanged from Unmarshal into an any and Marshal, and the keys and
// strings it reports must be those Unmarshal decodes. It returns
// Canonical's answer.
func checkCanonical(t *testing.T, s string) bool {
	t.Helper()
	var keys, strs []string
	ok := Canonical(s,
		func(k string) bool { keys = append(keys, k); return true },
		func(v string) bool { strs = append(strs, v); return true })
	if !ok {
		return false
	}
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("Canonical(%q) = true, but Unmarshal: %v", s, err)
	}
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("Canonical(%q) = true, but Marshal: %v", s, err)
	}
	if string(b) != s {
		t.Fatalf("Canonical(%q) = true, but the round trip gives %q", s, b)
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
	for _, l := range [][]string{keys, strs, wantKeys, wantStrs} {
		slices.Sort(l)
	}
	if !slices.Equal(keys, wantKeys) || !slices.Equal(strs, wantStrs) {
		t.Fatalf("Canonical(%q) reported keys %q and strings %q, Unmarshal decodes %q and %q", s, keys, strs, wantKeys, wantStrs)
	}
	return true
}

// canonicalCases are texts Canonical must accept (true) or reject (false):
// each rejected one comes back changed from the round trip, or is not
// JSON at all.
var canonicalCases = []struct {
	s    string
	want bool
}{
	{`{"text":"hello"}`, true},
	{`{"count":3,"path":"src/main.go","text":"hello"}`, true},
	{`{"a":true,"b":false,"c":null,"d":[],"e":{},"f":[1,"x",{"g":-2}]}`, true},
	{`"plain"`, true},
	{`0`, true},
	{`-0`, true},
	{`-0.0`, false},
	{`[]`, true},
	{`{}`, true},
	{`123456789012345`, true},
	{`-123456789012345`, true},
	{`1.5`, true},
	{`0.000001`, true},
	{`1e-7`, true},
	{`1e+21`, true},
	{`100000000000000000000`, true},
	{`9007199254740993`, false}, // a float64 holds it as ...992
	{`1e2`, false},
	{`1E+21`, false},
	{`1e-07`, false},
	{`1.50`, false},
	{`01`, false},
	{`+1`, false},
	{`.5`, false},
	{`1.`, false},
	{`1e400`, false}, // Unmarshal refuses it
	{`-`, false},
	{`"line\nbreak \"quoted\" back\\slash tab\t\b\f\r"`, true},
	{`"\u0000\u001f\u003c\u003e\u0026\u2028\u2029"`, true},
	{`"\u001F"`, false},
	{`"\u000a"`, false},
	{`"\/"`, false},
	{`"\u0041"`, false},
	{`"\u00e9"`, false},
	{`"\ud83d\ude00"`, false},
	{`"\ufffd"`, false},
	{`"é 😀 ` + "\ufffd" + `"`, true},
	{"\"\u2028\"", false},
	{"\"\u2029\"", false},
	{`"<b>&amp;</b>"`, false},
	{"\"\xff\"", false},
	{"\"\xed\xa0\x80\"", false}, // a UTF-16 surrogate written in UTF-8
	{"\"\x01\"", false},
	{"\"\x7f\"", true},
	{`{"b":1,"a":2}`, false},
	{`{"a":1,"a":2}`, false},
	{`{"a":1,"ab":2,"b":3}`, true},
	{`{"\u003c":1,"a":2}`, true},
	{`{"a":{"b":1,"a":2}}`, false},
	{`{"b":1,"c":{"a":2},"d":3}`, true},
	{` {"a":1}`, false},
	{`{"a":1} `, false},
	{`{"a": 1}`, false},
	{`[1, 2]`, false},
	{`{"a":1}{}`, false},
	{`{"a":1,}`, false},
	{`[1,]`, false},
	{`[1}`, false},
	{`{"a"}`, false},
	{`{"a":}`, false},
	{`{1:2}`, false},
	{`"unterminated`, false},
	{`tru`, false},
	{`nul`, false},
	{`truex`, false},
	{``, false},
	{strings.Repeat("[", 1100) + strings.Repeat("]", 1100), false},
	{strings.Repeat("[", 999) + strings.Repeat("]", 999), true},
}

// TestCanonical checks Canonical's answer for each case against the round
// trip.
func TestCanonical(t *testing.T) {
	for _, c := range canonicalCases {
		if got := checkCanonical(t, c.s); got != c.want {
			t.Errorf("Canonical(%q) = %v, want %v", c.s, got, c.want)
		}
	}
}

// TestCanonicalStops: Canonical stops with false at the first key or
// string its callers refuse.
func TestCanonicalStops(t *testing.T) {
	const s = `{"a":"x","b":["y","z"]}`
	var seen []string
	if Canonical(s, func(k string) bool { seen = append(seen, k); return k != "b" }, func(string) bool { return true }) {
		t.Errorf("Canonical(%s) = true with key b refused", s)
	}
	if !slices.Equal(seen, []string{"a", "b"}) {
		t.Errorf("keys seen %q, want a then b", seen)
	}
	seen = nil
	if Canonical(s, func(string) bool { return true }, func(v string) bool { seen = append(seen, v); return v != "y" }) {
		t.Errorf("Canonical(%s) = true with string y refused", s)
	}
	if !slices.Equal(seen, []string{"x", "y"}) {
		t.Errorf("strings seen %q, want x then y", seen)
	}
}

func FuzzCanonical(f *testing.F) {
	for _, c := range canonicalCases {
		f.Add(c.s)
	}
	f.Fuzz(func(t *testing.T, s string) { checkCanonical(t, s) })
}
