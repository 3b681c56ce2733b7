package provider

import (
	"fmt"
	"strings"
)

// Format names a provider's wire format for tools.
type Format string

// The formats lathe speaks.
const (
	// OpenAI is the Chat Completions API: function tools under "tools",
	// calls in an assistant message's "tool_calls", results as "tool"
	// messages.
	OpenAI Format = "openai"
	// OpenAIResponses is the Responses API: function tools, "function_call"
	// output items, "function_call_output" input items.
	OpenAIResponses Format = "openai-responses"
	// Anthropic is the Messages API: tools with an "input_schema",
	// "tool_use" content blocks, "tool_result" blocks in a user message.
	Anthropic Format = "anthropic"
	// Gemini is the Gemini API: "functionDeclarations" whose parameters
	// are its subset of the OpenAPI schema, "functionCall" and
	// "functionResponse" parts.
	Gemini Format = "gemini"
	// MCP is the Model Context Protocol's shape: tools as tools/list lists
	// them, results as tools/call answers.
	MCP Format = "mcp"
	// Lathe is lathe's own shape of a call, {"id", "name", "arguments"}.
	// It is what [ParseCalls] reports for input in no provider's shape;
	// [Convert] does not take it.
	Lathe Format = "lathe"
)

// Formats returns the formats [Convert] takes, in the order the CLI lists
// them.
func Formats() []Format { return []Format{OpenAI, OpenAIResponses, Anthropic, Gemini, MCP} }

// ParseFormat returns the format named s, or an error that lists the names.
func ParseFormat(s string) (Format, error) {
	for _, f := range Formats() {
		if string(f) == s {
			return f, nil
		}
	}
	names := make([]string, 0, len(Formats()))
	for _, f := range Formats() {
		names = append(names, string(f))
	}
	return "", fmt.Errorf("unknown format %q: want one of %s", s, strings.Join(names, ", "))
}

// strictable reports whether the format has a strict mode that constrains
// the model's arguments to the schema.
func (f Format) strictable() bool { return f == OpenAI || f == OpenAIResponses || f == Anthropic }

// openAI reports whether f is one of OpenAI's two APIs, which share their
// rules for names and schemas.
func (f Format) openAI() bool { return f == OpenAI || f == OpenAIResponses }
