package jsonscan

import (
	"bytes"
	"encoding/json"
	"slices"
	"testing"
	"unicode/utf8"
	"unsafe"
)

// idCases are the seeds of the tests of PlainString and Number: strings
// with and without escapes, invalid UTF-8, numbers JSON takes and those
// only strconv.ParseFloat would.
var idCases = []string{
	`"abc"`, `""`, `"2.0"`, `"tools/call"`, `"a\"b"`, `"a\\b"`, `"\u0041"`, `"é"`, "\"\xff\"", "\"\xe2\x80\xa8\"",
	`"<&>"`, "\"a\tb\"", `"a`, `"`, `a"`, ` "a"`, `"a" `, `"a""b"`, `null`, `true`, `{}`, `[]`,
	`0`, `-0`, `1`, `-1`, `12.5`, `1e3`, `1E+3`, `1e-3`, `1e400`, `-1e400`, `1e-400`, `123456789012345678901234567890`,
	`01`, `1.`, `.5`, `+1`, `-`, `1e`, `1e+`, `0x10`, `Inf`, `NaN`, `1_000`, ` 1`, `1 `, `1.5e3.2`, `--1`, `2.`,
}

func TestPlainString(t *testing.T) {
	for _, c := range []struct {
		in   string
		want string
		ok   bool
	}{
		{`"abc"`, "abc", true},
		{`""`, "", true},
		{`"é"`, "é", true},
		{"\"\xe2\x80\xa8\"", "\u2028", true},
		{`"<&>"`, "<&>", true},
		{`"a\"b"`, "", false},
		{`"\u0041"`, "", false},
		{"\"\xff\"", "", false},
		{"\"a\tb\"", "", false},
		{` "a"`, "", false},
		{`"a" `, "", false},
		{`"`, "", false},
		{`null`, "", false},
		{`1`, "", false},
	} {
		got, ok := PlainString([]byte(c.in))
		if ok != c.ok || string(got) != c.want {
			t.Errorf("PlainString(%q) = %q, %v; want %q, %v", c.in, got, ok, c.want, c.ok)
		}
	}
}

func TestNumber(t *testing.T) {
	for _, c := range []struct {
		in string
		ok bool
	}{
		{`0`, true}, {`-0`, true}, {`12.5`, true}, {`1E+3`, true}, {`1e-400`, true}, {`1e400`, true},
		{`01`, false}, {`1.`, false}, {`.5`, false}, {`+1`, false}, {`-`, false}, {`1e`, false},
		{`0x10`, false}, {`Inf`, false}, {`NaN`, false}, {`1_000`, false}, {` 1`, false}, {`1 `, false},
		{`""`, false}, {``, false},
	} {
		if got := Number([]byte(c.in)); got != c.ok {
			t.Errorf("Number(%q) = %v, want %v", c.in, got, c.ok)
		}
	}
}

// FuzzPlainString checks that what PlainString takes decodes with
// encoding/json to the bytes it returns, and that it takes every string
// without escapes that encoding/json decodes to its own bytes.
func FuzzPlainString(f *testing.F) {
	for _, c := range idCases {
		f.Add([]byte(c))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		got, ok := PlainString(b)
		var want string
		err := json.Unmarshal(b, &want)
		if ok && (err != nil || want != string(got)) {
			t.Fatalf("PlainString(%q) = %q; encoding/json: %q, %v", b, got, want, err)
		}
		plain := err == nil && len(b) >= 2 && b[0] == '"' && b[len(b)-1] == '"' &&
			!bytes.ContainsRune(b, '\\') && utf8.Valid(b)
		if plain != ok {
			t.Fatalf("PlainString(%q) reports %v, want %v", b, ok, plain)
		}
	})
}

// FuzzNumber checks Number against encoding/json's grammar: a valid JSON
// text that begins and ends as a number does.
func FuzzNumber(f *testing.F) {
	for _, c := range idCases {
		f.Add([]byte(c))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		digit := func(c byte) bool { return c >= '0' && c <= '9' }
		want := json.Valid(b) && len(b) > 0 && (b[0] == '-' || digit(b[0])) && digit(b[len(b)-1])
		if got := Number(b); got != want {
			t.Fatalf("Number(%q) = %v, want %v", b, got, want)
		}
	})
}

type member struct {
	key    string
	vs, ve int
}

// membersOf is what f of Members or MembersKnown is called with, and the
// error.
func membersOf(scan func(f func(key string, vs, ve int)) error) ([]member, error) {
	var out []member
	err := scan(func(key string, vs, ve int) { out = append(out, member{key, vs, ve}) })
	return out, err
}

var knownKeys = []string{"jsonrpc", "id", "method", "params", "name"}

// FuzzMembersKnown checks that MembersKnown reads every object as Members
// does.
func FuzzMembersKnown(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"}}`,
		`{"i\u0064":1,"id":2,"idx":3,"i":4,"":5}`, ` { "name" : [1,{"a":"}"}] } `, "{\"\xff\":1}",
		`{"a":1,}`, `{"a"}`, `[]`, `{"a\x":1}`, `{`,
	} {
		f.Add([]byte(s), 0)
	}
	f.Fuzz(func(t *testing.T, b []byte, i int) {
		if i < 0 || i > len(b) {
			i = 0
		}
		want, werr := membersOf(func(f func(string, int, int)) error { return Members(b, i, f) })
		got, gerr := membersOf(func(f func(string, int, int)) error { return MembersKnown(b, i, knownKeys, f) })
		if (gerr == nil) != (werr == nil) || !slices.Equal(got, want) {
			t.Fatalf("MembersKnown(%q, %d) = %v, %v; Members: %v, %v", b, i, got, gerr, want, werr)
		}
	})
}

func TestMembersKnownSharesKeys(t *testing.T) {
	b := []byte(`{"id":1,"i\u0064":2,"idx":3}`)
	got, err := membersOf(func(f func(string, int, int)) error { return MembersKnown(b, 0, knownKeys, f) })
	if err != nil || len(got) != 3 {
		t.Fatalf("MembersKnown(%s) = %v, %v", b, got, err)
	}
	if unsafe.StringData(got[0].key) != unsafe.StringData(knownKeys[1]) {
		t.Errorf("the key %q is a copy, not the known one", got[0].key)
	}
	if got[1].key != "id" || got[2].key != "idx" {
		t.Errorf("keys %q and %q, want id and idx", got[1].key, got[2].key)
	}
}
