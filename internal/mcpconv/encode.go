package mcpconv

import (
	"bytes"
	"encoding/json"
	"reflect"
	"slices"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/lathe-tools/lathe/internal/jsonscan"
)

// AppendCallToolResult appends to dst the JSON of r, the very bytes
// json.Marshal(r) gives, for the results lathe's tools have: content of
// text blocks without _meta or annotations, structured content as
// json.RawMessage (as SDKResult makes it), _meta of strings (the error
// kind), isError. It reports false, with dst as it was, for any other
// result, which the caller encodes with json.Marshal.
//
// json.Marshal of a result goes through the SDK's MarshalJSON methods, one
// per content block and one for the result, each marshaling a struct of
// its own by reflection, whose output encoding/json then checks and copies
// again: most of the cost of an answer the size of an echo.
func AppendCallToolResult(dst []byte, r *sdk.CallToolResult) ([]byte, bool) {
	if r == nil || resultTypeField < 0 || r.InputRequests != nil || r.RequestState != "" ||
		reflect.ValueOf(r).Elem().Field(resultTypeField).Len() != 0 {
		return dst, false
	}
	start := len(dst)
	dst = append(dst, '{')
	if len(r.Meta) > 0 {
		var ok bool
		if dst, ok = appendStringMap(append(dst, `"_meta":`...), r.Meta); !ok {
			return dst[:start], false
		}
		dst = append(dst, ',')
	}
	dst = append(dst, `"content":`...)
	if r.Content == nil {
		dst = append(dst, "null"...)
	} else {
		dst = append(dst, '[')
		for i, c := range r.Content {
			t, ok := c.(*sdk.TextContent)
			if !ok || t == nil || len(t.Meta) > 0 || t.Annotations != nil {
				return dst[:start], false
			}
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = append(dst, `{"type":"text","text":`...)
			dst = jsonscan.AppendString(dst, t.Text)
			dst = append(dst, '}')
		}
		dst = append(dst, ']')
	}
	if r.StructuredContent != nil {
		raw, ok := r.StructuredContent.(json.RawMessage)
		if !ok {
			return dst[:start], false
		}
		dst = append(dst, `,"structuredContent":`...)
		if dst, ok = appendRaw(dst, raw); !ok {
			return dst[:start], false
		}
	}
	if r.IsError {
		dst = append(dst, `,"isError":true`...)
	}
	return append(dst, '}'), true
}

// resultTypeField is the index of CallToolResult's unexported resultType,
// which the SDK sets (to answer a client of MCP 2026-07-28) and
// json.Marshal writes when set; -1 when the SDK has no such field, and
// then AppendCallToolResult takes nothing.
var resultTypeField = func() int {
	f, ok := reflect.TypeFor[sdk.CallToolResult]().FieldByName("resultType")
	if !ok || len(f.Index) != 1 || f.Type.Kind() != reflect.String {
		return -1
	}
	return f.Index[0]
}()

// appendStringMap appends the JSON object of m as json.Marshal writes it
// (keys sorted), when every value is a string.
func appendStringMap(dst []byte, m map[string]any) ([]byte, bool) {
	var one [1]string
	keys := one[:0]
	for k, v := range m {
		if _, ok := v.(string); !ok {
			return dst, false
		}
		keys = append(keys, k)
	}
	slices.Sort(keys)
	dst = append(dst, '{')
	for i, k := range keys {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = jsonscan.AppendString(dst, k)
		dst = append(dst, ':')
		dst = jsonscan.AppendString(dst, m[k].(string))
	}
	return append(dst, '}'), true
}

// appendRaw appends raw as json.Marshal writes a json.RawMessage: "null"
// when nil, else compacted, with the characters that are unsafe in HTML
// escaped; false when raw is not JSON (json.Marshal fails then).
func appendRaw(dst []byte, raw json.RawMessage) ([]byte, bool) {
	if raw == nil {
		return append(dst, "null"...), true
	}
	if !needsRewrite(raw) {
		if !jsonscan.Valid(raw) {
			return dst, false
		}
		return append(dst, raw...), true
	}
	var compact bytes.Buffer
	if json.Compact(&compact, raw) != nil {
		return dst, false
	}
	out := bytes.NewBuffer(dst)
	json.HTMLEscape(out, compact.Bytes())
	return out.Bytes(), true
}

// needsRewrite reports whether raw holds a byte that compacting or
// escaping for HTML might change: white space, <, >, &, or the first byte
// of U+2028 and U+2029.
func needsRewrite(raw []byte) bool {
	for _, c := range raw {
		switch c {
		case ' ', '\t', '\n', '\r', '<', '>', '&', 0xe2:
			return true
		}
	}
	return false
}
