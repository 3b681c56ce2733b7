// Package mcpconv converts between lathe's types (package tool) and the MCP
// go-sdk's, in both directions, for the MCP runtime (lathe as a client) and
// the MCP server face (lathe as a server).
package mcpconv

import (
	"encoding/json"
	"fmt"
	"slices"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/lathe-tools/lathe/tool"
)

// MetaErrorKind is the _meta key under which the server face puts the
// error kind of an error result, and from which the runtime reads it back,
// so that lathe behind lathe keeps its kinds of failure.
const MetaErrorKind = "lathe/errorKind"

// Content converts one MCP content block to a lathe content block. Blocks
// lathe has no type for (tool_use, tool_result) become their JSON as text,
// so that nothing is lost to a model.
func Content(c sdk.Content) tool.Content {
	switch c := c.(type) {
	case *sdk.TextContent:
		return tool.Content{Type: tool.ContentText, Text: c.Text}
	case *sdk.ImageContent:
		return tool.Content{Type: tool.ContentImage, Data: c.Data, MIMEType: c.MIMEType}
	case *sdk.AudioContent:
		return tool.Content{Type: tool.ContentAudio, Data: c.Data, MIMEType: c.MIMEType}
	case *sdk.ResourceLink:
		return tool.Content{Type: tool.ContentResourceLink, URI: c.URI, Name: c.Name, Title: c.Title,
			Description: c.Description, MIMEType: c.MIMEType}
	case *sdk.EmbeddedResource:
		// A block that came without its resource gets an empty one, as
		// SDKContent sends it: lathe behind lathe sees what lathe saw.
		out := tool.Content{Type: tool.ContentResource, Resource: &tool.EmbeddedResource{}}
		if r := c.Resource; r != nil {
			out.Resource = &tool.EmbeddedResource{URI: r.URI, MIMEType: r.MIMEType, Text: r.Text, Blob: r.Blob}
		}
		return out
	case nil:
		return tool.Content{Type: tool.ContentText}
	}
	b, err := json.Marshal(c)
	if err != nil {
		return tool.Content{Type: tool.ContentText, Text: fmt.Sprintf("[content of type %T that cannot be shown]", c)}
	}
	return tool.Content{Type: tool.ContentText, Text: string(b)}
}

// SDKContent converts one lathe content block to MCP's.
func SDKContent(c *tool.Content) sdk.Content {
	switch c.Type {
	case tool.ContentImage:
		return &sdk.ImageContent{Data: c.Data, MIMEType: c.MIMEType}
	case tool.ContentAudio:
		return &sdk.AudioContent{Data: c.Data, MIMEType: c.MIMEType}
	case tool.ContentResourceLink:
		return &sdk.ResourceLink{URI: c.URI, Name: c.Name, Title: c.Title, Description: c.Description, MIMEType: c.MIMEType}
	case tool.ContentResource:
		r := &sdk.ResourceContents{}
		if c.Resource != nil {
			r = &sdk.ResourceContents{URI: c.Resource.URI, MIMEType: c.Resource.MIMEType, Text: c.Resource.Text,
				Blob: c.Resource.Blob}
		}
		return &sdk.EmbeddedResource{Resource: r}
	}
	return &sdk.TextContent{Text: c.Text}
}

// Result converts the result of a tools/call to a lathe result: content
// block by block, structured content as JSON, isError with the error kind
// the server face put in _meta (tool_error when there is none).
func Result(r *sdk.CallToolResult) (*tool.Result, error) {
	out := &tool.Result{Content: make([]tool.Content, 0, len(r.Content)), IsError: r.IsError}
	for _, c := range r.Content {
		out.Content = append(out.Content, Content(c))
	}
	if r.StructuredContent != nil {
		b, err := json.Marshal(r.StructuredContent)
		if err != nil {
			return nil, fmt.Errorf("structured content: %w", err)
		}
		out.Structured = b
	}
	if r.IsError {
		out.ErrorKind = tool.KindToolError
		if k, ok := r.Meta[MetaErrorKind].(string); ok {
			if known := tool.ErrorKind(k); slices.Contains(tool.Kinds(), known) {
				out.ErrorKind = known
			}
		}
	}
	return out, nil
}

// SDKResult converts a lathe result to the result of a tools/call.
func SDKResult(r *tool.Result) *sdk.CallToolResult {
	out := &sdk.CallToolResult{Content: make([]sdk.Content, 0, len(r.Content)), IsError: r.IsError}
	for i := range r.Content {
		out.Content = append(out.Content, SDKContent(&r.Content[i]))
	}
	if len(r.Structured) > 0 {
		out.StructuredContent = json.RawMessage(r.Structured)
	}
	if r.IsError && r.ErrorKind != "" {
		out.Meta = sdk.Meta{MetaErrorKind: string(r.ErrorKind)}
	}
	return out
}

