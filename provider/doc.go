// Package provider speaks the tool formats of the model providers: OpenAI's
// Chat Completions and Responses APIs, Anthropic's Messages API and Google's
// Gemini API, and MCP's own.
//
// [Convert] turns lathe's definitions into the tools of a request, with
// each schema rewritten to what the format accepts: strict mode for OpenAI
// and Anthropic wherever the schema allows it, Gemini's subset of the
// OpenAPI schema otherwise. What a format cannot say as a keyword goes into
// the description; a schema that cannot be made strict goes out as it is,
// with a [Warning]. Nothing is lost for safety's sake: the engine validates
// every call against the tool's own schema.
//
// [ParseCalls] reads the calls out of a model's whole response (or one
// message, or a list of calls), [Toolset.Resolve] maps them back to lathe's
// names and arguments, and [Toolset.Results] turns their outcomes into the
// messages to append to the conversation.
//
// docs/providers.md says which rules of each provider the conversion keeps.
package provider
