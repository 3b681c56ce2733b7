package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"maps"
	"strconv"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/lathe-tools/lathe/internal/jsonscan"
)

// The reading of a tools/call and the writing of its answer as they were
// before they read ids and strings in place and wrote results without
// json.Marshal: the reference the fuzz tests hold today's code to, and the
// benchmarks measure it against.

func oldReadMessage(b []byte) (message, bool) {
	if !json.Valid(b) {
		return nil, false
	}
	m := message{}
	if jsonscan.Members(b, 0, func(key string, vs, ve int) { m[key] = json.RawMessage(b[vs:ve:ve]) }) != nil {
		return nil, false
	}
	return m, true
}

func oldStr(m message, key string) (string, bool) {
	raw, ok := m[key]
	if !ok {
		return "", false
	}
	var v string
	if json.Unmarshal(raw, &v) != nil {
		return "", false
	}
	return v, true
}

func oldDecodedID(raw json.RawMessage) (any, bool) {
	var id any
	if json.Unmarshal(raw, &id) != nil {
		return nil, false
	}
	switch id.(type) {
	case string, float64:
		return id, true
	}
	return nil, false
}

func oldIDKey(raw json.RawMessage) (string, bool) {
	v, ok := oldDecodedID(raw)
	if !ok {
		return "", false
	}
	switch v := v.(type) {
	case string:
		return "s" + v, true
	case float64:
		return "n" + strconv.FormatFloat(v, 'g', -1, 64), true
	}
	return "", false
}

func oldToolCall(m message, extra ...string) (key, name string, p message, args json.RawMessage, ok bool) {
	if key, ok = oldIDKey(m["id"]); !ok {
		return
	}
	if p, ok = oldReadMessage(m["params"]); !ok {
		return "", "", nil, nil, false
	}
	if name, ok = oldStr(p, "name"); !ok {
		return
	}
	for k := range p {
		if k != "name" && k != "arguments" && k != "_meta" && !contains(extra, k) {
			return "", "", nil, nil, false
		}
	}
	args = p["arguments"]
	if len(args) > 0 && args[0] != '{' && string(args) != "null" {
		return "", "", nil, nil, false
	}
	if string(args) == "null" {
		args = nil
	}
	return key, name, p, args, true
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

func oldAnswer(id json.RawMessage, res *sdk.CallToolResult, err error) []byte {
	var body []byte
	if err == nil && res == nil {
		res = &sdk.CallToolResult{}
	}
	if err == nil {
		if res.Content == nil {
			res.Content = []sdk.Content{}
		}
		body, err = json.Marshal(res)
	}
	var rpcErr *jsonrpc.Error
	if err != nil && !errors.As(err, &rpcErr) {
		rpcErr = &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()}
	}
	return encodeResponse(id, body, rpcErr)
}

// oldCallWork is newCallWork as it was.
func oldCallWork(body []byte, res *sdk.CallToolResult) func() []byte {
	return func() []byte {
		m, ok := oldReadMessage(body)
		if v, _ := oldStr(m, "jsonrpc"); !ok || v != "2.0" {
			panic("not JSON-RPC")
		}
		if method, _ := oldStr(m, "method"); method != "tools/call" {
			panic("not a tools/call")
		}
		if _, _, _, _, ok := oldToolCall(m); !ok {
			panic("refused")
		}
		return oldAnswer(m["id"], res, nil)
	}
}

// idSeeds are ids and string members as they may come: plain, escaped,
// invalid UTF-8, numbers of every form JSON has and some it has not.
var idSeeds = []string{
	`7`, `-0`, `0`, `1.0`, `1e3`, `1E+3`, `1.5e-3`, `123456789012345678901234567890`, `9007199254740993`,
	`1e400`, `-1e400`, `1e-400`, `01`, `1.`, `+1`, `0x10`, `NaN`, ` 7`, `7 `,
	`"abc"`, `""`, `"2.0"`, `"tools/call"`, `"lathe-1"`, `"a\"b"`, `"\u0041"`, `"\ud800"`, "\"\xff\"",
	"\"\xe2\x80\xa8\"", `"<&>"`, "\"a\tb\"", ` "a"`, `"a" `, `"a`, `null`, `true`, `{}`, `[]`, `[1]`, ``,
}

// FuzzDecodeID holds idKey, decodedID and message.str to what they were,
// on any bytes: what was refused is refused, what was taken is taken the
// same.
func FuzzDecodeID(f *testing.F) {
	for _, s := range idSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		gk, gok := idKey(raw)
		wk, wok := oldIDKey(raw)
		if gk != wk || gok != wok {
			t.Fatalf("idKey(%q) = %q, %v; was %q, %v", raw, gk, gok, wk, wok)
		}
		gv, gok := decodedID(raw)
		wv, wok := oldDecodedID(raw)
		if gok != wok || gv != wv {
			t.Fatalf("decodedID(%q) = %#v, %v; was %#v, %v", raw, gv, gok, wv, wok)
		}
		m := message{"k": raw}
		gs, gok := m.str("k")
		ws, wok := oldStr(m, "k")
		if gs != ws || gok != wok {
			t.Fatalf("str(%q) = %q, %v; was %q, %v", raw, gs, gok, ws, wok)
		}
		if gs, gok := m.str("absent"); gs != "" || gok {
			t.Fatalf("str of an absent member = %q, %v", gs, gok)
		}
	})
}

