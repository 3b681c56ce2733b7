package mcp

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// FuzzTextResult: whatever result the scanner reads, it reads as the SDK's
// decoding does; and it does read the plain ones.
func FuzzTextResult(f *testing.F) {
	for _, s := range []string{
		`{"content":[{"type":"text","text":"hi"}]}`,
		`{"content":[{"type":"text","text":"a\"b\u00e9"},{"text":"x","type":"text"}],"isError":true}`,
		`{"content":[],"isError":false}`,
		`{"content":[{"type":"text","text":"a","Text":"b"}]}`,
		`{"Content":[{"type":"text","text":"hi"}]}`,
		`{"content":[{"type":"image","data":"AA==","mimeType":"image/png"}]}`,
		`{"content":[{"type":"text","text":"hi"}],"structuredContent":{"a":1}}`,
		`{"content":[{"type":"text","text":"\xff"}]}`,
		`{"content":[{"type":"text","text":"a"}],"isError":null}`,
		`{"content":[{"type":"text","text":"a"}],"content":[{"type":"text","text":"b"}]}`,
		`{"content":[{"\u0074ype":"text","text":"esc"}]}`,
		`{"content":[{"type":"text"}]}`,
		`{"content":[{"type":"text","text":7}]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if !json.Valid(b) {
			return
		}
		got, ok := textResult(b)
		if !ok {
			return
		}
		var want sdk.CallToolResult
		if err := json.Unmarshal(b, &want); err != nil {
			t.Fatalf("the scanner read %s, which the SDK refuses: %v", b, err)
		}
		if !reflect.DeepEqual(got, &want) {
			g, _ := json.Marshal(got)
			w, _ := json.Marshal(&want)
			t.Fatalf("%s\nscanner %s\nSDK     %s", b, g, w)
		}
	})
}

// TestTextResultReadsPlainResults: the common results take the fast way.
func TestTextResultReadsPlainResults(t *testing.T) {
	for _, s := range []string{
		`{"content":[{"type":"text","text":"hi"}]}`,
		`{"content":[{"type":"text","text":"a\nb"},{"type":"text","text":""}],"isError":true}`,
	} {
		if _, ok := textResult([]byte(s)); !ok {
			t.Errorf("not read: %s", s)
		}
	}
	for _, s := range []string{
		`{"content":[{"type":"text","text":"a","annotations":{"priority":1}}]}`,
		`{"content":[{"type":"text","text":"hi"}],"_meta":{"k":1}}`,
		`{"content":[{"type":"text","text":"\xff"}]}`,
	} {
		if _, ok := textResult([]byte(s)); ok {
			t.Errorf("read, but has more than the scanner keeps: %s", s)
		}
	}
}

// TestEncodeParams: the params the direct path writes mean what
// json.Marshal writes, and hold no line break.
func TestEncodeParams(t *testing.T) {
	for _, p := range []*sdk.CallToolParams{
		{Name: "echo", Arguments: json.RawMessage(`{"text":"hi"}`)},
		{Name: "a<b>&\"c\"", Arguments: json.RawMessage("{\n  \"text\": \"x<y\",\r\n \"n\": [1, 2]\n}")},
		{Meta: sdk.Meta{"progressToken": "lathe-7", "traceparent": "00-x"}, Name: "t", Arguments: json.RawMessage(`{}`)},
		{Name: "t", Arguments: map[string]any{"a": 1}},
		{Name: "t", Arguments: json.RawMessage(`{}`), RequestState: "s"},
	} {
		got, err := encodeParams(p)
		if err != nil {
			t.Fatal(err)
		}
		if bytes.ContainsAny(got, "\r\n") {
			t.Errorf("%s: a line break", got)
		}
		want, err := json.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		var g, w any
		if json.Unmarshal(got, &g) != nil || json.Unmarshal(want, &w) != nil || !reflect.DeepEqual(g, w) {
			t.Errorf("encodeParams %s\njson.Marshal %s", got, want)
		}
	}
}
