package provider_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lathe-tools/lathe"
	"github.com/lathe-tools/lathe/provider"
	"github.com/lathe-tools/lathe/tool"
	"github.com/lathe-tools/lathe/tools"
)

// The fixtures of testdata are whole responses in each provider's
// documented shape, each asking for the same three calls of the standard
// tools: read notes.txt, list the workspace, and read a file that is not
// there (which fails).
var fixtures = []struct {
	file string
	f    provider.Format
	ids  []string
}{
	{"openai-chat-response.json", provider.OpenAI, []string{"call_R7mJ2kQ9xVb3nT6wLp0sYc4e", "call_H1dF8gK3pZq5sW2vN9mXb7Lt", "call_U4cE6rT0yA8iO2pS5dG3hJ1k"}},
	{"openai-responses-response.json", provider.OpenAIResponses, []string{"call_Qe8Zr3Ty6Ui9Op2As5Df7Gh0", "call_Jk1Lz4Xc7Vb0Nm3Qw6Er9Ty2", "call_Ui5Op8As1Df4Gh7Jk0Lz3Xc6"}},
	{"anthropic-response.json", provider.Anthropic, []string{"toolu_01A09q90qw90lq917835lq9", "toolu_01B7nX3mKp2Qr8sT4vW6yZ1a", "toolu_01C5hJ9dLf3Gk7Np1Qs4Tv8x"}},
	{"gemini-response.json", provider.Gemini, []string{"fc-7k2m9q4x", "fc-3p8r1t6w", ""}},
}

