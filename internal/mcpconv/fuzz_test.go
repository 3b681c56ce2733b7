package mcpconv_test

import (
	"bytes"
	"encoding/json"
	"reflect"
	"slices"
	"testing"
	"unicode/utf8"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/lathe-tools/lathe/internal/mcpconv"
	"github.com/lathe-tools/lathe/tool"
)

// FuzzResultFromWire feeds a tools/call result as a server could send it,
// any bytes at all: decoding and converting must never panic, and what lathe
// makes of a result must survive the trip back out and in again unchanged
// (lathe behind lathe sees what lathe saw).
func FuzzResultFromWire(f *testing.F) {
	for _, s := range []string{
		`{"content":[{"type":"text","text":"hi"}]}`,
		`{"content":[{"type":"image","data":"aGk=","mimeType":"image/png"},{"type":"audio","data":"","mimeType":"audio/wav"}]}`,
		`{"content":[{"type":"resource_link","uri":"file:///a","name":"a","title":"A","description":"d"}]}`,
		`{"content":[{"type":"resource","resource":{"uri":"file:///b","text":"t"}},{"type":"resource","resource":{"uri":"x:","blob":"AAE="}}]}`,
		`{"content":[],"structuredContent":{"a":[1,2,{"b":null}]},"isError":true,"_meta":{"lathe/errorKind":"denied"}}`,
		`{"content":[{"type":"text","text":"\u0000\ud800"}],"isError":true,"_meta":{"lathe/errorKind":"no such kind"}}`,
		`{"content":[{"type":"tool_use","id":"1","name":"x","input":{}}]}`,
		`{"content":null,"structuredContent":null}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, wire []byte) {
		var r sdk.CallToolResult
		if err := json.Unmarshal(wire, &r); err != nil {
			return
		}
		got, err := mcpconv.Result(&r)
		if err != nil {
			return
		}
		if got.IsError != r.IsError || len(got.Content) != len(r.Content) {
			t.Fatalf("Result(%s) = %+v: blocks or isError lost", wire, got)
		}
		if got.IsError && !knownKind(got.ErrorKind) {
			t.Fatalf("Result(%s): error kind %q is not one of lathe's", wire, got.ErrorKind)
		}
		// Out through the server face, over the wire, and in again.
		out, err := json.Marshal(mcpconv.SDKResult(got))
		if err != nil {
			t.Fatalf("SDKResult of %+v does not encode: %v", got, err)
		}
		var back sdk.CallToolResult
		if err := json.Unmarshal(out, &back); err != nil {
			t.Fatalf("lathe's own result %s does not decode: %v", out, err)
		}
		again, err := mcpconv.Result(&back)
		if err != nil {
			t.Fatalf("lathe's own result %s: %v", out, err)
		}
		if !sameResult(got, again) {
			t.Fatalf("round trip changed the result:\nfirst  %+v\nsecond %+v\nwire %s", got, again, out)
		}
	})
}

// FuzzContentToWire builds lathe content blocks from random fields: each
// must go out as an MCP block that encodes, and a block of a type MCP has
// must come back as it went.
func FuzzContentToWire(f *testing.F) {
	f.Add("text", "hello", []byte(nil), "", "", "", false)
	f.Add("image", "", []byte{0x89, 'P', 'N', 'G'}, "image/png", "", "", false)
	f.Add("audio", "", []byte{}, "audio/wav", "", "", false)
	f.Add("resource_link", "", []byte(nil), "text/plain", "file:///a", "a", false)
	f.Add("resource", "body", []byte{1, 2}, "application/octet-stream", "file:///b", "", true)
	f.Add("resource", "", []byte(nil), "", "", "", false)
	f.Add("no such type", "x", []byte{0}, "m", "u", "n", true)
	f.Fuzz(func(t *testing.T, typ, text string, data []byte, mime, uri, name string, embed bool) {
		c := tool.Content{Type: tool.ContentType(typ), Text: text, Data: data, MIMEType: mime, URI: uri, Name: name,
			Title: name, Description: text}
		if embed {
			c.Resource = &tool.EmbeddedResource{URI: uri, MIMEType: mime, Text: text, Blob: data}
		}
		s := mcpconv.SDKContent(&c)
		b, err := json.Marshal(s)
		if err != nil {
			t.Fatalf("SDKContent(%+v) does not encode: %v", c, err)
		}
		var r sdk.CallToolResult
		if err := json.Unmarshal([]byte(`{"content":[`+string(b)+`]}`), &r); err != nil {
			t.Fatalf("block %s of %+v does not decode: %v", b, c, err)
		}
		back := mcpconv.Content(r.Content[0])
		// JSON carries only UTF-8: encoding replaces invalid bytes, so a
		// string that is not valid UTF-8 cannot come back as it was.
		for _, s := range []string{typ, text, mime, uri, name} {
			if !utf8.ValidString(s) {
				return
			}
		}
		if want := expected(c); !sameContent(want, back) {
			t.Fatalf("%+v went out as %s and came back as %+v, want %+v", c, b, back, want)
		}
	})
}

// expected is what a block should be after a trip through MCP: the fields
// its MCP type carries, and text for a type MCP does not have.
func expected(c tool.Content) tool.Content {
	switch c.Type {
	case tool.ContentImage, tool.ContentAudio:
		return tool.Content{Type: c.Type, Data: c.Data, MIMEType: c.MIMEType}
	case tool.ContentResourceLink:
		return tool.Content{Type: c.Type, URI: c.URI, Name: c.Name, Title: c.Title, Description: c.Description,
			MIMEType: c.MIMEType}
	case tool.ContentResource:
		out := tool.Content{Type: c.Type, Resource: &tool.EmbeddedResource{}}
		if c.Resource != nil {
			r := *c.Resource
			out.Resource = &r
		}
		return out
	}
	return tool.Content{Type: tool.ContentText, Text: c.Text}
}

func knownKind(k tool.ErrorKind) bool {
	return slices.Contains(tool.Kinds(), k)
}

func sameResult(a, b *tool.Result) bool {
	if a.IsError != b.IsError || a.ErrorKind != b.ErrorKind || len(a.Content) != len(b.Content) ||
		!jsonEqual(a.Structured, b.Structured) {
		return false
	}
	for i := range a.Content {
		if !sameContent(a.Content[i], b.Content[i]) {
			return false
		}
	}
	return true
}

// sameContent compares blocks, taking an empty byte slice as no bytes:
// JSON does not tell them apart.
func sameContent(a, b tool.Content) bool {
	if !bytes.Equal(a.Data, b.Data) {
		return false
	}
	a.Data, b.Data = nil, nil
	if (a.Resource == nil) != (b.Resource == nil) {
		return false
	}
	if a.Resource != nil {
		ra, rb := *a.Resource, *b.Resource
		if !bytes.Equal(ra.Blob, rb.Blob) {
			return false
		}
		ra.Blob, rb.Blob = nil, nil
		if !reflect.DeepEqual(ra, rb) {
			return false
		}
		a.Resource, b.Resource = nil, nil
	}
	return reflect.DeepEqual(a, b)
}

func jsonEqual(a, b json.RawMessage) bool {
	if len(a) == 0 || len(b) == 0 {
		return len(a) == len(b)
	}
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return bytes.Equal(a, b)
	}
	return reflect.DeepEqual(x, y)
}

// FuzzRequestsFromWire feeds an upstream server's sampling and elicitation
// requests, any bytes at all: converting them to lathe's and back must never
// panic, and a request must go back to the client as the server sent it.
func FuzzRequestsFromWire(f *testing.F) {
	for _, s := range []string{
		`{"messages":[{"role":"user","content":{"type":"text","text":"hi"}}],"maxTokens":10,"systemPrompt":"be brief"}`,
		`{"messages":[null,{"role":"assistant","content":{"type":"image","data":"AA==","mimeType":"image/png"}}],"maxTokens":0}`,
		`{"message":"Name?","requestedSchema":{"type":"object","properties":{"n":{"type":"string"}}}}`,
		`{"message":"Open","mode":"url","url":"https://example.invalid/x","elicitationId":"e1"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, wire []byte) {
		var cm sdk.CreateMessageParams
		if json.Unmarshal(wire, &cm) == nil {
			r, err := mcpconv.Sampling(&cm)
			if err == nil {
				back, err := mcpconv.SDKSampling(r)
				if err != nil {
					t.Fatalf("SDKSampling of lathe's own request %s: %v", r.Params, err)
				}
				a, errA := json.Marshal(&cm)
				b, errB := json.Marshal(back)
				if errA != nil || errB != nil || !jsonEqual(a, b) {
					t.Fatalf("sampling request changed on its way:\nin  %s\nout %s", a, b)
				}
			}
		}
		var ep sdk.ElicitParams
		if json.Unmarshal(wire, &ep) == nil {
			r, err := mcpconv.Elicit(&ep)
			if err != nil {
				return
			}
			back := mcpconv.SDKElicit(r)
			a, errA := json.Marshal(&ep)
			b, errB := json.Marshal(back)
			if errA != nil || errB != nil || !jsonEqual(a, b) {
				t.Fatalf("elicitation request changed on its way:\nin  %s\nout %s", a, b)
			}
		}
	})
}