func TestDecodeID(t *testing.T) {
	for _, c := range []struct {
		raw string
		key string
		ok  bool
	}{
		{`7`, "n7", true},
		{`-0`, "n-0", true},
		{`1.0`, "n1", true},
		{`1e3`, "n1000", true},
		{`9007199254740993`, "n9.007199254740992e+15", true},
		{`1e-400`, "n0", true},
		{`1e400`, "", false},
		{`"abc"`, "sabc", true},
		{`"\u0041"`, "sA", true},
		{"\"\xff\"", "s\ufffd", true},
		{` 7`, "n7", true},
		{`01`, "", false},
		{`null`, "", false},
		{`true`, "", false},
		{`[1]`, "", false},
		{``, "", false},
	} {
		if k, ok := idKey(json.RawMessage(c.raw)); k != c.key || ok != c.ok {
			t.Errorf("idKey(%q) = %q, %v; want %q, %v", c.raw, k, ok, c.key, c.ok)
		}
	}
	for _, c := range []struct {
		raw string
		s   string
		ok  bool
	}{
		{`"2.0"`, "2.0", true},
		{`"tools/call"`, "tools/call", true},
		{`"a\"b"`, `a"b`, true},
		{`null`, "", true},
		{`2`, "", false},
		{`{}`, "", false},
	} {
		if s, ok := (message{"k": json.RawMessage(c.raw)}).str("k"); s != c.s || ok != c.ok {
			t.Errorf("str(%q) = %q, %v; want %q, %v", c.raw, s, ok, c.s, c.ok)
		}
	}
}

// FuzzToolCall holds readMessage and toolCall to what they were, on any
// message.
func FuzzToolCall(f *testing.F) {
	for _, s := range []string{
		string(echoCall),
		`{"jsonrpc":"2.0","id":"x","method":"tools/call","params":{"name":"a\u0062","arguments":null,"_meta":{"progressToken":1}}}`,
		`{"id":1,"params":{"name":"a","arguments":[]}}`,
		`{"id":1,"params":{"name":"a","task":{}}}`,
		`{"id":1,"params":{"name":"a","requestState":"s"}}`,
		`{"id":1,"params":{"name":2}}`,
		`{"id":1,"params":{"name":null}}`,
		`{"id":1,"params":[]}`,
		`{"id":1,"params":null}`,
		`{"id":1}`,
		`{"id":1.5e2,"params":{ "name" : "a" , "arguments" : { } }}`,
		`{"id":{},"params":{"name":"a"}}`,
		`{"id":1,"params":{"name":"a","name":"b","arguments":{"x":1},"arguments":"no"}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		m, ok := readMessage(b)
		wm, wok := oldReadMessage(b)
		if ok != wok || !maps.EqualFunc(m, wm, func(a, b json.RawMessage) bool { return bytes.Equal(a, b) }) {
			t.Fatalf("readMessage(%q) = %q, %v; was %q, %v", b, m, ok, wm, wok)
		}
		if !ok {
			return
		}
		for _, extra := range [][]string{nil, {"inputResponses", "requestState"}} {
			gk, gn, gp, ga, gok := toolCall(m, extra...)
			wk, wn, wp, wa, wok := oldToolCall(m, extra...)
			if gk != wk || gn != wn || gok != wok || !bytes.Equal(ga, wa) || (ga == nil) != (wa == nil) ||
				!maps.EqualFunc(gp, wp, func(a, b json.RawMessage) bool { return bytes.Equal(a, b) }) {
				t.Fatalf("toolCall(%q, %q) = %q %q %q %q %v; was %q %q %q %q %v", b, extra, gk, gn, gp, ga, gok,
					wk, wn, wp, wa, wok)
			}
		}
	})
}

// FuzzCallAnswer holds answerOf, the response to a call, to what
// json.Marshal of the result and encodeResponse made of it.
func FuzzCallAnswer(f *testing.F) {
	for _, s := range []string{"Echo: hello", "", "<a href=\"x\">&amp;</a>", "\xff\x00\u2028\\", "\t\n"} {
		f.Add([]byte(`7`), s, "denied", true, []byte(`{"a":"`+s+`"}`), uint8(0))
	}
	f.Add([]byte(`"id"`), "x", "", false, []byte(nil), uint8(1))
	f.Add([]byte(`1`), "x", "", false, []byte(`{`), uint8(2))
	f.Add([]byte(`1`), "x", "k", true, []byte(nil), uint8(3))
	f.Fuzz(func(t *testing.T, id []byte, text, kind string, isError bool, structured []byte, shape uint8) {
		build := func() (*sdk.CallToolResult, error) {
			r := &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: text}}, IsError: isError}
			if kind != "" {
				r.Meta = sdk.Meta{"lathe/errorKind": kind}
			}
			if structured != nil {
				r.StructuredContent = json.RawMessage(structured)
			}
			switch shape % 6 {
			case 1:
				return nil, nil
			case 2:
				r.Content = nil
			case 3:
				r.Content = append(r.Content, &sdk.ImageContent{Data: []byte(text), MIMEType: kind})
			case 4:
				return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: text}
			case 5:
				return r, errors.New(text)
			}
			return r, nil
		}
		gr, gerr := build()
		wr, werr := build()
		got, want := answerOf(id, gr, gerr), oldAnswer(id, wr, werr)
		if !bytes.Equal(got, want) {
			t.Fatalf("answerOf:\n got %q\nwant %q", got, want)
		}
	})
}
