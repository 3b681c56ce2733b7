package tool

import (
	"context"
	"encoding/json"
)

// A running call can reach back to whoever made it: to report progress, to
// pass on a log message, to ask a person for input (elicitation) or to ask
// the caller's model for a completion (sampling). A face puts the functions
// that do so into the call's context with [WithHooks]; a runtime finds them
// with [HooksFrom] and reports with [ReportProgress]. The engine carries the
// context through its pipeline untouched, so a builtin tool, an upstream MCP
// server and any face meet in the same place without knowing each other.

// Progress is one progress report of a running call, with MCP's meaning:
// Progress rises with every report; Total, when known, is its final value.
type Progress struct {
	Progress float64 `json:"progress"`
	Total    float64 `json:"total,omitempty"`
	Message  string  `json:"message,omitempty"`
}

// LogMessage is a log message a tool's machinery sent while a call ran,
// with MCP's levels ("debug", "info", "notice", "warning", "error" …).
type LogMessage struct {
	Level  string          `json:"level"`
	Logger string          `json:"logger,omitempty"`
	Data   json.RawMessage `json:"data"`
}

// ElicitRequest asks a person for input in the middle of a call, as MCP's
// elicitation/create does: Message says what is wanted and Schema, a flat
// JSON Schema object of primitive properties, the shape of the answer. In
// URL mode (Mode "url") the person is sent to URL instead.
type ElicitRequest struct {
	Message       string          `json:"message"`
	Schema        json.RawMessage `json:"requestedSchema,omitempty"`
	Mode          string          `json:"mode,omitempty"`
	URL           string          `json:"url,omitempty"`
	ElicitationID string          `json:"elicitationId,omitempty"`
}

// Elicitation actions, as in MCP.
const (
	ElicitAccept  = "accept"
	ElicitDecline = "decline"
	ElicitCancel  = "cancel"
)

// ElicitResult is the person's answer: Action is [ElicitAccept] (Content
// holds the answer), [ElicitDecline] or [ElicitCancel].
type ElicitResult struct {
	Action  string         `json:"action"`
	Content map[string]any `json:"content,omitempty"`
}

// SamplingMessage is one message of a sampling conversation.
type SamplingMessage struct {
	Role    string  `json:"role"`
	Content Content `json:"content"`
}

// SamplingRequest asks the caller's model for a completion, as MCP's
// sampling/createMessage does. Params holds the request as the tool's
// machinery sent it, so that a face forwarding it loses nothing the fields
// above do not model.
type SamplingRequest struct {
	Messages     []SamplingMessage `json:"messages"`
	SystemPrompt string            `json:"systemPrompt,omitempty"`
	MaxTokens    int64             `json:"maxTokens,omitempty"`
	Params       json.RawMessage   `json:"-"`
}

// SamplingResult is the model's reply.
type SamplingResult struct {
	Role       string  `json:"role"`
	Content    Content `json:"content"`
	Model      string  `json:"model"`
	StopReason string  `json:"stopReason,omitempty"`
}

// Hooks are the ways a running call reaches back to its caller. Any of them
// may be nil: a caller that offers no way to ask a person leaves Elicit nil,
// and a tool that needs one then fails with a message that says so.
type Hooks struct {
	Progress func(Progress)
	Log      func(LogMessage)
	Elicit   func(context.Context, *ElicitRequest) (*ElicitResult, error)
	Sample   func(context.Context, *SamplingRequest) (*SamplingResult, error)
	// LogLevel, when set, is the least severe level of the log messages
	// Log takes for this call (one of MCP's levels, "debug" to
	// "emergency"). A runtime whose machinery can be asked for messages
	// per call, such as an MCP server of 2026-07-28, asks for this level;
	// empty leaves the level to the runtime's configuration. Log may still
	// be handed messages below it, from machinery that cannot be asked per
	// call, and drops them itself if it must.
	LogLevel string
}

type hooksKey struct{}

// WithHooks returns a context whose calls report to h. Hooks already in ctx
// that h leaves nil stay in force, so a face can add progress reporting
// without taking away an elicitor set further out. LogLevel goes with Log:
// it stays in force with the Log it belongs to, and a new Log brings its own.
func WithHooks(ctx context.Context, h Hooks) context.Context {
	if old, ok := ctx.Value(hooksKey{}).(*Hooks); ok {
		if h.Progress == nil {
			h.Progress = old.Progress
		}
		if h.Log == nil {
			h.Log, h.LogLevel = old.Log, old.LogLevel
		}
		if h.Elicit == nil {
			h.Elicit = old.Elicit
		}
		if h.Sample == nil {
			h.Sample = old.Sample
		}
	}
	return context.WithValue(ctx, hooksKey{}, &h)
}

// HooksFrom returns the hooks of ctx; the zero Hooks when there are none.
func HooksFrom(ctx context.Context) Hooks {
	if h, ok := ctx.Value(hooksKey{}).(*Hooks); ok {
		return *h
	}
	return Hooks{}
}

// ReportProgress reports p to the progress hook of ctx, if there is one.
func ReportProgress(ctx context.Context, p Progress) {
	if h, ok := ctx.Value(hooksKey{}).(*Hooks); ok && h.Progress != nil {
		h.Progress(p)
	}
}
