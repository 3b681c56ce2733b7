package server

import (
	"encoding/json"
	"maps"
	"testing"
	"unicode/utf8"
)

// FuzzReadMessage: readMessage makes of an object what json.Unmarshal
// makes of it, and refuses what is not an object.
func FuzzReadMessage(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":{"a":[1,{"b":"}"}]}}}`,
		`{"id":1,"id":"two"}`,
		`{"me\u0074hod":"tools/call","Method":"x"}`,
		` { "a" : null , "b":true}`,
		`{}`, `[]`, `null`, `"s"`, `{"a":1}x`, `{"a":}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		got, ok := readMessage(b)
		var want message
		err := json.Unmarshal(b, &want)
		if err != nil || want == nil {
			if ok {
				t.Fatalf("readMessage took %q, which json.Unmarshal makes no object of", b)
			}
			return
		}
		if !utf8.Valid(b) {
			// encoding/json mends bad UTF-8 in keys; no name lathe
			// looks for has any.
			return
		}
		if !ok {
			t.Fatalf("readMessage refused %q", b)
		}
		if !maps.EqualFunc(got, want, func(a, b json.RawMessage) bool { return string(a) == string(b) }) {
			t.Fatalf("%q:\nreadMessage  %q\njson         %q", b, got, want)
		}
	})
}