// workspace returns an engine with the standard tools on a workspace that
// holds notes.txt.
func workspace(t *testing.T) *lathe.Engine {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("first line\nsecond line\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	e := lathe.New(lathe.Options{Timeout: 10 * time.Second})
	t.Cleanup(func() { e.Close() })
	std, err := tools.Standard(dir, tools.Options{Describe: e.Lookup})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Register(std...); err != nil {
		t.Fatal(err)
	}
	return e
}

// TestRoundTrip reads each provider's response, runs its calls through a
// real engine, and checks the result messages in the provider's shape:
// each answers its call by the call's id, carries the tool's real output,
// and flags the failed call as the format flags errors.
func TestRoundTrip(t *testing.T) {
	for _, fx := range fixtures {
		t.Run(string(fx.f), func(t *testing.T) {
			e := workspace(t)
			ts, err := provider.Convert(fx.f, e.Tools(), nil)
			if err != nil {
				t.Fatal(err)
			}
			data, err := os.ReadFile(filepath.Join("testdata", fx.file))
			if err != nil {
				t.Fatal(err)
			}
			calls, f, err := provider.ParseCalls(data)
			if err != nil {
				t.Fatal(err)
			}
			if f != fx.f {
				t.Errorf("read as %s, want %s", f, fx.f)
			}
			if len(calls) != 3 {
				t.Fatalf("%d calls, want 3", len(calls))
			}
			for i, c := range calls {
				if c.ID != fx.ids[i] {
					t.Errorf("call %d: id %q, want %q", i+1, c.ID, fx.ids[i])
				}
			}
			ts.Resolve(calls)
			// Strict mode's nulls for left-out properties are gone, so the
			// engine's defaults apply and validation passes.
			var args map[string]any
			mustDecode(t, calls[0].Arguments, &args)
			if len(args) != 1 || args["path"] != "notes.txt" {
				t.Errorf("read_file's arguments: %s", calls[0].Arguments)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			outs := e.CallBatch(ctx, calls, nil)
			replies := make([]provider.Reply, len(calls))
			for i := range calls {
				replies[i] = provider.Reply{Call: calls[i], Outcome: &outs[i].Outcome}
			}
			if outs[0].Result.IsError || outs[1].Result.IsError || !outs[2].Result.IsError {
				t.Fatalf("outcomes: %s / %s / %s", outs[0].Result.Text(), outs[1].Result.Text(), outs[2].Result.Text())
			}
			msg, err := ts.Results(replies)
			if err != nil {
				t.Fatal(err)
			}
			texts, ids, errs := resultsOf(t, fx.f, msg)
			if len(texts) != 3 {
				t.Fatalf("%d results in %s", len(texts), msg)
			}
			for i := range texts {
				if ids[i] != fx.ids[i] {
					t.Errorf("result %d answers %q, want %q", i+1, ids[i], fx.ids[i])
				}
			}
			if !strings.Contains(texts[0], "first line") || !strings.Contains(texts[1], "notes.txt") ||
				!strings.Contains(texts[2], "missing.txt") {
				t.Errorf("results do not carry the tools' output: %q", texts)
			}
			if errs[0] || errs[1] || !errs[2] {
				t.Errorf("error flags %v, want only the third", errs)
			}
		})
	}
}

// resultsOf reads result messages back in each format's documented shape:
// the text of each result, the id of the call it answers, and whether it
// says it failed.
func resultsOf(t *testing.T, f provider.Format, msg []byte) (texts, ids []string, errs []bool) {
	t.Helper()
	switch f {
	case provider.OpenAI:
		var msgs []struct {
			Role       string `json:"role"`
			ToolCallID string `json:"tool_call_id"`
			Content    string `json:"content"`
		}
		mustDecode(t, msg, &msgs)
		for _, m := range msgs {
			if m.Role != "tool" {
				t.Errorf("role %q", m.Role)
			}
			texts, ids = append(texts, m.Content), append(ids, m.ToolCallID)
			errs = append(errs, strings.HasPrefix(m.Content, "Error ("))
		}
	case provider.OpenAIResponses:
		var items []struct {
			Type   string `json:"type"`
			CallID string `json:"call_id"`
			Output string `json:"output"`
		}
		mustDecode(t, msg, &items)
		for _, it := range items {
			if it.Type != "function_call_output" {
				t.Errorf("type %q", it.Type)
			}
			texts, ids = append(texts, it.Output), append(ids, it.CallID)
			errs = append(errs, strings.HasPrefix(it.Output, "Error ("))
		}
	case provider.Anthropic:
		var msgs []struct {
			Role    string `json:"role"`
			Content []struct {
				Type      string `json:"type"`
				ToolUseID string `json:"tool_use_id"`
				IsError   bool   `json:"is_error"`
				Content   []struct {
					Type, Text string
				} `json:"content"`
			} `json:"content"`
		}
		mustDecode(t, msg, &msgs)
		if len(msgs) != 1 || msgs[0].Role != "user" {
			t.Fatalf("want one user message: %s", msg)
		}
		for _, b := range msgs[0].Content {
			if b.Type != "tool_result" {
				t.Errorf("block type %q", b.Type)
			}
			var text string
			for _, c := range b.Content {
				text += c.Text
			}
			texts, ids, errs = append(texts, text), append(ids, b.ToolUseID), append(errs, b.IsError)
		}
	case provider.Gemini:
		var msgs []struct {
			Role  string `json:"role"`
			Parts []struct {
				FunctionResponse struct {
					ID       string         `json:"id"`
					Name     string         `json:"name"`
					Response map[string]any `json:"response"`
				} `json:"functionResponse"`
			} `json:"parts"`
		}
		mustDecode(t, msg, &msgs)
		if len(msgs) != 1 || msgs[0].Role != "user" {
			t.Fatalf("want one user content: %s", msg)
		}
		for _, p := range msgs[0].Parts {
			r := p.FunctionResponse
			if r.Name == "" {
				t.Errorf("a functionResponse without the function's name: %s", msg)
			}
			out, isErr := r.Response["output"], false
			if e, ok := r.Response["error"]; ok {
				out, isErr = e, true
			}
			s, _ := out.(string)
			texts, ids, errs = append(texts, s), append(ids, r.ID), append(errs, isErr)
		}
	}
	return texts, ids, errs
}

func mustDecode(t *testing.T, data []byte, v any) {
	t.Helper()
	if err := json.Unmarshal(data, v); err != nil {
		t.Fatalf("%v: %s", err, data)
	}
}

// TestResultShapes renders an image, structured content, a question and an
// error in each format, and checks each lands where the format documents
// it.
func TestResultShapes(t *testing.T) {
	png := []byte("\x89PNG\r\n\x1a\nfake")
	replies := []provider.Reply{
		{Call: &tool.Call{ID: "c1", Name: "shot"}, Outcome: &tool.Outcome{Result: &tool.Result{Content: []tool.Content{
			{Type: tool.ContentText, Text: "a picture"}, {Type: tool.ContentImage, Data: png, MIMEType: "image/png"}}}}},
		{Call: &tool.Call{ID: "c2", Name: "stats"}, Outcome: &tool.Outcome{Result: &tool.Result{Content: []tool.Content{},
			Structured: json.RawMessage(`{"n":3}`)}}},
		{Call: &tool.Call{ID: "c3", Name: "ask"}, Outcome: &tool.Outcome{Question: &tool.Question{ID: "go", Text: "Proceed?", Kind: tool.QuestionBoolean}}},
		{Call: &tool.Call{ID: "c4", Name: "bad"}, Outcome: &tool.Outcome{Result: &tool.Result{Content: []tool.Content{
			{Type: tool.ContentText, Text: "no such file"}}, IsError: true, ErrorKind: tool.KindToolError}}},
	}
	var defs []tool.Definition
	for _, r := range replies {
		defs = append(defs, tool.Definition{Name: r.Call.Name})
	}
	b64 := "iVBORw0KGgpmYWtl"
	want := map[provider.Format][]string{
		provider.OpenAI: {`"role":"tool","tool_call_id":"c1"`, `"image_url":{"url":"data:image/png;base64,` + b64 + `"}`,
			`{"content":"{\"n\":3}","role":"tool","tool_call_id":"c2"}`, `Proceed?`, `"content":"Error (tool_error): no such file"`},
		provider.OpenAIResponses: {`{"image_url":"data:image/png;base64,` + b64 + `","type":"input_image"}`, `"call_id":"c2","output":"{\"n\":3}"`,
			`Error (needs_input)`, `"output":"Error (tool_error): no such file"`},
		provider.Anthropic: {`"source":{"data":"` + b64 + `","media_type":"image/png","type":"base64"}`, `"tool_use_id":"c2"`,
			`"is_error":true,"tool_use_id":"c3"`, `"is_error":true,"tool_use_id":"c4"`},
		provider.Gemini: {`"parts":[{"inlineData":{"data":"` + b64 + `","mimeType":"image/png"}}]`, `"response":{"output":{"n":3}}`,
			`"response":{"error":"Error (needs_input)`, `"name":"bad","response":{"error":"Error (tool_error): no such file"}`},
		provider.MCP: {`{"type":"image","data":"` + b64 + `","mimeType":"image/png"}`, `"structuredContent":{"n":3}`,
			`"isError":true`},
	}
	for f, wants := range want {
		ts, err := provider.Convert(f, defs, nil)
		if err != nil {
			t.Fatal(err)
		}
		out, err := ts.Results(replies)
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range wants {
			if !strings.Contains(string(out), w) {
				t.Errorf("%s: no %s in\n%s", f, w, out)
			}
		}
	}
}

// TestEmptyResult: a result with no content still answers its call in
// every format, and Anthropic's carries no content rather than an empty
// list or an empty text block, which the API refuses.
func TestEmptyResult(t *testing.T) {
	replies := []provider.Reply{{Call: &tool.Call{ID: "c1", Name: "touch"}, Outcome: &tool.Outcome{Result: &tool.Result{Content: []tool.Content{}}}}}
	for _, f := range provider.Formats() {
		ts, err := provider.Convert(f, []tool.Definition{{Name: "touch"}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		out, err := ts.Results(replies)
		if err != nil {
			t.Fatal(err)
		}
		if f != provider.MCP && !strings.Contains(string(out), `"c1"`) {
			t.Errorf("%s: the result does not answer its call: %s", f, out)
		}
		if f == provider.Anthropic && (strings.Contains(string(out), `"text":""`) || strings.Contains(string(out), `"content":[]`)) {
			t.Errorf("anthropic: empty content: %s", out)
		}
	}
}
