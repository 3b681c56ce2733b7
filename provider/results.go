package provider

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/lathe-tools/lathe/tool"
)

// Reply is one call and its outcome, for [Toolset.Results].
type Reply struct {
	Call    *tool.Call
	Outcome *tool.Outcome
}

// Results returns the messages that carry the outcomes of the calls back
// to the model, in the toolset's format, ready to append to the
// conversation after the model's message:
//
//	openai            one "tool" message a call (then, if results hold images,
//	                  one user message with them: tool messages take only text)
//	openai-responses  one "function_call_output" item a call
//	anthropic         one user message with a "tool_result" block a call
//	gemini            one user content with a "functionResponse" part a call
//	mcp               one tools/call result a call
//
// An error result carries the format's error flag where it has one
// (Anthropic's is_error, MCP's isError, Gemini's "error" key), and says
// "Error (kind):" in its text where it has none (OpenAI). A call that asked
// a question, or that did not run, says so as an error result.
func (ts *Toolset) Results(replies []Reply) (json.RawMessage, error) {
	var msgs []any
	var anthropic, gemini []any
	var images []any // OpenAI chat: the images of every result
	for _, r := range replies {
		if r.Call == nil || r.Outcome == nil {
			return nil, fmt.Errorf("a reply without its call or outcome")
		}
		res := resultOf(r.Outcome)
		wire := ts.WireName(r.Call.Name)
		switch ts.format {
		case OpenAI:
			text := textOf(res, true)
			if imgs := imageParts(res, func(mime, data string) any {
				return map[string]any{"type": "image_url", "image_url": map[string]any{"url": "data:" + mime + ";base64," + data}}
			}); len(imgs) > 0 {
				text += fmt.Sprintf("\n[%d image(s) follow in the next message]", len(imgs))
				images = append(images, map[string]any{"type": "text", "text": "Images returned by tool call " + r.Call.ID + ":"})
				images = append(images, imgs...)
			}
			msgs = append(msgs, map[string]any{"role": "tool", "tool_call_id": r.Call.ID, "content": text})
		case OpenAIResponses:
			var output any = textOf(res, true)
			if imgs := imageParts(res, func(mime, data string) any {
				return map[string]any{"type": "input_image", "image_url": "data:" + mime + ";base64," + data}
			}); len(imgs) > 0 {
				output = append([]any{map[string]any{"type": "input_text", "text": textOf(res, true)}}, imgs...)
			}
			msgs = append(msgs, map[string]any{"type": "function_call_output", "call_id": r.Call.ID, "output": output})
		case Anthropic:
			content := []any{}
			if t := textOf(res, false); t != "" {
				content = append(content, map[string]any{"type": "text", "text": t})
			}
			content = append(content, imageParts(res, func(mime, data string) any {
				return map[string]any{"type": "image", "source": map[string]any{"type": "base64", "media_type": mime, "data": data}}
			})...)
			block := map[string]any{"type": "tool_result", "tool_use_id": r.Call.ID}
			if len(content) > 0 {
				// An empty result has no content blocks: Anthropic
				// refuses an empty text block.
				block["content"] = content
			}
			if res.IsError {
				block["is_error"] = true
			}
			anthropic = append(anthropic, block)
		case Gemini:
			resp := map[string]any{}
			switch {
			case res.IsError:
				resp["error"] = textOf(res, true)
			case len(res.Structured) > 0 && len(res.Content) == 0:
				resp["output"] = json.RawMessage(res.Structured)
			default:
				resp["output"] = textOf(res, false)
			}
			fr := map[string]any{"name": wire, "response": resp}
			if r.Call.ID != "" {
				fr["id"] = r.Call.ID
			}
			if parts := imageParts(res, func(mime, data string) any {
				return map[string]any{"inlineData": map[string]any{"mimeType": mime, "data": data}}
			}); len(parts) > 0 {
				fr["parts"] = parts
			}
			gemini = append(gemini, map[string]any{"functionResponse": fr})
		case MCP:
			msgs = append(msgs, mcpResult(res))
		default:
			return nil, fmt.Errorf("format %q has no result messages", ts.format)
		}
	}
	switch {
	case len(images) > 0:
		msgs = append(msgs, map[string]any{"role": "user", "content": images})
	case len(anthropic) > 0:
		// Every result of one turn goes in the one user message that
		// follows the model's.
		msgs = append(msgs, map[string]any{"role": "user", "content": anthropic})
	case len(gemini) > 0:
		msgs = append(msgs, map[string]any{"role": "user", "parts": gemini})
	}
	if msgs == nil {
		msgs = []any{}
	}
	return json.Marshal(msgs)
}

