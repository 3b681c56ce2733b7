package server

import (
	"bytes"
	"encoding/json"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// completeAnswerMarshaled is the answer of MCP 2026-07-28 as json.Marshal
// writes it: what completeAnswer must give, byte for byte.
func completeAnswerMarshaled(t testing.TB, id json.RawMessage, res *sdk.CallToolResult) []byte {
	t.Helper()
	if res.Content == nil {
		res.Content = []sdk.Content{}
	}
	body, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	return encodeResponse(id, append([]byte(`{"resultType":"complete",`), body[1:]...), nil)
}

func TestCompleteAnswer(t *testing.T) {
	for _, c := range []struct {
		name string
		res  func() *sdk.CallToolResult
	}{
		{"text", func() *sdk.CallToolResult {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "hello"}}}
		}},
		{"no content", func() *sdk.CallToolResult { return &sdk.CallToolResult{} }},
		{"texts, escaped", func() *sdk.CallToolResult {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "a\"b\n<>&\u2028"}, &sdk.TextContent{Text: ""}}}
		}},
		{"error with a kind", func() *sdk.CallToolResult {
			return &sdk.CallToolResult{IsError: true, Meta: sdk.Meta{"lathe/kind": "tool_error"},
				Content: []sdk.Content{&sdk.TextContent{Text: "failed"}}}
		}},
		{"structured", func() *sdk.CallToolResult {
			return &sdk.CallToolResult{StructuredContent: json.RawMessage(`{"n":1}`),
				Content: []sdk.Content{&sdk.TextContent{Text: `{"n":1}`}}}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			id := json.RawMessage(`"call-7"`)
			got, ok := completeAnswer(id, c.res())
			if !ok {
				t.Fatal("completeAnswer took no such result")
			}
			if want := completeAnswerMarshaled(t, id, c.res()); !bytes.Equal(got, want) {
				t.Errorf("got  %s\nwant %s", got, want)
			}
		})
	}
	// What it does not write, it leaves to json.Marshal.
	img := &sdk.CallToolResult{Content: []sdk.Content{&sdk.ImageContent{Data: []byte{1}, MIMEType: "image/png"}}}
	if b, ok := completeAnswer(json.RawMessage(`1`), img); ok {
		t.Errorf("an image was written by hand: %s", b)
	}
}

func FuzzCompleteAnswer(f *testing.F) {
	f.Add([]byte(`1`), "hello", false, "", "")
	f.Add([]byte(`"x"`), "a\u2028\"\\", true, "lathe/kind", "tool_error")
	f.Fuzz(func(t *testing.T, id []byte, text string, isError bool, key, value string) {
		if !json.Valid(id) {
			return
		}
		res := func() *sdk.CallToolResult {
			r := &sdk.CallToolResult{IsError: isError, Content: []sdk.Content{&sdk.TextContent{Text: text}}}
			if key != "" {
				r.Meta = sdk.Meta{key: value}
			}
			return r
		}
		got, ok := completeAnswer(id, res())
		if !ok {
			return
		}
		if want := completeAnswerMarshaled(t, id, res()); !bytes.Equal(got, want) {
			t.Errorf("got  %s\nwant %s", got, want)
		}
	})
}

func TestAsksNothing(t *testing.T) {
	for _, c := range []struct {
		meta string
		want bool
	}{
		{`{"io.modelcontextprotocol/clientCapabilities":{}}`, true},
		{`{"io.modelcontextprotocol/clientCapabilities":{"roots":{}}}`, true},
		{`{"io.modelcontextprotocol/clientCapabilities":{"elicitation":null}}`, true},
		{`{"io.modelcontextprotocol/clientCapabilities":{"elicitation":{}}}`, false},
		{`{"io.modelcontextprotocol/clientCapabilities":{"sampling":{}}}`, false},
		{`{"io.modelcontextprotocol/clientCapabilities":{"elicitation":"yes"}}`, false},
		{`{"io.modelcontextprotocol/clientCapabilities":[]}`, false},
		{`{}`, false}, // the SDK then reads the session's
	} {
		var meta sdk.Meta
		if err := json.Unmarshal([]byte(c.meta), &meta); err != nil {
			t.Fatal(err)
		}
		caps, ok := asksNothing(meta)
		if ok != c.want {
			t.Errorf("asksNothing(%s) = %v, want %v", c.meta, ok, c.want)
		}
		if ok && (caps == nil || caps.Elicitation != nil || caps.Sampling != nil) {
			t.Errorf("asksNothing(%s) gave %+v", c.meta, caps)
		}
	}
}