// Annotations converts MCP tool annotations (and the tool's title, which
// MCP keeps beside them) to lathe's.
func Annotations(t *sdk.Tool) tool.Annotations {
	var a tool.Annotations
	if t.Annotations != nil {
		a = tool.Annotations{
			Title:           t.Annotations.Title,
			ReadOnlyHint:    t.Annotations.ReadOnlyHint,
			DestructiveHint: t.Annotations.DestructiveHint,
			IdempotentHint:  t.Annotations.IdempotentHint,
			OpenWorldHint:   t.Annotations.OpenWorldHint,
		}
	}
	if a.Title == "" {
		a.Title = t.Title
	}
	return a
}

// SDKAnnotations converts lathe's annotations to MCP's; nil when they say
// nothing.
func SDKAnnotations(a tool.Annotations) *sdk.ToolAnnotations {
	if a == (tool.Annotations{}) {
		return nil
	}
	return &sdk.ToolAnnotations{
		Title:           a.Title,
		ReadOnlyHint:    a.ReadOnlyHint,
		DestructiveHint: a.DestructiveHint,
		IdempotentHint:  a.IdempotentHint,
		OpenWorldHint:   a.OpenWorldHint,
	}
}

// Elicit converts an elicitation request to lathe's.
func Elicit(p *sdk.ElicitParams) (*tool.ElicitRequest, error) {
	r := &tool.ElicitRequest{Message: p.Message, Mode: p.Mode, URL: p.URL, ElicitationID: p.ElicitationID}
	if p.RequestedSchema != nil {
		b, err := json.Marshal(p.RequestedSchema)
		if err != nil {
			return nil, fmt.Errorf("requested schema: %w", err)
		}
		r.Schema = b
	}
	return r, nil
}

// SDKElicit converts lathe's elicitation request to MCP's.
func SDKElicit(r *tool.ElicitRequest) *sdk.ElicitParams {
	p := &sdk.ElicitParams{Message: r.Message, Mode: r.Mode, URL: r.URL, ElicitationID: r.ElicitationID}
	if len(r.Schema) > 0 {
		p.RequestedSchema = json.RawMessage(r.Schema)
	}
	return p
}

// Sampling converts a sampling request to lathe's, keeping the whole
// request in Params.
func Sampling(p *sdk.CreateMessageParams) (*tool.SamplingRequest, error) {
	raw, err := json.Marshal(p)
	if err != nil {
		return nil, err
	}
	r := &tool.SamplingRequest{SystemPrompt: p.SystemPrompt, MaxTokens: p.MaxTokens, Params: raw}
	for _, m := range p.Messages {
		if m == nil {
			continue
		}
		r.Messages = append(r.Messages, tool.SamplingMessage{Role: string(m.Role), Content: Content(m.Content)})
	}
	return r, nil
}

// SDKSampling converts lathe's sampling request to MCP's, starting from
// Params when it holds the request as it was first sent.
func SDKSampling(r *tool.SamplingRequest) (*sdk.CreateMessageParams, error) {
	p := &sdk.CreateMessageParams{}
	if len(r.Params) > 0 {
		if err := json.Unmarshal(r.Params, p); err != nil {
			return nil, fmt.Errorf("sampling request: %w", err)
		}
		return p, nil
	}
	p.SystemPrompt = r.SystemPrompt
	p.MaxTokens = r.MaxTokens
	for i := range r.Messages {
		m := &r.Messages[i]
		p.Messages = append(p.Messages, &sdk.SamplingMessage{Role: sdk.Role(m.Role), Content: SDKContent(&m.Content)})
	}
	return p, nil
}

// SamplingResult converts a sampling reply to lathe's.
func SamplingResult(r *sdk.CreateMessageResult) *tool.SamplingResult {
	return &tool.SamplingResult{Role: string(r.Role), Content: Content(r.Content), Model: r.Model, StopReason: r.StopReason}
}

// SDKSamplingResult converts lathe's sampling reply to MCP's.
func SDKSamplingResult(r *tool.SamplingResult) *sdk.CreateMessageResult {
	role := r.Role
	if role == "" {
		role = "assistant"
	}
	return &sdk.CreateMessageResult{Role: sdk.Role(role), Content: SDKContent(&r.Content), Model: r.Model,
		StopReason: r.StopReason}
}
