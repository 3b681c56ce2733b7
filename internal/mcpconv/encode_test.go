package mcpconv_test

import (
	"bytes"
	"encoding/json"
	"reflect"
	"slices"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/lathe-tools/lathe/internal/mcpconv"
	"github.com/lathe-tools/lathe/tool"
)

// sameAsMarshal checks AppendCallToolResult(r) against json.Marshal(r):
// when it takes r, the same bytes, after what dst held before. It returns
// whether it took r.
func sameAsMarshal(t *testing.T, r *sdk.CallToolResult) bool {
	t.Helper()
	prefix := []byte(`{"id":1,"result":`)
	got, ok := mcpconv.AppendCallToolResult(slices.Clone(prefix), r)
	if !bytes.HasPrefix(got, prefix) {
		t.Fatalf("AppendCallToolResult changed what dst held: %q", got)
	}
	if !ok {
		if !bytes.Equal(got, prefix) {
			t.Fatalf("AppendCallToolResult refused %+v, yet appended %q", r, got[len(prefix):])
		}
		return false
	}
	want, err := json.Marshal(r)
	if err != nil {
		t.Fatalf("AppendCallToolResult took %+v, which json.Marshal refuses: %v", r, err)
	}
	if !bytes.Equal(got[len(prefix):], want) {
		t.Fatalf("AppendCallToolResult(%+v)\n got %q\nwant %q", r, got[len(prefix):], want)
	}
	return true
}

// awkward are strings whose JSON encoding escapes something.
var awkward = []string{
	"", "hello", `quote " and \ backslash`, "\x00\x01\x1f\x7f", "\b\f\n\r\t", "<script>&amp;</script>",
	"line\u2028para\u2029", "invalid \xff\xfe utf-8 \xe2\x80", "\xe2\x80\xa8", "é ü 世界 🎉", "\ufffd", "\\u0041",
}

func TestAppendCallToolResult(t *testing.T) {
	text := func(s ...string) []sdk.Content {
		out := []sdk.Content{}
		for _, s := range s {
			out = append(out, &sdk.TextContent{Text: s})
		}
		return out
	}
	taken := []*sdk.CallToolResult{
		{Content: []sdk.Content{}},
		{Content: nil},
		{Content: text("hello")},
		{Content: text(awkward...)},
		{Content: text("a", "b"), IsError: true},
		{Content: text("no"), IsError: true, Meta: sdk.Meta{"lathe/errorKind": "denied"}},
		{Content: text("x"), Meta: sdk.Meta{"b": "2", "a": "1", "<&>": "\xff", "\u2028": "é"}},
		{Content: text("x"), Meta: sdk.Meta{}},
		{Content: text(), StructuredContent: json.RawMessage(`{"sum":3}`)},
		{Content: text("s"), StructuredContent: json.RawMessage(" { \"a\" : [ 1 , 2 ] ,\n\t\"b\":\"x y <&> \u2028\" } ")},
		{Content: text(), StructuredContent: json.RawMessage(`"\u003c"`)},
		{Content: text(), StructuredContent: json.RawMessage(nil)},
		{Content: text(), StructuredContent: json.RawMessage(`null`)},
		{Content: text("t"), StructuredContent: json.RawMessage(`[1e400,-0,"\ud800"]`), IsError: true},
		{Content: []sdk.Content{&sdk.TextContent{Text: "m", Meta: sdk.Meta{}}}},
	}
	for _, r := range taken {
		if !sameAsMarshal(t, r) {
			t.Errorf("AppendCallToolResult refused %+v", r)
		}
	}
	refused := []*sdk.CallToolResult{
		nil,
		{Content: []sdk.Content{&sdk.ImageContent{Data: []byte("x"), MIMEType: "image/png"}}},
		{Content: []sdk.Content{nil}},
		{Content: []sdk.Content{(*sdk.TextContent)(nil)}},
		{Content: []sdk.Content{&sdk.TextContent{Text: "a", Meta: sdk.Meta{"k": "v"}}}},
		{Content: []sdk.Content{&sdk.TextContent{Text: "a", Annotations: &sdk.Annotations{Priority: 1}}}},
		{Content: text("a"), Meta: sdk.Meta{"n": 1.0}},
		{Content: text("a"), Meta: sdk.Meta{"n": nil}},
		{Content: text("a"), StructuredContent: map[string]any{"a": 1}},
		{Content: text("a"), StructuredContent: json.RawMessage(`{"a":`)},
		{Content: text("a"), StructuredContent: json.RawMessage(`<&>`)},
		{Content: text("a"), RequestState: "state"},
		{Content: text("a"), InputRequests: sdk.InputRequestMap{}},
	}
	for _, r := range refused {
		if sameAsMarshal(t, r) {
			t.Errorf("AppendCallToolResult took %+v", r)
		}
	}
}