// resultOf returns the result an outcome shows the model: its result, or
// for a call that did not finish, an error result that says why.
func resultOf(o *tool.Outcome) *tool.Result {
	switch {
	case o.Result != nil:
		return o.Result
	case o.Question != nil:
		q := o.Question
		text := fmt.Sprintf("The call did not finish: the tool asks (%s) %s", q.ID, q.Text)
		if len(q.Options) > 0 {
			text += " [options: " + strings.Join(q.Options, ", ") + "]"
		}
		return &tool.Result{Content: []tool.Content{{Type: tool.ContentText, Text: text}}, IsError: true, ErrorKind: "needs_input"}
	}
	return &tool.Result{Content: []tool.Content{{Type: tool.ContentText,
		Text: "The call did not run: it waits for the answers to other calls' questions."}}, IsError: true, ErrorKind: "not_run"}
}

// textOf returns a result's text as one string: its text blocks, a line
// for each block the format cannot carry as text, and the structured
// content when there is nothing else. An error result says its kind first
// when kind is set.
func textOf(r *tool.Result, kind bool) string {
	var parts []string
	for _, c := range r.Content {
		switch c.Type {
		case tool.ContentText:
			parts = append(parts, c.Text)
		case tool.ContentImage:
			// Carried as an image where the format can.
		case tool.ContentResourceLink:
			parts = append(parts, fmt.Sprintf("[resource %s: %s]", c.Name, c.URI))
		case tool.ContentResource:
			if c.Resource != nil && c.Resource.Text != "" {
				parts = append(parts, c.Resource.Text)
			} else if c.Resource != nil {
				parts = append(parts, fmt.Sprintf("[resource %s: %s, %d bytes]", c.Resource.URI, c.Resource.MIMEType, len(c.Resource.Blob)))
			}
		default:
			parts = append(parts, fmt.Sprintf("[%s: %s, %d bytes]", c.Type, c.MIMEType, len(c.Data)))
		}
	}
	if len(parts) == 0 && len(r.Structured) > 0 {
		parts = append(parts, string(r.Structured))
	}
	text := strings.Join(parts, "\n")
	if r.IsError && kind {
		k := string(r.ErrorKind)
		if k == "" {
			k = string(tool.KindToolError)
		}
		text = "Error (" + k + "): " + text
	}
	return text
}

// imageParts returns a result's images in a format's shape.
func imageParts(r *tool.Result, shape func(mime, data string) any) []any {
	var out []any
	for _, c := range r.Content {
		if c.Type == tool.ContentImage && len(c.Data) > 0 && strings.HasPrefix(c.MIMEType, "image/") {
			out = append(out, shape(c.MIMEType, base64.StdEncoding.EncodeToString(c.Data)))
		}
	}
	return out
}

// mcpContent is a content block as MCP writes it.
type mcpContent struct {
	Type        string       `json:"type"`
	Text        *string      `json:"text,omitempty"`
	Data        []byte       `json:"data,omitempty"`
	MIMEType    string       `json:"mimeType,omitempty"`
	URI         string       `json:"uri,omitempty"`
	Name        string       `json:"name,omitempty"`
	Title       string       `json:"title,omitempty"`
	Description string       `json:"description,omitempty"`
	Resource    *mcpResource `json:"resource,omitempty"`
}

type mcpResource struct {
	URI      string `json:"uri"`
	MIMEType string `json:"mimeType,omitempty"`
	Text     string `json:"text,omitempty"`
	Blob     []byte `json:"blob,omitempty"`
}

// mcpResult is a result as a tools/call answer.
func mcpResult(r *tool.Result) any {
	content := make([]mcpContent, 0, len(r.Content))
	for _, c := range r.Content {
		mc := mcpContent{Type: string(c.Type), Data: c.Data, MIMEType: c.MIMEType, URI: c.URI,
			Name: c.Name, Title: c.Title, Description: c.Description}
		if c.Resource != nil {
			mc.Resource = &mcpResource{URI: c.Resource.URI, MIMEType: c.Resource.MIMEType, Text: c.Resource.Text, Blob: c.Resource.Blob}
		}
		if c.Type == tool.ContentText || c.Text != "" {
			// A text block always has its text, even an empty one.
			text := c.Text
			mc.Text = &text
		}
		content = append(content, mc)
	}
	out := struct {
		Content           []mcpContent    `json:"content"`
		StructuredContent json.RawMessage `json:"structuredContent,omitempty"`
		IsError           bool            `json:"isError,omitempty"`
	}{content, json.RawMessage(r.Structured), r.IsError}
	return out
}
