package protocol_test

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/lathe-tools/lathe/runtime/process/protocol"
	"github.com/lathe-tools/lathe/tool"
)

func TestParseAnswer(t *testing.T) {
	for _, tc := range []struct {
		out     string
		ok      bool
		wantErr bool
		want    *tool.Outcome
	}{
		{out: "plain text", ok: false},
		{out: "", ok: false},
		{out: `{"name":"not an answer"}`, ok: false},
		{out: `{"type":"user"}`, ok: false},
		{out: `{"type":"success"} trailing`, ok: false},
		{out: `{"type":"success","content":"hi"}`, ok: true,
			want: &tool.Outcome{Result: tool.TextResult("hi")}},
		{out: " \n{\"type\":\"Success\",\"content\":\"hi\",\"structured\":{\"a\":1}}\n", ok: true,
			want: &tool.Outcome{Result: &tool.Result{Content: []tool.Content{{Type: "text", Text: "hi"}}, Structured: json.RawMessage(`{"a":1}`)}}},
		{out: `{"type":"error","message":"m","trace":["c1","c2"],"transient":true}`, ok: true,
			want: &tool.Outcome{Result: &tool.Result{Content: []tool.Content{{Type: "text",
				Text: "m\n  caused by: c1\n  caused by: c2\n(transient: the same call may succeed if tried again)"}},
				IsError: true, ErrorKind: tool.KindToolError}}},
		{out: `{"type":"needs_input","question":{"id":"q","text":"Sure?","answer_type":"boolean","default":false}}`, ok: true,
			want: &tool.Outcome{Question: &tool.Question{ID: "q", Text: "Sure?", Kind: tool.QuestionBoolean, Default: false}}},
		{out: `{"type":"NeedsInput","question":{"id":"q","text":"Pick","answer_type":{"Select":{"options":["a"]}}}}`, ok: true,
			want: &tool.Outcome{Question: &tool.Question{ID: "q", Text: "Pick", Kind: tool.QuestionSelect, Options: []string{"a"}}}},
		{out: `{"type":"success","content":5}`, ok: true, wantErr: true},
		{out: `{"type":"success","structured":[1]}`, ok: true, wantErr: true},
		{out: `{"type":"success","content":[{"text":"no type"}]}`, ok: true, wantErr: true},
		{out: `{"type":"needs_input"}`, ok: true, wantErr: true},
		{out: `{"type":"needs_input","question":{"id":"q","text":"?","answer_type":"colour"}}`, ok: true, wantErr: true},
	} {
		a, ok, err := protocol.ParseAnswer([]byte(tc.out))
		if ok != tc.ok {
			t.Errorf("%s: ok = %v, want %v", tc.out, ok, tc.ok)
			continue
		}
		if !ok {
			continue
		}
		var out *tool.Outcome
		if err == nil {
			out, err = a.Outcome()
		}
		if (err != nil) != tc.wantErr {
			t.Errorf("%s: err = %v, want error %v", tc.out, err, tc.wantErr)
			continue
		}
		if err == nil && !reflect.DeepEqual(out, tc.want) {
			t.Errorf("%s:\ngot  %+v\nwant %+v", tc.out, out, tc.want)
		}
	}
}

func TestAnswerTypeRoundTrip(t *testing.T) {
	for _, q := range []tool.Question{
		{ID: "a", Text: "t", Kind: tool.QuestionBoolean, Default: true},
		{ID: "b", Text: "t", Kind: tool.QuestionText},
		{ID: "c", Text: "t", Kind: tool.QuestionSelect, Options: []string{"x", "y"}},
	} {
		b, err := json.Marshal(protocol.NeedsInput(q))
		if err != nil {
			t.Fatal(err)
		}
		a, ok, err := protocol.ParseAnswer(b)
		if !ok || err != nil {
			t.Fatalf("%s: ok %v, err %v", b, ok, err)
		}
		out, err := a.Outcome()
		if err != nil || !reflect.DeepEqual(*out.Question, q) {
			t.Errorf("%s: got %+v, %v; want %+v", b, out.Question, err, q)
		}
	}
}

func TestSuccessRoundTrip(t *testing.T) {
	for _, r := range []*tool.Result{
		tool.TextResult("one block"),
		{Content: []tool.Content{{Type: "text", Text: "a"}, {Type: "image", Data: []byte{1, 2}, MIMEType: "image/png"}},
			Structured: json.RawMessage(`{"k":"v"}`)},
	} {
		b, _ := json.Marshal(protocol.Success(r))
		a, ok, err := protocol.ParseAnswer(b)
		if !ok || err != nil {
			t.Fatalf("%s: ok %v, err %v", b, ok, err)
		}
		out, err := a.Outcome()
		if err != nil || !reflect.DeepEqual(out.Result, r) {
			t.Errorf("%s:\ngot  %+v, %v\nwant %+v", b, out.Result, err, r)
		}
	}
}

func TestParseSchema(t *testing.T) {
	s, err := protocol.ParseSchema([]byte(`{"tools":[{"name":"a","parameters":{"type":"object"},"annotations":{"readOnlyHint":true}}]}`))
	if err != nil || len(s.Tools) != 1 || s.Tools[0].Name != "a" || !s.Tools[0].Annotations.ReadOnlyHint {
		t.Errorf("got %+v, %v", s, err)
	}
	for _, bad := range []string{``, `usage: tool [flags]`, `{"type":"success"}`, `{"tools":5}`} {
		if _, err := protocol.ParseSchema([]byte(bad)); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

// FuzzParseAnswer feeds arbitrary output to the parser: it never panics,
// and an answer it accepts becomes exactly one of a result and a question.
func FuzzParseAnswer(f *testing.F) {
	for _, s := range []string{
		`{"type":"success","content":"hi"}`,
		`{"type":"success","content":[{"type":"text","text":"a"}],"structured":{"a":1}}`,
		`{"type":"error","message":"m","trace":["t"],"transient":true}`,
		`{"type":"needs_input","question":{"id":"q","text":"?","answer_type":{"select":["a"]}}}`,
		`{"type":"NeedsInput","question":{"id":"q","text":"?","answer_type":{"Select":{"options":["a"]}}}}`,
		`plain`, `{}`, `{"type":5}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		a, ok, err := protocol.ParseAnswer(b)
		if !ok || err != nil {
			return
		}
		out, err := a.Outcome()
		if err != nil {
			return
		}
		if (out.Result == nil) == (out.Question == nil) {
			t.Fatalf("%s: outcome %+v", b, out)
		}
		protocol.ParseSchema(b)
	})
}

// TestParseSchemaTooDeep: a schema answer nested 100,000 levels deep is an
// error (encoding/json stops at 10,000 levels), not a stack overflow.
func TestParseSchemaTooDeep(t *testing.T) {
	const deep = 100_000
	out := `{"tools":[{"name":"deep","parameters":` + strings.Repeat(`{"a":`, deep) + `1` + strings.Repeat(`}`, deep) + `}]}`
	if _, err := protocol.ParseSchema([]byte(out)); err == nil || !strings.Contains(err.Error(), "exceeded max depth") {
		t.Fatalf("ParseSchema of a %d-deep answer: got %v, want encoding/json's depth error", deep, err)
	}
}
