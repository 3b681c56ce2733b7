package mcp

import (
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