// TestAppendCallToolResultResultType checks that a result with the SDK's
// unexported resultType set (here by decoding one) is refused: json.Marshal
// writes it, and AppendCallToolResult cannot.
func TestAppendCallToolResultResultType(t *testing.T) {
	for _, wire := range []string{
		`{"content":[],"resultType":"complete"}`,
		`{"content":[{"type":"text","text":"x"}],"resultType":"input_required"}`,
	} {
		var r sdk.CallToolResult
		if err := json.Unmarshal([]byte(wire), &r); err != nil {
			t.Fatal(err)
		}
		if want, _ := json.Marshal(&r); !bytes.Contains(want, []byte(`"resultType"`)) {
			t.Fatalf("the SDK no longer writes the resultType of %s: %s", wire, want)
		}
		if sameAsMarshal(t, &r) {
			t.Errorf("AppendCallToolResult took %s", wire)
		}
	}
}

// TestAppendCallToolResultKnowsTheFields fails when the SDK's result or
// text block gains a field, which AppendCallToolResult would not know to
// write: it must then learn it, or refuse results that set it.
func TestAppendCallToolResultKnowsTheFields(t *testing.T) {
	for typ, known := range map[reflect.Type][]string{
		reflect.TypeFor[sdk.CallToolResult](): {"Meta", "Content", "StructuredContent", "IsError", "InputRequests",
			"RequestState", "resultType", "err"},
		reflect.TypeFor[sdk.TextContent](): {"Text", "Meta", "Annotations"},
	} {
		var fields []string
		for f := range typ.Fields() {
			fields = append(fields, f.Name)
		}
		if !slices.Equal(fields, known) {
			t.Errorf("the fields of %v are %v, AppendCallToolResult knows %v", typ, fields, known)
		}
	}
}

// FuzzEncodeCallResult compares AppendCallToolResult with json.Marshal on
// results as the server face makes them (SDKResult of a lathe result of
// any text, error kind and structured content) and on any result a wire
// could hold (decoded with the SDK), and checks that it takes every result
// of the first kind that json.Marshal encodes.
func FuzzEncodeCallResult(f *testing.F) {
	for _, s := range awkward {
		f.Add(s, s, "denied", true, []byte(`{"a":"`+s+`"}`), []byte(`{"content":[{"type":"text","text":"`+s+`"}]}`))
	}
	f.Add("echo: hello", "", "", false, []byte(nil), []byte(`{"content":[]}`))
	f.Add("x", "y", "tool_error", true, []byte(` [ 1, "a b" ] `),
		[]byte(`{"content":[{"type":"text","text":"x","annotations":{"priority":1}}],"isError":true}`))
	f.Add("", "", "", false, []byte(`{"a":`), []byte(`{"content":[{"type":"image","data":"aGk=","mimeType":"image/png"}]}`))
	f.Add("a", "b", "\xff<", true, []byte(`"\u2028"`),
		[]byte(`{"_meta":{"k":"v","a":1},"content":null,"structuredContent":{"x":[]},"resultType":"complete"}`))
	f.Fuzz(func(t *testing.T, text1, text2, kind string, isError bool, structured, wire []byte) {
		r := &tool.Result{Content: []tool.Content{{Type: tool.ContentText, Text: text1}}, IsError: isError,
			ErrorKind: tool.ErrorKind(kind), Structured: structured}
		if text2 != "" {
			r.Content = append(r.Content, tool.Content{Type: tool.ContentText, Text: text2})
		}
		sr := mcpconv.SDKResult(r)
		if !sameAsMarshal(t, sr) && (len(structured) == 0 || json.Valid(structured)) {
			t.Fatalf("AppendCallToolResult refused %+v", sr)
		}
		sr.Content = nil
		sameAsMarshal(t, sr)

		var w sdk.CallToolResult
		if json.Unmarshal(wire, &w) == nil {
			sameAsMarshal(t, &w)
		}
	})
}
